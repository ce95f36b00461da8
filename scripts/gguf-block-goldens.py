#!/usr/bin/env python3
"""Writes the GGUF block goldens of GgufCodecTest from llama.cpp's own reference quantizers.

usage: scripts/gguf-block-goldens.py LIBGGML_BASE_SO OUT_DIR

Loads ggml's shared base library (libggml-base.so of a llama.cpp build) with ctypes and quantizes the test's
deterministic input (GgufCodecTest.input(): the same xorshift32 sequence and block patterns) with
ggml_quantize_chunk and no importance matrix, which is what llama-quantize does without --imatrix. Writes one
file of raw blocks per type. Needs numpy.
"""
import ctypes
import sys
from pathlib import Path

import numpy as np

ROWS, COLUMNS = 8, 512
# ggml_type numbers (ggml.h)
TYPES = {"q4_0": 2, "q5_0": 6, "q8_0": 8, "q4_k": 12, "q6_k": 14}


def test_input() -> np.ndarray:
    """Mirror of GgufCodecTest.input(): keep the two in step."""
    state = 0x9E3779B9
    values = []
    for i in range(ROWS * COLUMNS):
        state ^= (state << 13) & 0xFFFFFFFF
        state ^= state >> 17
        state ^= (state << 5) & 0xFFFFFFFF
        u = (state >> 8) / float(1 << 24)
        row, column = divmod(i, COLUMNS)
        block = column // 32
        amplitude = [1.0, 0.0, 0.02, 0.05, 1e-6, 3.0, 0.5, 100.0][row]
        v = (u * 2 - 1) * amplitude * (1 + block % 3)
        if row == 1 and column >= 256:
            v = (u * 2 - 1) * 0.25
        if row == 2:
            v = abs(v) + 0.01
        if row == 3 and column % 32 == 7:
            v = 40.0 * (1 if block % 2 == 0 else -1)
        if row == 5:
            v = float(round(v * 2)) / 2
        if row == 6:
            v = -abs(v)
        values.append(v)
    return np.array(values, dtype=np.float32)


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    lib = ctypes.CDLL(sys.argv[1])
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    src = test_input()
    for name, ggml_type in TYPES.items():
        dst = ctypes.create_string_buffer(ROWS * COLUMNS * 2)
        size = lib.ggml_quantize_chunk(ggml_type, src.ctypes.data, dst, 0, ROWS, COLUMNS, None)
        (out / f"golden-{name}.bin").write_bytes(dst.raw[:size])
        print(name, size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
