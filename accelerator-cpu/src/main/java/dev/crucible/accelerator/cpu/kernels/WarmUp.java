package dev.crucible.accelerator.cpu.kernels;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Runs every kernel on small synthetic inputs until the JIT has compiled it. Vector API code is fast only once
 * compiled (before that every vector is an object), and a decode step calls some kernels a few dozen times per
 * token, so without this the first tokens of a session run many times slower than the rest. It runs once per
 * process, on its own thread, while the weights load, and calls the kernels' code directly (not the worker pool,
 * which serves one caller).
 */
final class WarmUp {
    private static final int ROUNDS = 2000;
    private static volatile boolean started;

    private WarmUp() {
    }

    private static MemorySegment global(MemorySegment segment) {
        return MemorySegment.ofAddress(segment.address()).reinterpret(segment.byteSize());
    }

    /** @param dtypes whether to warm the bfloat16 path ({@code true}), the float32 one ({@code false}) or both */
    static void run(List<Boolean> dtypes) {
        synchronized (WarmUp.class) {
            if (started) {
                return;
            }
            started = true;
        }
        // Small shapes: before the JIT compiles it, every vector operation allocates, so the warm-up's garbage
        // (which the heap grows to hold) scales with the work done per call, not with how many calls it makes.
        int width = 64;
        int heads = 2;
        int keys = 8;
        int rows = 32;
        try (Arena arena = Arena.ofConfined()) {
            // Global-scope views, like the tensors the kernels see: the compiled code then fits the real calls.
            MemorySegment matrix = global(arena.allocate(4L * 256 * 256, 64));
            MemorySegment x = global(arena.allocate(4L * 4 * 256, 64));
            MemorySegment y = global(arena.allocate(4L * 4 * 256, 64));
            MemorySegment cache = global(arena.allocate(4L * heads * keys * width, 64));
            MemorySegment mask = global(arena.allocate(keys, 64).fill((byte) 1));
            MemorySegment input = global(arena.allocate(4L * 4 * 256, 64));
            long[] strides = {heads * width, width, heads * width};
            long[] cacheStrides = {heads * keys * width, keys * width, width};
            for (int round = 0; round < ROUNDS; round++) {
                for (boolean bf16 : dtypes) {
                    MatVec.rows(bf16, matrix, input, null, y, 1 + round % 4, width, rows, 0, rows);
                    TokenOps.rmsNorm(bf16, x, matrix, y, 1, width, 1e-6);
                    TokenOps.gatedSilu(bf16, x, matrix, y, width);
                    TokenOps.rotary(bf16, x, strides, matrix, matrix, y, 1, heads, 1, width);
                    new DecodeAttention(bf16, x, strides, cache, cacheStrides, cache, cacheStrides, mask,
                            new long[] {0, 0}, y, heads, 1, 1, keys, width, 0.125).unit(round % heads);
                    TokenOps.argmax(bf16, matrix, y, 1, rows * width);
                }
            }
        }
    }
}
