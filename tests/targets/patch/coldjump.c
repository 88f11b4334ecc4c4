/* A function whose rare path lies apart, as GCC -O2 puts it in name.cold, and jumps back into
 * the function's first bytes, which a patched entry overwrites: rt_park (a function the test
 * copy's shim declares) counts its calls; a negative worker goes through rt_park_cold, which
 * makes it positive and jumps back to rt_park+1. Written in assembly so that the jump lands
 * there whatever the compiler. The tracer must leave rt_park alone (and say so), or the cold
 * path runs into the middle of the entry's jump. Usage: coldjump. Prints the calls counted. */
#include <stdio.h>

void rt_park(int worker);
long parked;

__asm__(".text\n"
        ".globl rt_park\n"
        ".type rt_park, @function\n"
        "rt_park:\n"
        "    push %rbx\n" /* +0, 1 byte */
        ".Lagain:\n"
        "    mov %edi, %ebx\n"  /* +1, 2 bytes */
        "    test %ebx, %ebx\n" /* +3, 2 bytes */
        "    js rt_park_cold\n" /* 0f 88 rel32 */
        "    addq $1, parked(%rip)\n"
        "    pop %rbx\n"
        "    ret\n"
        ".size rt_park, .-rt_park\n"
        ".section .text.unlikely,\"ax\",@progbits\n"
        ".type rt_park_cold, @function\n"
        "rt_park_cold:\n"
        "    neg %edi\n"
        "    jmp .Lagain\n" /* e9 rel32, to rt_park+1 */
        ".size rt_park_cold, .-rt_park_cold\n"
        ".text\n");

int main(void)
{
    for (int i = 0; i < 10; i++) {
        rt_park(i + 1);
        rt_park(-(i + 1));
    }
    printf("parked %ld\n", parked);
    return parked == 20 ? 0 : 1;
}
