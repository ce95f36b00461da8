package dev.crucible.api.model;

/**
 * Rotary position embedding frequencies and their cos/sin tables, in the rotate_half convention: dimension
 * {@code j} of a head pairs with {@code j + headDim/2}, and both use frequency {@code j mod headDim/2}.
 *
 * <p>The arithmetic follows transformers' float32 computation ({@code modeling_rope_utils}) step by step, so
 * the tables match the reference to float32 rounding even for scaled frequencies.
 */
public final class RotaryEmbedding {

    private final int headDim;
    private final float[] inverseFrequencies;

    public RotaryEmbedding(ModelConfig config) {
        this(config.rotaryDims(), config.ropeTheta(), config.ropeScaling());
    }

    public RotaryEmbedding(int headDim, double theta, RopeScaling scaling) {
        if (headDim <= 0 || headDim % 2 != 0) {
            throw new IllegalArgumentException("head dimension must be positive and even: " + headDim);
        }
        this.headDim = headDim;
        this.inverseFrequencies = scaled(defaultFrequencies(headDim, theta), scaling);
    }

    public int headDim() {
        return headDim;
    }

    /** The {@code headDim / 2} inverse frequencies after scaling; a copy. */
    public float[] inverseFrequencies() {
        return inverseFrequencies.clone();
    }

    /** {@code cos(position · frequency)} for positions {@code [0, length)}, row-major {@code [length, headDim]}. */
    public float[] cosTable(int length) {
        return table(length, true);
    }

    /** {@code sin(position · frequency)} for positions {@code [0, length)}, row-major {@code [length, headDim]}. */
    public float[] sinTable(int length) {
        return table(length, false);
    }

    private float[] table(int length, boolean cosine) {
        int half = headDim / 2;
        float[] table = new float[Math.multiplyExact(length, headDim)];
        for (int position = 0; position < length; position++) {
            for (int i = 0; i < half; i++) {
                // float32 product, as the reference's inv_freq @ position_ids; then the float32 cos/sin of it.
                float angle = inverseFrequencies[i] * (float) position;
                float value = (float) (cosine ? Math.cos(angle) : Math.sin(angle));
                table[position * headDim + i] = value;
                table[position * headDim + i + half] = value;
            }
        }
        return table;
    }

    /** {@code 1 / theta^(2i/d)} with every intermediate rounded to float32. */
    static float[] defaultFrequencies(int headDim, double theta) {
        float base = (float) theta;
        float[] frequencies = new float[headDim / 2];
        for (int i = 0; i < frequencies.length; i++) {
            float exponent = (float) (2 * i) / (float) headDim;
            frequencies[i] = 1.0f / (float) Math.pow(base, exponent);
        }
        return frequencies;
    }

    private static float[] scaled(float[] frequencies, RopeScaling scaling) {
        return switch (scaling) {
            case RopeScaling.None none -> frequencies;
            case RopeScaling.Linear linear -> {
                float[] out = new float[frequencies.length];
                for (int i = 0; i < out.length; i++) {
                    out[i] = frequencies[i] / (float) linear.factor();
                }
                yield out;
            }
            case RopeScaling.Llama3 llama3 -> llama3Frequencies(frequencies, llama3);
        };
    }

    /**
     * Llama 3.1 scaling: long wavelengths are divided by {@code factor}, short ones kept, the band between blended.
     * Each step is a float32 tensor op in the reference (division by a tensor is reciprocal-then-multiply there).
     */
    static float[] llama3Frequencies(float[] frequencies, RopeScaling.Llama3 scaling) {
        float factor = (float) scaling.factor();
        float low = (float) scaling.lowFreqFactor();
        float high = (float) scaling.highFreqFactor();
        double oldContext = scaling.originalMaxPositions();
        double lowFrequencyWavelength = oldContext / scaling.lowFreqFactor();
        double highFrequencyWavelength = oldContext / scaling.highFreqFactor();
        float[] out = new float[frequencies.length];
        for (int i = 0; i < frequencies.length; i++) {
            float frequency = frequencies[i];
            float wavelength = (1.0f / frequency) * (float) (2 * Math.PI);
            float kept = wavelength > lowFrequencyWavelength ? frequency / factor : frequency;
            float smooth = ((1.0f / wavelength) * (float) oldContext - low) / (high - low);
            float smoothed = (1 - smooth) * kept / factor + smooth * kept;
            boolean medium = !(wavelength < highFrequencyWavelength) && !(wavelength > lowFrequencyWavelength);
            out[i] = medium ? smoothed : kept;
        }
        return out;
    }
}
