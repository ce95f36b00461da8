package dev.crucible.accelerator.cpu.kernels;

/**
 * Per-thread working arrays, grown on demand and reused, so kernels called hundreds of times per token allocate
 * nothing: every array a decode step allocates is young-generation garbage, and the Java heap grows (and stays
 * resident) with the rate of it. Each slot is one array per thread; a kernel must not hold a slot across a call to
 * another kernel that uses the same slot.
 */
final class Scratch {
    static final int ROW = 0;
    static final int OTHER = 1;
    static final int SCORES = 2;
    static final int OUT = 3;
    static final int SIN = 4;
    private static final int SLOTS = 5;

    private static final ThreadLocal<Scratch> PER_THREAD = ThreadLocal.withInitial(Scratch::new);

    private final float[][] floats = new float[SLOTS][0];
    private short[] shorts = new short[0];

    private Scratch() {
    }

    /** The calling thread's float array for {@code slot}, at least {@code length} long (contents undefined). */
    static float[] floats(int slot, int length) {
        Scratch scratch = PER_THREAD.get();
        if (scratch.floats[slot].length < length) {
            scratch.floats[slot] = new float[length];
        }
        return scratch.floats[slot];
    }

    /** The calling thread's short array, at least {@code length} long, for bulk copies of bfloat16. */
    static short[] shorts(int length) {
        Scratch scratch = PER_THREAD.get();
        if (scratch.shorts.length < length) {
            scratch.shorts = new short[length];
        }
        return scratch.shorts;
    }
}
