# Machine-code kernels for x86-64 CPUs with AVX-512 (F, BW, VL) and AVX512-BF16, for the products a decode step is
# made of. The JDK's Vector API has no dot-product instructions, and widening bfloat16 to float32 in registers
# costs a quarter of a decode step (docs/performance.md); vdpbf16ps multiplies 32 bfloat16 pairs and adds them into
# 16 float32 lanes in one instruction, so the product runs at the speed of the read.
#
# This file is the source of kernels/x86_64-kernels.lst (the bytes and their disassembly), which MachineCode maps
# into executable memory; scripts/assemble-cpu-kernels.sh regenerates it, and MachineCodeTest checks the two agree.
# Every function is a leaf that follows the System V AMD64 calling convention, touches only caller-saved registers,
# and reads and writes nothing but its arguments' memory.

.intel_syntax noprefix
.text

# void bf16_rows(const bf16 *w, const bf16 *x, bf16 *y, const bf16 *bias, int64 in, int64 rows)
#
# y[n] = bf16(Σ_k w[n·in + k]·x[k] + bias[n]) for n in [0, rows): rows of w one after another, the products of each
# accumulated in float32 (four accumulators of 16 lanes, then one horizontal sum), rounded to nearest even once.
# bias may be null. Any in ≥ 0: whole vectors of 32 elements, then one masked load for the rest.
.globl bf16_rows
bf16_rows:
    test r9, r9
    jz 9f
    lea r10, [r8 + r8]              # bytes per row
    mov eax, r8d
    and eax, 31                     # elements after the last whole vector
    mov r11d, -1
    shlx r11d, r11d, eax
    not r11d
    kmovd k1, r11d                  # their word mask
    mov r11, r10
    and r11, -256                   # bytes the four-vector loop covers
    and r8, -32
    add r8, r8                      # bytes whole vectors cover
1:
    vpxord zmm0, zmm0, zmm0
    vpxord zmm1, zmm1, zmm1
    vpxord zmm2, zmm2, zmm2
    vpxord zmm3, zmm3, zmm3
    xor eax, eax
    test r11, r11
    jz 3f
2:
    vmovdqu32 zmm4, [rsi + rax]
    vmovdqu32 zmm5, [rsi + rax + 64]
    vmovdqu32 zmm6, [rsi + rax + 128]
    vmovdqu32 zmm7, [rsi + rax + 192]
    vdpbf16ps zmm0, zmm4, [rdi + rax]
    vdpbf16ps zmm1, zmm5, [rdi + rax + 64]
    vdpbf16ps zmm2, zmm6, [rdi + rax + 128]
    vdpbf16ps zmm3, zmm7, [rdi + rax + 192]
    add rax, 256
    cmp rax, r11
    jb 2b
3:
    cmp rax, r8
    jae 5f
4:
    vmovdqu32 zmm4, [rsi + rax]
    vdpbf16ps zmm0, zmm4, [rdi + rax]
    add rax, 64
    cmp rax, r8
    jb 4b
5:
    cmp r8, r10
    je 6f
    vmovdqu16 zmm4{k1}{z}, [rsi + rax]
    vmovdqu16 zmm5{k1}{z}, [rdi + rax]
    vdpbf16ps zmm1, zmm4, zmm5
6:
    vaddps zmm0, zmm0, zmm1
    vaddps zmm2, zmm2, zmm3
    vaddps zmm0, zmm0, zmm2
    vextractf64x4 ymm1, zmm0, 1
    vaddps ymm0, ymm0, ymm1
    vextractf128 xmm1, ymm0, 1
    vaddps xmm0, xmm0, xmm1
    vmovhlps xmm1, xmm0, xmm0
    vaddps xmm0, xmm0, xmm1
    vmovshdup xmm1, xmm0
    vaddss xmm0, xmm0, xmm1
    test rcx, rcx
    jz 7f
    movzx eax, word ptr [rcx]
    shl eax, 16
    vmovd xmm1, eax
    vaddss xmm0, xmm0, xmm1
    add rcx, 2
7:
    vcvtneps2bf16 xmm0, xmm0
    vpextrw word ptr [rdx], xmm0, 0
    add rdx, 2
    add rdi, r10
    dec r9
    jnz 1b
9:
    vzeroupper
    ret
