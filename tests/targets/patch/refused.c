/* A program with its own rt_send and rt_exit, for tests/e2e/patch.sh: rt_send is long enough to
 * patch, so its calls are traced; rt_exit is one byte (a bare ret), shorter than the jump, so
 * the tracer must refuse it, say so, and leave it working. Prints the sum rt_send saw, and how
 * many of its mappings are writable and executable at once (patching must leave none). */
#include <stdio.h>

#include "refrt.h"

struct rt_actor {
    uint64_t id;
};

__asm__(".text\n"
        ".globl rt_exit\n"
        ".type rt_exit, @function\n"
        "rt_exit:\n"
        "    ret\n"
        ".size rt_exit, 1\n");

static volatile uint64_t seen;

static int writable_and_executable(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512], perms[5];
    int count = 0;
    while (maps && fgets(line, sizeof line, maps))
        if (sscanf(line, "%*s %4s", perms) == 1 && perms[1] == 'w' && perms[2] == 'x')
            count++;
    if (maps)
        fclose(maps);
    return count;
}

__attribute__((noipa)) void rt_send(rt_actor *to, rt_msg *msg)
{
    seen += to->id * 1000 + msg->id;
}

int main(void)
{
    rt_actor actor = {7};
    for (uint64_t i = 1; i <= 3; i++) {
        rt_msg msg = {.id = i, .type = 1};
        rt_send(&actor, &msg);
    }
    rt_exit(&actor);
    printf("%llu %d\n", (unsigned long long)seen, writable_and_executable());
    return 0;
}
