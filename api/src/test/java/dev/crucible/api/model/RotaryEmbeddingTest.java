package dev.crucible.api.model;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class RotaryEmbeddingTest {

    @Test
    void defaultFrequenciesAreInverseThetaPowers() {
        float[] frequencies = new RotaryEmbedding(8, 10000.0, new RopeScaling.None()).inverseFrequencies();
        assertEquals(4, frequencies.length);
        for (int i = 0; i < 4; i++) {
            assertEquals(Math.pow(10000.0, -2.0 * i / 8), frequencies[i], 1e-7 * Math.pow(10000.0, -2.0 * i / 8));
        }
    }

    /** The scaled values tabulated in tiny-llama3-rope/README.md (transformers' _compute_llama3_parameters). */
    @Test
    void llama3ScalingKeepsHighDividesLowAndSmoothsTheBandBetween() {
        float[] frequencies = new RotaryEmbedding(16, 500000.0, new RopeScaling.Llama3(8.0, 1.0, 4.0, 64))
                .inverseFrequencies();
        double[] expected = {1, 0.079403, 0.00470075, 0.000911583, 0.000176777, 3.4281e-05, 6.64787e-06, 1.28917e-06};
        for (int i = 0; i < expected.length; i++) {
            assertEquals(expected[i], frequencies[i], 1e-5 * expected[i], "frequency " + i);
        }
    }

    @Test
    void linearScalingDividesEveryFrequency() {
        float[] plain = new RotaryEmbedding(8, 10000.0, new RopeScaling.None()).inverseFrequencies();
        float[] scaled = new RotaryEmbedding(8, 10000.0, new RopeScaling.Linear(4.0)).inverseFrequencies();
        for (int i = 0; i < plain.length; i++) {
            assertEquals(plain[i] / 4, scaled[i], 0);
        }
    }

    @Test
    void tablesRepeatEachFrequencyInBothHalves() {
        RotaryEmbedding rotary = new RotaryEmbedding(4, 100.0, new RopeScaling.None());
        float[] cos = rotary.cosTable(3);
        float[] sin = rotary.sinTable(3);
        float[] frequencies = rotary.inverseFrequencies();
        for (int position = 0; position < 3; position++) {
            for (int i = 0; i < 2; i++) {
                float angle = frequencies[i] * position;
                assertEquals((float) Math.cos(angle), cos[position * 4 + i]);
                assertEquals(cos[position * 4 + i], cos[position * 4 + i + 2]);
                assertEquals((float) Math.sin(angle), sin[position * 4 + i + 2]);
            }
        }
    }
}
