/* dlopen, wrapped so that the objects it loads are patched before it returns (patch.c), and
 * dlclose, so that what it unloads is forgotten there. Other
 * threads run meanwhile, code patched earlier too: patch_x86.c never takes execute permission
 * from it, and stores each new jump in one aligned store where it can.
 *
 * glibc resolves a name as its caller would: a bare name ("libfoo.so") is matched against the
 * loaded objects' sonames, then searched in the caller's DT_RPATH (and its loaders'), in
 * LD_LIBRARY_PATH, the caller's DT_RUNPATH, the cache and the default directories; $ORIGIN in
 * a name with a slash is the caller's directory. It takes the caller from dlopen's return
 * address, which behind this wrapper is this library. So the wrapper finds the file the way
 * the caller would have, from the caller's link map (dladdr1) and search list (dlinfo), and
 * gives glibc its full path; what only depends on the process (the cache, the default
 * directories) and every failure are left to the real dlopen with the name as given, so that
 * dlerror says what it says untraced. docs/PATCHING.md lists what differs. */
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "patch.h"
#include "util.h"

static void *(*real_dlopen)(const char *, int);
static int (*real_dlclose)(void *);

/* The link map of the object holding addr, NULL when none does (generated code). */
static struct link_map *object_at(const void *addr)
{
    Dl_info info;
    struct link_map *map = NULL;
    return dladdr1(addr, &info, (void **)&map, RTLD_DL_LINKMAP) ? map : NULL;
}

/* The directories glibc searches for a bare name dlopen'd from `map`, in order, without the
 * cache (malloc'd; NULL on failure). */
static Dl_serinfo *search_list(struct link_map *map)
{
    Dl_serinfo size;
    if (!map || dlinfo(map, RTLD_DI_SERINFOSIZE, &size) != 0)
        return NULL;
    Dl_serinfo *list = malloc(size.dls_size);
    if (list)
        *list = size; /* dlinfo checks the buffer's size and count against its own */
    if (list && dlinfo(map, RTLD_DI_SERINFO, list) != 0) {
        free(list);
        return NULL;
    }
    return list;
}

/* How many of the caller's directories come before the tail its list shares with ours
 * (LD_LIBRARY_PATH when neither has a DT_RUNPATH, the default directories): the real dlopen,
 * given the bare name, searches that tail as the caller would, the cache in its place. */
static unsigned callers_own(const Dl_serinfo *caller, const Dl_serinfo *ours)
{
    unsigned n = caller->dls_cnt, m = ours->dls_cnt;
    while (n > 0 && m > 0 &&
           strcmp(caller->dls_serpath[n - 1].dls_name, ours->dls_serpath[m - 1].dls_name) == 0)
        n--, m--;
    return n;
}

/* Opens DIR/name in the first of the list's first n directories that holds it; sets *found. */
static void *open_in(const Dl_serinfo *list, unsigned n, const char *name, int mode, int *found)
{
    char path[PATH_MAX];
    for (unsigned i = 0; i < n; i++) {
        int len = snprintf(path, sizeof path, "%s/%s", list->dls_serpath[i].dls_name, name);
        if (len > 0 && (size_t)len < sizeof path && access(path, R_OK) == 0) {
            *found = 1;
            return real_dlopen(path, mode);
        }
    }
    return NULL;
}

/* A bare name, as the object `caller` would open it. */
static void *open_searched(struct link_map *caller, const char *name, int mode)
{
    void *loaded = real_dlopen(name, mode | RTLD_NOLOAD); /* matched by soname, as glibc does */
    if (loaded)
        return loaded;
    Dl_serinfo *theirs = search_list(caller), *ours = search_list(object_at(open_searched));
    int found = 0;
    void *handle =
        theirs && ours ? open_in(theirs, callers_own(theirs, ours), name, mode, &found) : NULL;
    free(theirs);
    free(ours);
    return found ? handle : real_dlopen(name, mode);
}

/* The length of the $ORIGIN or ${ORIGIN} at s, 0 when there is none: as glibc reads it, an
 * unbraced name ends at the first character that cannot be part of one. */
static size_t origin_token(const char *s)
{
    if (strncmp(s, "${ORIGIN}", 9) == 0)
        return 9;
    if (strncmp(s, "$ORIGIN", 7) == 0 && !(isalnum((unsigned char)s[7]) || s[7] == '_'))
        return 7;
    return 0;
}

/* name with each $ORIGIN replaced by the caller's directory, into out (PATH_MAX); 0 when it
 * has none or the result does not fit. */
static int expand_origin(struct link_map *caller, const char *name, char *out)
{
    char origin[PATH_MAX];
    size_t len = 0, olen, n;
    if (!strchr(name, '$') || dlinfo(caller, RTLD_DI_ORIGIN, origin) != 0)
        return 0;
    olen = strlen(origin);
    int expanded = 0;
    for (; *name && len + olen < PATH_MAX; name += n ? n : 1) {
        n = origin_token(name);
        memcpy(out + len, n ? origin : name, n ? olen : 1);
        len += n ? olen : 1;
        expanded |= n != 0;
    }
    out[len] = 0;
    return expanded && *name == 0;
}

/* dlopen(file, mode) as the object `caller` would have it. */
static void *open_as(struct link_map *caller, const char *file, int mode)
{
    char path[PATH_MAX];
    if (!caller || !file)
        return real_dlopen(file, mode);
    if (!strchr(file, '/'))
        return open_searched(caller, file, mode);
    if (expand_origin(caller, file, path) && access(path, R_OK) == 0)
        return real_dlopen(path, mode);
    return real_dlopen(file, mode);
}

AT_EXPORT void *dlopen(const char *file, int mode)
{
    AT_RESOLVE(real_dlopen, "dlopen");
    if (!real_dlopen)
        return NULL;
    void *handle =
        open_as(object_at(__builtin_extract_return_addr(__builtin_return_address(0))), file, mode);
    if (handle)
        at__patch_new_objects();
    return handle;
}

/* dlclose, wrapped so that what it unloads is forgotten by the patching (patch.c). */
AT_EXPORT int dlclose(void *handle)
{
    AT_RESOLVE(real_dlclose, "dlclose");
    int result = real_dlclose ? real_dlclose(handle) : -1;
    if (result == 0)
        at__patch_forget_unloaded();
    return result;
}
