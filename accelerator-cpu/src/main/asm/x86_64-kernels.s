# Machine-code kernels for x86-64 CPUs with AVX-512 (F, BW, VL) and AVX512-VNNI, for the products a decode step is
# made of. The JDK's Vector API has no dot-product instructions, and widening bfloat16 to float32 in registers costs
# a quarter of a decode step (docs/performance.md); vdpbf16ps multiplies 32 bfloat16 pairs and adds them into 16
# float32 lanes in one instruction, so the product runs at the speed of the read (vpdpwssd does the same for 16-bit
# integers). Only bf16_rows and bf16_batch<R> use vdpbf16ps and so need AVX512-BF16 (Cooper Lake, Sapphire Rapids,
# Zen 4); on AVX-512 CPUs without it (Skylake-X, Cascade Lake, Ice Lake) bf16_rows_f32x does the one-row bf16
# product instead, and every bfloat16 output is rounded with integer instructions (BF16_ROUND), not vcvtneps2bf16.
#
# This file is the source of kernels/x86_64-kernels.lst (the bytes and their disassembly), which MachineCode maps
# into executable memory; scripts/assemble-cpu-kernels.sh regenerates it, and MachineCodeTest checks the two agree.
# Every function is a leaf that follows the System V AMD64 calling convention, touches only caller-saved registers,
# and reads and writes nothing but its arguments' memory.

.intel_syntax noprefix
.text

# k1 = the lanes of the elements after the last whole vector of in (r8) elements, vectors of \lanes elements:
# (1 << (in mod lanes)) - 1. eax and the 32-bit register \scratch are overwritten.
.macro TAIL_MASK lanes, scratch
    mov eax, r8d
    and eax, \lanes - 1
    mov \scratch, -1
    shlx \scratch, \scratch, eax
    not \scratch
    kmovd k1, \scratch
.endm

# The horizontal sum of zmm0's 16 lanes into xmm0 (xmm1 is overwritten).
.macro HSUM0
    vextractf64x4 ymm1, zmm0, 1
    vaddps ymm0, ymm0, ymm1
    vextractf128 xmm1, ymm0, 1
    vaddps xmm0, xmm0, xmm1
    vmovhlps xmm1, xmm0, xmm0
    vaddps xmm0, xmm0, xmm1
    vmovshdup xmm1, xmm0
    vaddss xmm0, xmm0, xmm1
.endm

# Rounds the float32 in xmm0 to bfloat16, to nearest even, and stores it at [rdx]; the general register named by r
# (32-bit name; r16 its 16-bit name) is overwritten. The rounding of vcvtneps2bf16 and libtorch without AVX512-BF16.
# A NaN becomes 0x7fc0 as in libtorch (the carry would turn some NaNs into infinities or zero); denormals are kept,
# as libtorch keeps them (vcvtneps2bf16 flushes them to zero).
.macro BF16_ROUND r, r16
    vmovd \r, xmm0
    vucomiss xmm0, xmm0
    jp 86f
    bt \r, 16                        # the last bit kept: CF
    adc \r, 0x7fff                   # + half an ulp, less one unless the kept value is odd: ties go to even
    shr \r, 16
    jmp 87f
86:
    mov \r, 0x7fc0
87:
    mov word ptr [rdx], \r16
.endm

# The end of a one-row bf16 kernel's row (bf16_rows, bf16_rows_f32x): adds the bf16 bias at rcx to the sum in xmm0
# (none when rcx is null, else rcx moves on), rounds it (BF16_ROUND, through eax: rax counts from zero again in the
# next row) and stores it at rdx, which moves on. xmm1 is overwritten.
.macro BF16_ROW_OUT
    test rcx, rcx
    jz 88f
    movzx eax, word ptr [rcx]
    shl eax, 16
    vmovd xmm1, eax
    vaddss xmm0, xmm0, xmm1
    add rcx, 2
88:
    BF16_ROUND eax, ax
    add rdx, 2
.endm

# Stores the row's result xmm0 at rdx and moves rdx on: bf16 when r15 is non-zero (BF16_ROUND), else float32, after
# adding the bias at r8 (same type; none when r8 is null, else r8 moves on). r14 is overwritten.
.macro STORE_ROW
    test r15, r15
    jnz 81f
    test r8, r8                     # float32 bias and output
    jz 80f
    vaddss xmm0, xmm0, [r8]
    add r8, 4
80:
    vmovss [rdx], xmm0
    add rdx, 4
    jmp 83f
81:
    test r8, r8                     # bfloat16 bias and output
    jz 82f
    movzx r14d, word ptr [r8]
    shl r14d, 16
    vmovd xmm1, r14d
    vaddss xmm0, xmm0, xmm1
    add r8, 2
82:
    BF16_ROUND r14d, r14w
    add rdx, 2
83:
.endm

# The entry of a row kernel with arguments on the stack (int8_rows, int8_rows_x16, nibble_rows): saves the
# callee-saved registers it uses and loads arguments 7-9 - rows into r10, the group size into r11, the output type
# into r15 (System V: at [rsp + 8], [rsp + 16], [rsp + 24] on entry, 40 bytes further after the pushes).
.macro ENTER_ROWS
    push rbx
    push r12
    push r13
    push r14
    push r15
    mov r10, [rsp + 48]
    mov r11, [rsp + 56]
    mov r15, [rsp + 64]
.endm

# Its exit: clears the upper vector state and restores what ENTER_ROWS saved.
.macro LEAVE_ROWS
    vzeroupper
    pop r15
    pop r14
    pop r13
    pop r12
    pop rbx
    ret
.endm

# The sums of the 8 lanes of each of ymm0..ymm7, as the 8 lanes of ymm0 (row r's sum in lane r): two rounds of
# pairwise sums within each 128-bit half, then the two halves added. ymm1..ymm7 are overwritten.
.macro REDUCE8
    vhaddps ymm0, ymm0, ymm1
    vhaddps ymm2, ymm2, ymm3
    vhaddps ymm4, ymm4, ymm5
    vhaddps ymm6, ymm6, ymm7
    vhaddps ymm0, ymm0, ymm2        # rows 0-3: lanes 0-3 of each row in the low half, lanes 4-7 in the high
    vhaddps ymm4, ymm4, ymm6        # rows 4-7, the same
    vperm2f128 ymm1, ymm0, ymm4, 0x20
    vperm2f128 ymm2, ymm0, ymm4, 0x31
    vaddps ymm0, ymm1, ymm2
.endm

# The start of an eight-row kernel (bf16_rows8, f32_rows8) with r10 = bytes per row: saves rbx and r12, which then
# walk rows 0 and 4 of a block (rows 1-3 and 5-7 lie r10, 2·r10 and r11 = 3·r10 past them), and turns r9 into the
# number of blocks (the caller passes a multiple of 8 rows).
.macro ENTER_ROWS8
    push rbx
    push r12
    lea r11, [r10 + 2 * r10]
    shr r9, 3
.endm

.macro LEAVE_ROWS8
    vzeroupper
    pop r12
    pop rbx
    ret
.endm

# The start of a block of eight rows at rdi: rax walks the input from rsi, rbx and r12 the rows, accumulators zeroed.
.macro ROWS8_BLOCK
    mov rax, rsi
    mov rbx, rdi
    lea r12, [rdi + 4 * r10]
    vxorps ymm0, ymm0, ymm0
    vxorps ymm1, ymm1, ymm1
    vxorps ymm2, ymm2, ymm2
    vxorps ymm3, ymm3, ymm3
    vxorps ymm4, ymm4, ymm4
    vxorps ymm5, ymm5, ymm5
    vxorps ymm6, ymm6, ymm6
    vxorps ymm7, ymm7, ymm7
.endm

# \op acc, row for each row of an eight-row block: accumulator 0-7 and the row's address at the current column.
.macro EACH_ROW8 op
    \op 0, rbx
    \op 1, rbx + r10
    \op 2, rbx + 2 * r10
    \op 3, rbx + r11
    \op 4, r12
    \op 5, r12 + r10
    \op 6, r12 + 2 * r10
    \op 7, r12 + r11
.endm

# The eight-row kernels' per-row steps (EACH_ROW8), the input vector in ymm8 or zmm8: a whole vector, and the
# masked one at the end of the rows (k1: TAIL_MASK).
.macro DOT_BF16 acc, row:vararg
    vdpbf16ps ymm\acc, ymm8, [\row]
.endm

.macro DOT_BF16_MASKED acc, row:vararg
    vmovdqu16 ymm9{k1}{z}, [\row]
    vdpbf16ps ymm\acc, ymm8, ymm9
.endm

.macro FMA_F32 acc, row:vararg
    vfmadd231ps ymm\acc, ymm8, [\row]
.endm

.macro FMA_F32_MASKED acc, row:vararg
    vfmadd231ps ymm\acc{k1}, ymm8, [\row]
.endm

# The bf16 weights at \row widened to float32 in zmm9 (vpmovzxwd, vpslld), times the float32 input in zmm8.
.macro WIDEN_FMA acc, row:vararg
    vpmovzxwd zmm9, [\row]
    vpslld zmm9, zmm9, 16
    vfmadd231ps zmm\acc, zmm9, zmm8
.endm

.macro WIDEN_FMA_MASKED acc, row:vararg
    vmovdqu16 ymm9{k1}{z}, [\row]
    vpmovzxwd zmm9, ymm9
    vpslld zmm9, zmm9, 16
    vfmadd231ps zmm\acc, zmm9, zmm8
.endm

# The end of a block of a bf16 eight-row kernel: the eight sums (REDUCE8) through the 32 bytes at rsp, each out as
# in bf16_rows (BF16_ROW_OUT: bias, one rounding).
.macro BF16_OUT8
    REDUCE8
    vmovups [rsp], ymm0
    .irp at, 0, 4, 8, 12, 16, 20, 24, 28
    vmovss xmm0, dword ptr [rsp + \at]
    BF16_ROW_OUT
    .endr
.endm
# void bf16_rows(const bf16 *w, const bf16 *x, bf16 *y, const bf16 *bias, int64 in, int64 rows)
#
# y[n] = bf16(Σ_k w[n·in + k]·x[k] + bias[n]) for n in [0, rows): rows of w one after another, the products of each
# accumulated in float32 (four accumulators of 8 lanes, then one horizontal sum), rounded to nearest even once.
# bias may be null. Any in ≥ 0: whole vectors of 16 elements, then one masked load for the rest. 256-bit registers,
# not 512: on Zen 4 a stream of 256-bit loads reads memory 10-20% faster than one of 512-bit loads (measured, one
# thread, 1 GiB: a plain read 29-31 against 26-28.5 GB/s; this product 25-30 against 13.5-24.8 GB/s).
.globl bf16_rows
bf16_rows:
    test r9, r9
    jz 9f
    lea r10, [r8 + r8]              # bytes per row
    TAIL_MASK 16, r11d
    mov r11, r10
    and r11, -128                   # bytes the four-vector loop covers
    and r8, -16
    add r8, r8                      # bytes whole vectors cover
1:
    vpxord ymm0, ymm0, ymm0
    vpxord ymm1, ymm1, ymm1
    vpxord ymm2, ymm2, ymm2
    vpxord ymm3, ymm3, ymm3
    xor eax, eax
    test r11, r11
    jz 3f
2:
    vmovdqu32 ymm4, [rsi + rax]
    vmovdqu32 ymm5, [rsi + rax + 32]
    vmovdqu32 ymm6, [rsi + rax + 64]
    vmovdqu32 ymm7, [rsi + rax + 96]
    vdpbf16ps ymm0, ymm4, [rdi + rax]
    vdpbf16ps ymm1, ymm5, [rdi + rax + 32]
    vdpbf16ps ymm2, ymm6, [rdi + rax + 64]
    vdpbf16ps ymm3, ymm7, [rdi + rax + 96]
    add rax, 128
    cmp rax, r11
    jb 2b
3:
    cmp rax, r8
    jae 5f
4:
    vmovdqu32 ymm4, [rsi + rax]
    vdpbf16ps ymm0, ymm4, [rdi + rax]
    add rax, 32
    cmp rax, r8
    jb 4b
5:
    cmp r8, r10
    je 6f
    vmovdqu16 ymm4{k1}{z}, [rsi + rax]
    vmovdqu16 ymm5{k1}{z}, [rdi + rax]
    vdpbf16ps ymm1, ymm4, ymm5
6:
    vaddps ymm0, ymm0, ymm1
    vaddps ymm2, ymm2, ymm3
    vaddps ymm0, ymm0, ymm2         # its upper half is zero: HSUM0 adds nothing there
    HSUM0
    BF16_ROW_OUT
    add rdi, r10
    dec r9
    jnz 1b
9:
    vzeroupper
    ret

# void bf16_rows8(const bf16 *w, const bf16 *x, bf16 *y, const bf16 *bias, int64 in, int64 rows)
#
# bf16_rows for long rows, eight at a time; rows is a multiple of 8. Once a row (and so the input) passes ~16 KiB,
# bf16_rows slows to about 0.6 of the read: the input no longer stays in the L1 cache beside the streaming weights,
# and is fetched again for every row (one thread, rows of 19-22 KiB: 14-19 GB/s, against 26-31 for rows of 3.5-14
# KiB). Here each input vector is loaded once for eight rows, which stream side by side. On short rows eight streams
# read slower than one (16-20 GB/s for rows of 3.5 KiB), so MachineCode uses this only for inputs of
# LONG_INPUT_BYTES and more.
# One accumulator per row, the eight summed together (REDUCE8); each sum then goes out as in bf16_rows (bias, one
# rounding). Any in ≥ 0: whole vectors of 16, then one masked load of each row's last weights.
.globl bf16_rows8
bf16_rows8:
    lea r10, [r8 + r8]              # bytes per row
    ENTER_ROWS8
    sub rsp, 32                     # the block's eight sums, on their way out
    TAIL_MASK 16, ebx
    and r8, -16
    add r8, r8
    add r8, rsi                     # the end of the input's whole vectors
    test r9, r9
    jz 49f
40:
    ROWS8_BLOCK
    cmp rax, r8
    jae 42f
41:
    vmovdqu32 ymm8, [rax]
    EACH_ROW8 DOT_BF16
    add rax, 32
    add rbx, 32
    add r12, 32
    cmp rax, r8
    jb 41b
42:
    kortestw k1, k1
    jz 43f
    vmovdqu16 ymm8{k1}{z}, [rax]
    EACH_ROW8 DOT_BF16_MASKED
43:
    BF16_OUT8
    lea rdi, [rdi + 8 * r10]
    dec r9
    jnz 40b
49:
    add rsp, 32
    LEAVE_ROWS8

# void bf16_rows_f32x(const bf16 *w, const float *x, bf16 *y, const bf16 *bias, int64 in, int64 rows)
#
# bf16_rows for AVX-512 CPUs without AVX512-BF16: the same y[n] = bf16(Σ_k w[n·in + k]·x[k] + bias[n]), with the
# input already widened to float32 (once per product, by the caller). Each 16 weights widen in two instructions
# (vpmovzxwd: words to dwords, vpslld by 16: a bfloat16 is the upper half of its float32) and meet the input in an
# FMA: four accumulators of 16 lanes, one horizontal sum per row. 512-bit registers: the CPUs that run this (Intel's)
# stream 512-bit loads at full speed, and the loop is bound by the read either way. Any in ≥ 0; bias may be null.
.globl bf16_rows_f32x
bf16_rows_f32x:
    test r9, r9
    jz 49f
    lea r10, [r8 + r8]              # weight bytes per row
    TAIL_MASK 16, r11d
    mov r11, r10
    and r11, -128                   # weight bytes the four-vector loop covers
    and r8, -16
    add r8, r8                      # weight bytes whole vectors cover
40:
    vpxord zmm0, zmm0, zmm0
    vpxord zmm1, zmm1, zmm1
    vpxord zmm2, zmm2, zmm2
    vpxord zmm3, zmm3, zmm3
    xor eax, eax
    test r11, r11
    jz 42f
41:
    vpmovzxwd zmm4, [rdi + rax]
    vpmovzxwd zmm5, [rdi + rax + 32]
    vpmovzxwd zmm6, [rdi + rax + 64]
    vpmovzxwd zmm7, [rdi + rax + 96]
    vpslld zmm4, zmm4, 16
    vpslld zmm5, zmm5, 16
    vpslld zmm6, zmm6, 16
    vpslld zmm7, zmm7, 16
    vfmadd231ps zmm0, zmm4, [rsi + 2 * rax]
    vfmadd231ps zmm1, zmm5, [rsi + 2 * rax + 64]
    vfmadd231ps zmm2, zmm6, [rsi + 2 * rax + 128]
    vfmadd231ps zmm3, zmm7, [rsi + 2 * rax + 192]
    add rax, 128
    cmp rax, r11
    jb 41b
42:
    cmp rax, r8
    jae 44f
43:
    vpmovzxwd zmm4, [rdi + rax]
    vpslld zmm4, zmm4, 16
    vfmadd231ps zmm0, zmm4, [rsi + 2 * rax]
    add rax, 32
    cmp rax, r8
    jb 43b
44:
    cmp r8, r10
    je 45f
    vmovdqu16 ymm4{k1}{z}, [rdi + rax]   # masked loads: nothing past the row is read
    vpmovzxwd zmm4, ymm4
    vpslld zmm4, zmm4, 16
    vmovups zmm5{k1}{z}, [rsi + 2 * rax]
    vfmadd231ps zmm1, zmm4, zmm5
45:
    vaddps zmm0, zmm0, zmm1
    vaddps zmm2, zmm2, zmm3
    vaddps zmm0, zmm0, zmm2
    HSUM0
    BF16_ROW_OUT
    add rdi, r10
    dec r9
    jnz 40b
49:
    vzeroupper
    ret

# void bf16_rows8_f32x(const bf16 *w, const float *x, bf16 *y, const bf16 *bias, int64 in, int64 rows)
#
# bf16_rows_f32x for long inputs, eight rows at a time for the reason bf16_rows8 gives (here the float32 input is
# twice a row's bytes); rows is a multiple of 8. Each 16 input floats are loaded once for the eight rows, whose
# weights widen as in bf16_rows_f32x (vpmovzxwd, vpslld) and meet them in FMAs: one accumulator of 16 lanes per row,
# each folded to 8 lanes, the eight summed together (REDUCE8); each sum then goes out as in bf16_rows (bias, one
# rounding). Any in ≥ 0: whole vectors of 16, then masked loads for the rest. One thread on Zen 4 (which runs
# bf16_rows in production; this measures the mechanism), 4096 × 11008: 11-13 GB/s one row at a time, 20-24 here;
# 896 × 4864: 17-20 against 20-22.
.globl bf16_rows8_f32x
bf16_rows8_f32x:
    lea r10, [r8 + r8]              # weight bytes per row
    ENTER_ROWS8
    sub rsp, 32                     # the block's eight sums, on their way out
    TAIL_MASK 16, ebx
    and r8, -16
    shl r8, 2
    add r8, rsi                     # the end of the input's whole vectors
    test r9, r9
    jz 59f
50:
    ROWS8_BLOCK
    cmp rax, r8
    jae 52f
51:
    vmovups zmm8, [rax]
    EACH_ROW8 WIDEN_FMA
    add rax, 64
    add rbx, 32
    add r12, 32
    cmp rax, r8
    jb 51b
52:
    kortestw k1, k1
    jz 53f
    vmovups zmm8{k1}{z}, [rax]
    EACH_ROW8 WIDEN_FMA_MASKED
53:
    .irp acc, 0, 1, 2, 3, 4, 5, 6, 7
    vextractf64x4 ymm9, zmm\acc, 1
    vaddps ymm\acc, ymm\acc, ymm9
    .endr
    BF16_OUT8
    lea rdi, [rdi + 8 * r10]
    dec r9
    jnz 50b
59:
    add rsp, 32
    LEAVE_ROWS8

# void f32_rows(const float *w, const float *x, float *y, const float *bias, int64 in, int64 rows)
#
# y[n] = Σ_k w[n·in + k]·x[k] + bias[n] for n in [0, rows), in float32: rows of w one after another, each in four
# accumulators of 8 lanes and one horizontal sum; bias may be null. Any in ≥ 0: four vectors of 8 at a time, then
# single vectors, then one masked load for the rest. 256-bit loads for the reason bf16_rows gives. The weight is the
# FMA's memory operand, so each weight vector is one load; the input's loads hit the L1 or L2 cache.
.globl f32_rows
f32_rows:
    test r9, r9
    jz 29f
    lea r10, [4 * r8]               # bytes per row
    TAIL_MASK 8, r11d
    mov r11, r10
    and r11, -128                   # bytes the four-vector loop covers
    and r8, -8
    shl r8, 2                       # bytes whole vectors cover
20:
    vpxord ymm0, ymm0, ymm0
    vpxord ymm1, ymm1, ymm1
    vpxord ymm2, ymm2, ymm2
    vpxord ymm3, ymm3, ymm3
    xor eax, eax
    test r11, r11
    jz 22f
21:
    vmovups ymm4, [rsi + rax]
    vmovups ymm5, [rsi + rax + 32]
    vmovups ymm6, [rsi + rax + 64]
    vmovups ymm7, [rsi + rax + 96]
    vfmadd231ps ymm0, ymm4, [rdi + rax]
    vfmadd231ps ymm1, ymm5, [rdi + rax + 32]
    vfmadd231ps ymm2, ymm6, [rdi + rax + 64]
    vfmadd231ps ymm3, ymm7, [rdi + rax + 96]
    add rax, 128
    cmp rax, r11
    jb 21b
22:
    cmp rax, r8
    jae 24f
23:
    vmovups ymm4, [rsi + rax]
    vfmadd231ps ymm0, ymm4, [rdi + rax]
    add rax, 32
    cmp rax, r8
    jb 23b
24:
    cmp r8, r10
    je 25f
    vmovups ymm4{k1}{z}, [rsi + rax]
    vmovups ymm5{k1}{z}, [rdi + rax]
    vfmadd231ps ymm1, ymm4, ymm5
25:
    vaddps ymm0, ymm0, ymm1
    vaddps ymm2, ymm2, ymm3
    vaddps ymm0, ymm0, ymm2         # its upper half is zero: HSUM0 adds nothing there
    HSUM0
    test rcx, rcx
    jz 26f
    vaddss xmm0, xmm0, [rcx]
    add rcx, 4
26:
    vmovss [rdx], xmm0
    add rdx, 4
    add rdi, r10
    dec r9
    jnz 20b
29:
    vzeroupper
    ret

# void f32_rows8(const float *w, const float *x, float *y, const float *bias, int64 in, int64 rows)
#
# f32_rows for long rows, eight at a time, for the reason bf16_rows8 gives; rows is a multiple of 8. Rows of 19 KiB
# (the MLP down projection of a Qwen2.5-0.5B-shaped model) read at 14-19 GB/s one at a time and at 22-27 here, the
# plain read at 30-32 (one thread, same harness). One accumulator per row, the input vector loaded once for the
# eight; the eight sums come out as one vector, plus the bias's eight (none when rcx is null). Any in ≥ 0: whole
# vectors of 8, then masked FMAs for the rest (a masked-off lane of the weights is never read).
.globl f32_rows8
f32_rows8:
    lea r10, [4 * r8]               # bytes per row
    ENTER_ROWS8
    TAIL_MASK 8, ebx
    and r8, -8
    shl r8, 2
    add r8, rsi                     # the end of the input's whole vectors
    test r9, r9
    jz 39f
30:
    ROWS8_BLOCK
    cmp rax, r8
    jae 32f
31:
    vmovups ymm8, [rax]
    EACH_ROW8 FMA_F32
    add rax, 32
    add rbx, 32
    add r12, 32
    cmp rax, r8
    jb 31b
32:
    kortestw k1, k1
    jz 33f
    vmovups ymm8{k1}{z}, [rax]
    EACH_ROW8 FMA_F32_MASKED
33:
    REDUCE8
    test rcx, rcx
    jz 34f
    vaddps ymm0, ymm0, [rcx]
    add rcx, 32
34:
    vmovups [rdx], ymm0
    add rdx, 32
    lea rdi, [rdi + 8 * r10]
    dec r9
    jnz 30b
39:
    LEAVE_ROWS8

# void f32_batch<R>(const float *w, const float *xs, float *y, const float *bias, int64 in, int64 rows, int64 out)
#
# y[r·out + n] = Σ_k w[n·in + k]·x_r[k] + bias[n] for R (2 to 8) input rows r and n in [0, rows), in float32: the
# batched decode steps of a small model (abliteration trials decode 8 rows at a time), where the Vector API kernel
# spent most of a product on reloading the inputs and on horizontal sums. xs holds the inputs interleaved by vector
# (MachineCode.interleave: for each 16 columns, the R rows' 16 one after another, zero past in), so each weight
# vector is loaded once and meets every row's vector at a fixed offset; one accumulator of 16 lanes per row, one
# horizontal sum per output. 512-bit registers: the weights of such models sit in the caches, and the loop is bound
# by its loads (R + 1 per 16 weights). Any in ≥ 0 (a masked load for the last weights); bias may be null. out
# (argument 7, at [rsp + 8] on entry) is y's row length in elements.
.macro F32_STORE a
    vextractf64x4 ymm9, zmm\a, 1
    vaddps ymm9, ymm9, ymm\a
    vextractf128 xmm10, ymm9, 1
    vaddps xmm9, xmm9, xmm10
    vmovhlps xmm10, xmm9, xmm9
    vaddps xmm9, xmm9, xmm10
    vmovshdup xmm10, xmm9
    vaddss xmm9, xmm9, xmm10
    vaddss xmm9, xmm9, xmm15
    vmovss [r12], xmm9
    add r12, r10
.endm

.macro F32_BATCH R
.globl f32_batch\R
f32_batch\R:
    mov r10, [rsp + 8]
    shl r10, 2                      # bytes between y's rows
    test r9, r9
    jz 119f
    push rbx
    push r12
    lea rbx, [4 * r8]               # bytes per weight row
    mov eax, r8d
    and eax, 15                     # weights after the last whole vector
    mov r11d, -1
    shlx r11d, r11d, eax
    not r11d
    kmovw k1, r11d                  # their lanes
    mov r11, r8
    and r11, -16
    shl r11, 2                      # bytes whole vectors cover
110:
    .irp a, 0, 1, 2, 3, 4, 5, 6, 7
    .if \a < \R
    vpxord zmm\a, zmm\a, zmm\a
    .endif
    .endr
    xor eax, eax                    # weight byte offset
    mov r12, rsi                    # xs at this vector
    test r11, r11
    jz 112f
111:
    vmovups zmm8, [rdi + rax]
    .irp a, 0, 1, 2, 3, 4, 5, 6, 7
    .if \a < \R
    vfmadd231ps zmm\a, zmm8, [r12 + 64 * \a]
    .endif
    .endr
    add rax, 64
    add r12, 64 * \R
    cmp rax, r11
    jb 111b
112:
    cmp rax, rbx
    je 113f
    vmovups zmm8{k1}{z}, [rdi + rax]  # masked: nothing past the row is read; xs is zero there
    .irp a, 0, 1, 2, 3, 4, 5, 6, 7
    .if \a < \R
    vfmadd231ps zmm\a, zmm8, [r12 + 64 * \a]
    .endif
    .endr
113:
    vxorps xmm15, xmm15, xmm15
    test rcx, rcx
    jz 114f
    vmovss xmm15, [rcx]
    add rcx, 4
114:
    mov r12, rdx
    .irp a, 0, 1, 2, 3, 4, 5, 6, 7
    .if \a < \R
    F32_STORE \a
    .endif
    .endr
    add rdx, 4
    add rdi, rbx
    dec r9
    jnz 110b
    pop r12
    pop rbx
119:
    vzeroupper
    ret
.endm

F32_BATCH 2
F32_BATCH 3
F32_BATCH 4
F32_BATCH 5
F32_BATCH 6
F32_BATCH 7
F32_BATCH 8

# void int8_rows(const int8 *codes, const float *x, void *y, const float *scales, const void *bias, int64 in,
#                int64 rows, int64 block, int64 bf16)
#
# y[n] = Σ_g scales[n·G + g] · Σ_{k∈g} codes[n·in + k]·x[k] + bias[n] for n in [0, rows), G = in / block groups of
# block weights per row (block = in: one scale per row). Symmetric codes only (no zero point). y and bias are
# bfloat16 when bf16 is 1 (rounded to nearest even once), else float32; bias may be null. in and block are
# multiples of 16. Codes widen 16 at a time to float32 (vpmovsxbd + vcvtdq2ps) and meet the float32 input in
# four accumulators; each group's sum is scaled as a vector, so a row ends in one horizontal sum. Arguments 7-9 are
# on the stack (System V): rows at [rsp + 8], block at [rsp + 16], bf16 at [rsp + 24] on entry.
.globl int8_rows
int8_rows:
    ENTER_ROWS
    test r10, r10
    jz 19f
    mov rbx, r11
    and rbx, -64                    # bytes of a group the four-vector loop covers
10:
    vpxord zmm0, zmm0, zmm0         # the row's total
    xor eax, eax                    # k
11:
    lea r12, [rax + r11]            # the group's end
    lea r13, [rax + rbx]            # the end of its four-vector part
    vpxord zmm1, zmm1, zmm1
    vpxord zmm2, zmm2, zmm2
    vpxord zmm3, zmm3, zmm3
    vpxord zmm4, zmm4, zmm4
    cmp rax, r13
    jae 13f
12:
    vpmovsxbd zmm5, [rdi + rax]
    vpmovsxbd zmm6, [rdi + rax + 16]
    vpmovsxbd zmm7, [rdi + rax + 32]
    vpmovsxbd zmm8, [rdi + rax + 48]
    vcvtdq2ps zmm5, zmm5
    vcvtdq2ps zmm6, zmm6
    vcvtdq2ps zmm7, zmm7
    vcvtdq2ps zmm8, zmm8
    vfmadd231ps zmm1, zmm5, [rsi + 4 * rax]
    vfmadd231ps zmm2, zmm6, [rsi + 4 * rax + 64]
    vfmadd231ps zmm3, zmm7, [rsi + 4 * rax + 128]
    vfmadd231ps zmm4, zmm8, [rsi + 4 * rax + 192]
    add rax, 64
    cmp rax, r13
    jb 12b
13:
    cmp rax, r12
    jae 14f
    vpmovsxbd zmm5, [rdi + rax]
    vcvtdq2ps zmm5, zmm5
    vfmadd231ps zmm1, zmm5, [rsi + 4 * rax]
    add rax, 16
    jmp 13b
14:
    vaddps zmm1, zmm1, zmm2
    vaddps zmm3, zmm3, zmm4
    vaddps zmm1, zmm1, zmm3
    vbroadcastss zmm5, [rcx]
    add rcx, 4
    vfmadd231ps zmm0, zmm1, zmm5
    cmp rax, r9
    jb 11b
    HSUM0
    STORE_ROW
    add rdi, r9
    dec r10
    jnz 10b
19:
    LEAVE_ROWS

# void quantize_x16(const void *x, int16 *xq, float *xscales, int64 in, int64 bf16)
#
# The input of int8_rows_x16, in blocks of 128 columns b: xscales[b] = m / 32767 with m = max_k |x[k]| over the
# block, and xq[k] = round(x[k] · (32767 / m)) to nearest even (so |xq| ≤ 32767, saturated); a block of zeros gets
# scale 0 and codes 0. Each element's error is at most m / 65534: below bfloat16's own rounding for every element
# within a factor 128 of its block's largest. x is bf16 when bf16 is 1, else float32; in is a multiple of 128.
.globl quantize_x16
quantize_x16:
    test rcx, rcx
    jz 69f
    mov eax, 0x7fffffff
    vpbroadcastd zmm15, eax         # the mask that clears a float's sign
    mov eax, 0x46fffe00             # 32767.0f
    vmovd xmm14, eax
60:
    test r8, r8
    jnz 61f
    .irp i, 0, 1, 2, 3, 4, 5, 6, 7
    vmovups zmm\i, [rdi + 64 * \i]
    .endr
    add rdi, 512
    jmp 62f
61:
    .irp i, 0, 1, 2, 3, 4, 5, 6, 7
    vpmovzxwd zmm\i, [rdi + 32 * \i]
    vpslld zmm\i, zmm\i, 16
    .endr
    add rdi, 256
62:
    vpandd zmm8, zmm0, zmm15
    .irp i, 1, 2, 3, 4, 5, 6, 7
    vpandd zmm9, zmm\i, zmm15
    vmaxps zmm8, zmm8, zmm9
    .endr
    vextractf64x4 ymm9, zmm8, 1     # the block's largest magnitude into xmm8
    vmaxps ymm8, ymm8, ymm9
    vextractf128 xmm9, ymm8, 1
    vmaxps xmm8, xmm8, xmm9
    vmovhlps xmm9, xmm8, xmm8
    vmaxps xmm8, xmm8, xmm9
    vmovshdup xmm9, xmm8
    vmaxss xmm8, xmm8, xmm9
    vdivss xmm9, xmm8, xmm14
    vmovss [rdx], xmm9
    add rdx, 4
    vxorps xmm10, xmm10, xmm10      # the factor: 0 for a block of zeros (not 32767 / 0)
    vucomiss xmm8, xmm10
    je 63f
    vdivss xmm10, xmm14, xmm8
63:
    vbroadcastss zmm10, xmm10
    .irp i, 0, 1, 2, 3, 4, 5, 6, 7
    vmulps zmm\i, zmm\i, zmm10
    vcvtps2dq zmm\i, zmm\i
    vpmovsdw [rsi + 32 * \i], zmm\i
    .endr
    add rsi, 256
    sub rcx, 128
    jnz 60b
69:
    vzeroupper
    ret

# One row's 128 columns in int8_rows8_x16: the codes at \row widened (vpmovsxbw), multiplied with the input words in
# zmm24..zmm27 and summed in pairs (vpmaddwd, vpdpwssd), the block's sum to float32 and, times the input scale in
# zmm28, added to the row's total zmm\total. zmm0..zmm5 are overwritten.
.macro INT8_X16_ROW total, row:vararg
    vpmovsxbw zmm2, [\row]
    vpmovsxbw zmm3, [\row + 32]
    vpmovsxbw zmm4, [\row + 64]
    vpmovsxbw zmm5, [\row + 96]
    vpmaddwd zmm0, zmm2, zmm24
    vpmaddwd zmm1, zmm3, zmm25
    vpdpwssd zmm0, zmm4, zmm26
    vpdpwssd zmm1, zmm5, zmm27
    vpaddd zmm0, zmm0, zmm1
    vcvtdq2ps zmm0, zmm0
    vfmadd231ps zmm\total, zmm0, zmm28
.endm

# void int8_rows_x16(const int8 *codes, const int16 *xq, void *y, const float *scales, const void *bias, int64 in,
#                    int64 rows, int64 block, int64 bf16, const float *xscales)
#
# int8_rows with the input quantized by quantize_x16 (xq, xscales), so the products are integer ones (AVX512-VNNI):
# y[n] = Σ_g scales[n·G + g] · Σ_{b∈g} xscales[b] · Σ_{k∈b} codes[n·in + k]·xq[k] + bias[n], G = in / block groups
# of block weights per row (block = in: one scale per row), b the blocks of 128 columns. 32 codes widen to 16-bit
# words in one instruction (vpmovsxbw) and vpmaddwd / vpdpwssd multiply them with 32 input words and add the pairs
# into 16 exact 32-bit lanes: a third of the instructions int8_rows needs for the same codes, so the product runs at
# the speed of the read. Each block's integer sum (at most 4 · 32767 · 127 per lane, far from overflow) becomes
# float32 once and is scaled by its input scale. in and block are multiples of 128; y, bias and the arguments on
# the stack as int8_rows, xscales (argument 10) at [rsp + 32] on entry.
.globl int8_rows_x16
int8_rows_x16:
    ENTER_ROWS
    mov r13, [rsp + 72]             # xscales
    test r10, r10
    jz 79f
70:
    vpxord zmm0, zmm0, zmm0         # the row's total
    xor eax, eax                    # k
    mov rbx, r13                    # the input scale of k's block
71:
    lea r12, [rax + r11]            # the group's end
    vpxord zmm5, zmm5, zmm5         # the group's sum
72:
    vpmovsxbw zmm6, [rdi + rax]
    vpmovsxbw zmm7, [rdi + rax + 32]
    vpmovsxbw zmm8, [rdi + rax + 64]
    vpmovsxbw zmm9, [rdi + rax + 96]
    vpmaddwd zmm1, zmm6, [rsi + 2 * rax]
    vpmaddwd zmm2, zmm7, [rsi + 2 * rax + 64]
    vpdpwssd zmm1, zmm8, [rsi + 2 * rax + 128]
    vpdpwssd zmm2, zmm9, [rsi + 2 * rax + 192]
    vpaddd zmm1, zmm1, zmm2
    vcvtdq2ps zmm1, zmm1
    vfmadd231ps zmm5, zmm1, dword ptr [rbx]{1to16}
    add rbx, 4
    add rax, 128
    cmp rax, r12
    jb 72b
    vfmadd231ps zmm0, zmm5, dword ptr [rcx]{1to16}
    add rcx, 4
    cmp rax, r9
    jb 71b
    HSUM0
    STORE_ROW
    add rdi, r9
    dec r10
    jnz 70b
79:
    LEAVE_ROWS

# void int8_rows8_x16(const int8 *codes, const int16 *xq, void *y, const float *scales, const void *bias, int64 in,
#                     int64 rows, int64 block, int64 bf16, const float *xscales)
#
# int8_rows_x16 for long rows with one scale per row (block = in), eight rows at a time for the reason bf16_rows8
# gives; rows is a multiple of 8. Each 128 columns of the input are loaded once (four registers) for the eight rows,
# whose codes stream side by side; the arithmetic per row is int8_rows_x16's in the same order (each block's integer
# sum to float32, times its input scale, summed per lane; the total times the row's scale, then the lanes' sum), so
# the outputs are the same bits. One thread, 1 GiB of copies: 17-21 GB/s against 12-16 one row at a time for inputs
# of 9,728-16,384 columns (19-32 KiB of 16-bit words), level at 8,192. Arguments as int8_rows_x16; in a multiple of
# 128.
.globl int8_rows8_x16
int8_rows8_x16:
    ENTER_ROWS
    push rbp
    mov r13, [rsp + 80]             # xscales
    shr r10, 3                      # blocks of eight rows
    jz 69f
60:
    lea r14, [r9 + 2 * r9]          # three rows (STORE_ROW overwrites r14: set again for every block)
    mov rbx, rdi                    # row 0 at column k
    lea r12, [rdi + 4 * r9]         # row 4 at column k
    mov rbp, r13                    # the input scale of k's block
    xor eax, eax                    # k
    vpxord zmm16, zmm16, zmm16
    vpxord zmm17, zmm17, zmm17
    vpxord zmm18, zmm18, zmm18
    vpxord zmm19, zmm19, zmm19
    vpxord zmm20, zmm20, zmm20
    vpxord zmm21, zmm21, zmm21
    vpxord zmm22, zmm22, zmm22
    vpxord zmm23, zmm23, zmm23
61:
    vmovdqu16 zmm24, [rsi + 2 * rax]
    vmovdqu16 zmm25, [rsi + 2 * rax + 64]
    vmovdqu16 zmm26, [rsi + 2 * rax + 128]
    vmovdqu16 zmm27, [rsi + 2 * rax + 192]
    vbroadcastss zmm28, dword ptr [rbp]
    INT8_X16_ROW 16, rbx
    INT8_X16_ROW 17, rbx + r9
    INT8_X16_ROW 18, rbx + 2 * r9
    INT8_X16_ROW 19, rbx + r14
    INT8_X16_ROW 20, r12
    INT8_X16_ROW 21, r12 + r9
    INT8_X16_ROW 22, r12 + 2 * r9
    INT8_X16_ROW 23, r12 + r14
    add rbp, 4
    add rbx, 128
    add r12, 128
    add rax, 128
    cmp rax, r9
    jb 61b
    .irp total, 16, 17, 18, 19, 20, 21, 22, 23
    vmulps zmm0, zmm\total, dword ptr [rcx]{1to16}
    add rcx, 4
    HSUM0
    STORE_ROW
    .endr
    lea rdi, [rdi + 8 * r9]
    dec r10
    jnz 60b
69:
    pop rbp
    LEAVE_ROWS


# void bf16_batch<R>(const bf16 *w, const bf16 *xs, bf16 *y, const bf16 *bias, int64 in, int64 rows, int64 out)
#
# The product of R input rows (R = 2, 3, 4) with the same weight rows, each weight vector loaded once for all R:
# y[r·out + n] = bf16(Σ_k w[n·in + k]·x_r[k] + bias[n]) for n in [0, rows). xs holds the inputs interleaved by
# vector: for each 32 columns j, the R rows' 32 bfloat16 one after another (xs + (j·R + r)·64 bytes), zero past in,
# so only the weights need a masked load at the end of a row. Two vectors per iteration, 2R accumulators. 512-bit
# registers, unlike bf16_rows: with 4 rows the loop is bound by vdpbf16ps issue, not by the read, and the 256-bit
# form (twice the instructions) measured slower (batch-4 decode 30.4-32.2 against 37.0-41.7 tokens/s).
# out (argument 7, at [rsp + 8] on entry) is y's row length in elements.
# One output of bf16_batch<R>: the sum of accumulators zmm<a> and zmm<b>, plus the bias in xmm15, stored as bf16 at
# r12, which then moves on to the next input row's output.
.macro BF16_STORE a, b
    vaddps zmm8, zmm\a, zmm\b
    vextractf64x4 ymm9, zmm8, 1
    vaddps ymm8, ymm8, ymm9
    vextractf128 xmm9, ymm8, 1
    vaddps xmm8, xmm8, xmm9
    vmovhlps xmm9, xmm8, xmm8
    vaddps xmm8, xmm8, xmm9
    vmovshdup xmm9, xmm8
    vaddss xmm8, xmm8, xmm9
    vaddss xmm8, xmm8, xmm15
    vcvtneps2bf16 xmm8, xmm8
    vpextrw word ptr [r12], xmm8, 0
    add r12, r10
.endm

.macro BF16_BATCH R
.globl bf16_batch\R
bf16_batch\R:
    mov r10, [rsp + 8]
    add r10, r10                    # bytes between y's rows
    test r9, r9
    jz 39f
    push rbx
    push r12
    lea r11, [r8 + r8]              # bytes per weight row
    TAIL_MASK 32, ebx
    mov rbx, r11
    and rbx, -128                   # bytes the two-vector loop covers
    and r8, -32
    add r8, r8                      # bytes whole vectors cover
30:
    .irp a, 0, 1, 2, 3, 4, 5, 6, 7
    vpxord zmm\a, zmm\a, zmm\a
    .endr
    xor eax, eax                    # weight byte offset
    mov r12, rsi                    # xs at this vector
    test rbx, rbx
    jz 32f
31:
    vmovdqu32 zmm8, [rdi + rax]
    vmovdqu32 zmm9, [rdi + rax + 64]
    vdpbf16ps zmm0, zmm8, [r12]
    vdpbf16ps zmm4, zmm9, [r12 + 64 * \R]
    vdpbf16ps zmm1, zmm8, [r12 + 64]
    vdpbf16ps zmm5, zmm9, [r12 + 64 * \R + 64]
    .if \R >= 3
    vdpbf16ps zmm2, zmm8, [r12 + 128]
    vdpbf16ps zmm6, zmm9, [r12 + 64 * \R + 128]
    .endif
    .if \R >= 4
    vdpbf16ps zmm3, zmm8, [r12 + 192]
    vdpbf16ps zmm7, zmm9, [r12 + 64 * \R + 192]
    .endif
    add rax, 128
    add r12, 128 * \R
    cmp rax, rbx
    jb 31b
32:
    cmp rax, r11
    jae 34f
    cmp rax, r8
    jb 33f
    vmovdqu16 zmm8{k1}{z}, [rdi + rax]
    jmp 35f
33:
    vmovdqu32 zmm8, [rdi + rax]
35:
    vdpbf16ps zmm0, zmm8, [r12]
    vdpbf16ps zmm1, zmm8, [r12 + 64]
    .if \R >= 3
    vdpbf16ps zmm2, zmm8, [r12 + 128]
    .endif
    .if \R >= 4
    vdpbf16ps zmm3, zmm8, [r12 + 192]
    .endif
    add rax, 64
    add r12, 64 * \R
    jmp 32b
34:
    xor eax, eax                    # the bias, as float32 in xmm15
    test rcx, rcx
    jz 36f
    movzx eax, word ptr [rcx]
    shl eax, 16
    add rcx, 2
36:
    vmovd xmm15, eax
    mov r12, rdx
    BF16_STORE 0, 4
    BF16_STORE 1, 5
    .if \R >= 3
    BF16_STORE 2, 6
    .endif
    .if \R >= 4
    BF16_STORE 3, 7
    .endif
    add rdx, 2
    add rdi, r11
    dec r9
    jnz 30b
    pop r12
    pop rbx
39:
    vzeroupper
    ret
.endm

BF16_BATCH 2
BF16_BATCH 3
BF16_BATCH 4

# void nibble_rows(const uint8 *codes, const float *xs, void *y, const float *scales, const void *bias, int64 half,
#                  int64 rows, int64 blockBytes, int64 bf16, const float *table)
#
# Products with 4-bit codes, two per byte, each nibble an index into a table of 16 float32 values (int4: q - 8;
# NF4: its levels): y[n] = Σ_g scales[n·G + g]·Σ_{j∈g} (table[lo(c_j)]·xs[j] + table[hi(c_j)]·xs[half + j]) + bias[n]
# for n in [0, rows), c_j = codes[n·half + j], G = half / blockBytes groups of blockBytes bytes per row. xs holds the
# columns the low nibbles stand for, then those the high nibbles stand for (half floats each). y and bias are bf16
# when bf16 is 1, else float32; bias may be null. half and blockBytes are multiples of 16. Bytes widen 16 at a time
# (vpmovzxbd); vpermps looks both nibbles up in the table held in a register (it reads only an index's low 4 bits,
# so the low nibble needs no mask). Arguments 7-10 are on the stack.
.globl nibble_rows
nibble_rows:
    ENTER_ROWS
    mov rax, [rsp + 72]
    vmovups zmm13, [rax]            # the table
    test r10, r10
    jz 59f
    lea r13, [rsi + 4 * r9]         # xs for the high nibbles
50:
    vpxord zmm0, zmm0, zmm0         # the row's total
    xor eax, eax                    # byte offset in the row
51:
    lea r12, [rax + r11]            # the group's end
    vpxord zmm1, zmm1, zmm1
    vpxord zmm2, zmm2, zmm2
52:
    vpmovzxbd zmm5, [rdi + rax]
    vpsrld zmm6, zmm5, 4
    vpermps zmm5, zmm5, zmm13
    vpermps zmm6, zmm6, zmm13
    vfmadd231ps zmm1, zmm5, [rsi + 4 * rax]
    vfmadd231ps zmm2, zmm6, [r13 + 4 * rax]
    add rax, 16
    cmp rax, r12
    jb 52b
    vaddps zmm1, zmm1, zmm2
    vbroadcastss zmm5, [rcx]
    add rcx, 4
    vfmadd231ps zmm0, zmm1, zmm5
    cmp rax, r9
    jb 51b
    HSUM0
    STORE_ROW
    add rdi, r9
    dec r10
    jnz 50b
59:
    LEAVE_ROWS
