/* Ring files that outlive their process: `tracedecode --recover` writes what a ring holds into
 * its trace and removes the ring; `tracedecode --rings` lists the rings of a directory, and with
 * --remove takes care of those whose process is gone (recovering each into its trace first).
 *
 * Recovering into the trace appends, after the last whole frame (a cut tail is cut off first):
 * the recovered blocks as EVENTS frames (raw columns), then one META frame with the ring's
 * losses and clock samples and a RECOVERED record, which tells later readers that the ring's
 * events are in the file. The file is synced before the ring is removed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "at_codec.h"
#include "decode.h"
#include "rings.h"

static int write_frame(int fd, struct at_frame_header *h, const uint8_t *payload, size_t len)
{
    h->magic = AT_FRAME_MAGIC;
    h->encoding = AT_ENC_RAW;
    h->header_size = AT_FRAME_HEADER_SIZE;
    h->payload_size = h->raw_size = (uint32_t)len;
    h->payload_crc = at_crc32c(0, payload, len);
    h->header_crc = at_crc32c(0, h, offsetof(struct at_frame_header, header_crc));
    int err = at__write_all(fd, h, sizeof *h);
    return err < 0 ? err : at__write_all(fd, payload, len);
}

/* One META record: type, varint body length, varint fields. */
static size_t put_record(uint8_t *out, unsigned type, const uint64_t *fields, unsigned n)
{
    uint8_t body[8 * AT_VARINT_MAX];
    size_t len = 0;
    for (unsigned i = 0; i < n; i++)
        len += at_varint_put(body + len, fields[i]);
    out[0] = (uint8_t)type;
    size_t head = 1 + at_varint_put(out + 1, len);
    memcpy(out + head, body, len);
    return head + len;
}

/* The ring's losses and clock samples, and the RECOVERED record. */
static int write_meta(int fd, const struct trace *t)
{
    uint8_t records[8 * (1 + AT_VARINT_MAX + 8 * AT_VARINT_MAX)];
    size_t len = 0;
    uint32_t count = 0;
    for (size_t i = 0; i < t->nring_lost; i++, count++) {
        const struct lost *l = &t->ring_lost[i];
        uint64_t f[] = {l->tid, l->reason, l->count, l->first_tsc, l->last_tsc};
        len += put_record(records + len, AT_META_LOST, f, 5);
    }
    for (size_t i = 0; i < t->nring_clock; i++, count++) {
        const struct clock_sample *c = &t->ring_clock[i];
        uint64_t f[] = {c->tsc, c->mono_ns, c->real_ns};
        len += put_record(records + len, AT_META_CLOCK, f, 3);
    }
    /* the ring path, as a string after the count */
    size_t path_len = strlen(t->process.ring_path);
    uint8_t head[2 * AT_VARINT_MAX];
    size_t body = at_varint_put(head, t->recovered_events);
    body += at_varint_put(head + body, path_len);
    uint8_t *all = malloc(len + 1 + AT_VARINT_MAX + body + path_len);
    if (!all)
        return -ENOMEM;
    memcpy(all, records, len);
    all[len++] = AT_META_RECOVERED;
    len += at_varint_put(all + len, body + path_len);
    memcpy(all + len, head, body);
    memcpy(all + len + body, t->process.ring_path, path_len);
    len += body + path_len;
    struct at_frame_header h = {.type = AT_FRAME_META, .count = count + 1};
    int err = write_frame(fd, &h, all, len);
    free(all);
    return err;
}

static int write_recovered(int fd, const struct trace *t)
{
    for (size_t i = 0; i < t->nthreads; i++) {
        const struct thread *th = &t->threads[i];
        for (size_t j = 0; j < th->nframes; j++) {
            const struct frame_ref *f = &th->frames[j];
            if (!f->recovered)
                continue;
            struct at_frame_header h = {.type = AT_FRAME_EVENTS,
                                        .tid = th->tid,
                                        .seq = f->seq,
                                        .count = f->count,
                                        .first_tsc = f->first_tsc,
                                        .last_tsc = f->last_tsc};
            int err = write_frame(fd, &h, t->recovered + f->offset, f->payload_size);
            if (err < 0)
                return err;
        }
    }
    return write_meta(fd, t);
}

/* Appends what recovery found to the trace file, then removes the ring. */
static int recover_into(const struct trace *t)
{
    int fd = open(t->path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int err = 0;
    if (ftruncate(fd, (off_t)t->whole_end) < 0 || lseek(fd, 0, SEEK_END) < 0)
        err = -errno;
    if (err == 0)
        err = write_recovered(fd, t);
    if (err == 0 && fsync(fd) < 0)
        err = -errno;
    if (close(fd) < 0 && err == 0)
        err = -errno;
    if (err == 0 && unlink(t->process.ring_path) < 0 && errno != ENOENT)
        err = -errno;
    return err;
}

int at__recover_files(const char *const *paths, size_t n, bool force)
{
    struct decode d;
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        if (at__decode_open(&d, &paths[i], 1, stderr) < 0) {
            status = 2;
            continue;
        }
        struct trace *t = &d.traces[0];
        int err = at__trace_recover(t, force);
        if (err == 0 && t->ring_read)
            err = recover_into(t);
        if (err < 0) {
            fprintf(stderr, "tracedecode: %s: %s\n", paths[i], strerror(-err));
            status = 2;
        } else if (t->ring_read) {
            fprintf(stderr,
                    "tracedecode: %s: wrote %llu recovered events into the trace; "
                    "removed %s\n",
                    paths[i], (unsigned long long)t->recovered_events, t->process.ring_path);
        }
        at__decode_close(&d);
    }
    return status;
}

/* The header of the ring file at path; -EBADMSG when it is not one of this version's. */
static int read_header(const char *path, struct at_ring_header *h, off_t *size)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    int err = fstat(fd, &st) < 0 ? -errno : 0;
    if (err == 0 && !S_ISREG(st.st_mode))
        err = -EBADMSG;
    if (err == 0 && pread(fd, h, sizeof *h, 0) != (ssize_t)sizeof *h)
        err = -EBADMSG;
    close(fd);
    if (err == 0 && memcmp(h->magic, AT_RING_MAGIC, sizeof h->magic) != 0)
        err = -EBADMSG;
    h->trace_path[sizeof h->trace_path - 1] = '\0';
    *size = st.st_size;
    return err;
}

/* A ring whose process is gone: its events go into its trace when it has one that did not end
 * cleanly, then the ring is removed. */
static int remove_orphan(const char *path, const struct at_ring_header *h)
{
    const char *trace = h->trace_path;
    struct stat st;
    if (trace[0] && stat(trace, &st) == 0 && at__recover_files(&trace, 1, false) != 0)
        return -EIO; /* said on stderr; the ring stays */
    if (unlink(path) < 0 && errno != ENOENT)
        return -errno;
    printf("removed %s\n", path);
    return 0;
}

static int list_one(const char *path, bool remove)
{
    struct at_ring_header h;
    off_t size = 0;
    int err = read_header(path, &h, &size);
    if (err < 0) {
        printf("%s\t%s\n", path,
               err == -EBADMSG ? "not a ring file of this version" : strerror(-err));
        return 0;
    }
    bool running = at__process_running(h.pid, h.start_ticks);
    printf("%s\tpid %u\t%s\t%lld bytes\ttrace %s\n", path, h.pid, running ? "running" : "gone",
           (long long)size, h.trace_path[0] ? h.trace_path : "(none)");
    return remove && !running ? remove_orphan(path, &h) : 0;
}

int at__rings_list(const char *dir, bool remove)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "tracedecode: %s: %s\n", dir, strerror(errno));
        return 2;
    }
    int status = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "actortrace-", 11) != 0 || len < 16 ||
            strcmp(e->d_name + len - 5, ".ring") != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (list_one(path, remove) < 0)
            status = 2;
    }
    closedir(d);
    return status;
}
