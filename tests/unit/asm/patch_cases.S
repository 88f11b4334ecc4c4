/* Small functions whose first bytes test entry patching (tests/unit/test_patch.c). Each is
 * followed by a label at its end, which gives the test its size. They sit on pages of their own,
 * so that making their pages writable never touches the code doing it. */
        .intel_syntax noprefix
        .section .text.patch_cases, "ax", @progbits
        .p2align 12

/* int case_riprel(int x): x + value, loaded RIP-relative by the first instruction. */
        .globl case_riprel, case_riprel_end
case_riprel:
        mov eax, DWORD PTR [rip + value]
        add eax, edi
        ret
case_riprel_end:

/* int case_short(int x): x, in 3 bytes, shorter than a jump. */
        .globl case_short, case_short_end
case_short:
        mov eax, edi
        ret
case_short_end:

/* int case_loop(int x): 3 * x (x > 0) by a loop whose branch goes back to +4, inside the bytes
 * the jump would replace. */
        .globl case_loop, case_loop_end
case_loop:
        mov ecx, edi
        xor eax, eax
1:      add eax, 3
        dec ecx
        jnz 1b
        ret
case_loop_end:

/* int case_jump(int x): a tail jump to triple (x * 3) as its only instruction, rel32. */
        .globl case_jump, case_jump_end
case_jump:
        .byte 0xe9
        .long triple - . - 4
case_jump_end:

/* The same jump in its 2-byte form: shorter than the patch's jump. */
        .globl case_jump_short, case_jump_short_end
case_jump_short:
        jmp triple
case_jump_short_end:

/* int case_call(int x): triple(x) + 1, calling first. */
        .globl case_call, case_call_end
case_call:
        call triple
        add eax, 1
        ret
case_call_end:

/* int case_short_branch(int x): x ? x + 7 : -1, a 2-byte jz among the first 5 bytes. */
        .globl case_short_branch, case_short_branch_end
case_short_branch:
        test edi, edi
        jz 2f
        lea eax, [rdi + 7]
        ret
2:      mov eax, -1
        ret
case_short_branch_end:

/* int case_jrcxz(int x): x, or 0 when rcx is 0: jrcxz has only a rel8 form, so it cannot be
 * re-encoded at a trampoline out of its reach. */
        .globl case_jrcxz, case_jrcxz_end
case_jrcxz:
        xor eax, eax
        jrcxz 3f
        mov eax, edi
3:      ret
case_jrcxz_end:

/* int case_table(int x): 10 + x for x = 0, 1, 2, else -1, through a jump table as compilers
 * build it (PIC: offsets from the table), whose entries are all past the first bytes. */
        .globl case_table, case_table_end
case_table:
        cmp edi, 2
        ja .Ltable_default
        mov eax, edi
        lea rdx, [rip + table_ok]
        movsxd rax, DWORD PTR [rdx + rax * 4]
        add rax, rdx
        jmp rax
.Ltable_0:
        mov eax, 10
        ret
.Ltable_1:
        mov eax, 11
        ret
.Ltable_2:
        mov eax, 12
        ret
.Ltable_default:
        mov eax, -1
        ret
case_table_end:

/* int case_table_into(int x): the same pattern, but the table's third entry goes to +2, inside
 * the bytes the jump would replace (no direct branch does): 1, 1, 2 for x = 0, 1, 2. */
        .globl case_table_into, case_table_into_end
case_table_into:
        xor eax, eax
.Linto_again:
        add eax, 1
        cmp edi, 2
        ja .Linto_end
        mov ecx, edi
        mov edi, 3 /* the second pass ends at the ja */
        lea rdx, [rip + table_into]
        movsxd rcx, DWORD PTR [rdx + rcx * 4]
        add rcx, rdx
        jmp rcx
.Linto_end:
        ret
case_table_into_end:

triple:
        lea eax, [rdi + rdi * 2]
        ret

/* Direct entries (patch_x86.c): a function that makes a call no compiler sees into leaves its
 * callers nothing in a call-clobbered register. Each returns triple(x). */

/* A call through a register. */
        .globl case_calls_pointer, case_calls_pointer_end
case_calls_pointer:
        sub rsp, 8
        lea rax, [rip + triple]
        call rax
        add rsp, 8
        ret
case_calls_pointer_end:

/* A call to a function of the file whose first call is through a register: one call deep. */
        .globl case_calls_deep, case_calls_deep_end
case_calls_deep:
        sub rsp, 8
        call through_pointer
        add rsp, 8
        ret
case_calls_deep_end:

through_pointer:
        sub rsp, 8
        lea rax, [rip + triple]
        call rax
        add rsp, 8
        ret

/* A call to a PLT entry's shape: endbr64, then a jump through a memory word. */
        .globl case_calls_plt, case_calls_plt_end
case_calls_plt:
        sub rsp, 8
        call plt_shaped
        add rsp, 8
        ret
case_calls_plt_end:

plt_shaped:
        endbr64
        jmp QWORD PTR [rip + triple_pointer]

/* Proves nothing: its callee calls a function of the file first, which might not return, so
 * the bytes after that call might be another function's (here they run on: a call through a
 * register, to triple again). */
        .globl case_calls_after_local, case_calls_after_local_end
case_calls_after_local:
        sub rsp, 8
        call local_then_pointer
        add rsp, 8
        ret
case_calls_after_local_end:

local_then_pointer:
        sub rsp, 8
        call triple
        lea rax, [rip + triple]
        call rax
        add rsp, 8
        ret

/* The return value's registers, which the way back from a wrapper keeps (AT_RETURN_*), and
 * arguments on the stack, where the wrapper finds them. None writes any other register. */
/* long case_stack(long, long, long, long, long, long, struct six s): the sum of s's six words,
 * passed on the stack. */
        .globl case_stack, case_stack_end
case_stack:
        mov rax, QWORD PTR [rsp + 8]
        add rax, QWORD PTR [rsp + 16]
        add rax, QWORD PTR [rsp + 24]
        add rax, QWORD PTR [rsp + 32]
        add rax, QWORD PTR [rsp + 40]
        add rax, QWORD PTR [rsp + 48]
        ret
case_stack_end:

/* __int128 case_pair(long lo, long hi): (hi << 64) | lo, in rdx:rax. */
        .globl case_pair, case_pair_end
case_pair:
        mov rax, rdi
        mov rdx, rsi
        ret
case_pair_end:

/* double case_double(double x): 2 * x, in xmm0. */
        .globl case_double, case_double_end
case_double:
        nop DWORD PTR [rax + rax * 1 + 0]
        addsd xmm0, xmm0
        ret
case_double_end:

/* long double case_x87(long double x): 2 * x, in st0. */
        .globl case_x87, case_x87_end
case_x87:
        fld TBYTE PTR [rsp + 8]
        fadd st(0), st(0)
        ret
case_x87_end:
        .p2align 12

        .section .rodata
table_ok:
        .long .Ltable_0 - table_ok, .Ltable_1 - table_ok, .Ltable_2 - table_ok
table_into:
        .long .Linto_end - table_into, .Linto_end - table_into, .Linto_again - table_into

        .data
value:  .long 42
        .p2align 3
triple_pointer:
        .quad triple
        .section .note.GNU-stack, "", @progbits
