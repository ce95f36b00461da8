package dev.crucible.runner.study;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Reference values from scipy.special and mpmath (60 digits). */
class NormalMathTest {

    private static void assertRelative(double expected, double actual, double tolerance) {
        assertEquals(expected, actual, Math.abs(expected) * tolerance, () -> "expected " + expected + " got " + actual);
    }

    @Test
    void erfAndErfcMatchReferenceOnBothSidesOfTheSeriesSwitch() {
        double[][] table = {
                {0.1, 0.8875370839817152, 0.1124629160182849},
                {0.5, 0.4795001221869535, 0.5204998778130465},
                {1.0, 0.15729920705028516, 0.8427007929497148},
                {1.4, 0.04771488023735121, 0.9522851197626487},
                {1.6, 0.023651616655355978, 0.976348383344644},
                {2.0, 0.004677734981047266, 0.9953222650189527},
                {3.0, 2.2090496998585445e-05, 0.9999779095030014},
                {5.0, 1.5374597944280347e-12, 0.9999999999984626},
                {10.0, 2.0884875837625446e-45, 1.0},
        };
        for (double[] row : table) {
            assertRelative(row[1], NormalMath.erfc(row[0]), 5e-15);
            assertRelative(row[2], NormalMath.erf(row[0]), 5e-15);
            assertRelative(-row[2], NormalMath.erf(-row[0]), 5e-15);
            assertRelative(2 - row[1], NormalMath.erfc(-row[0]), 5e-15);
        }
    }

    @Test
    void logErfcStaysFiniteWhereErfcUnderflows() {
        assertTrue(NormalMath.erfc(27.0) < 1e-300, "erfc(27) is subnormal");
        assertRelative(-732.8688865078974, NormalMath.logErfc(27.0), 1e-14);
        assertRelative(-10005.177585122665, NormalMath.logErfc(100.0), 1e-14);
    }

    @Test
    void logCdfIsAccurateInBothTails() {
        double[][] table = {
                {-40.0, -804.6084420137539}, {-10.0, -53.23128515051248}, {-3.0, -6.60772622151035},
                {-0.5, -1.1759117615936188}, {0.0, -0.6931471805599453}, {0.5, -0.36894641528865635},
                {3.0, -0.0013508099647481925}, {10.0, -7.61985302416047e-24},
        };
        for (double[] row : table) {
            assertRelative(row[1], NormalMath.logCdf(row[0]), 1e-13);
        }
    }

    @Test
    void logMassKeepsDigitsForNarrowAndFarIntervals() {
        assertRelative(-765.0831565643775, NormalMath.logMass(-40, -39), 1e-13);
        assertRelative(-454.32124395634327, NormalMath.logMass(30, 31), 1e-13);
        assertRelative(-20.949057189591137, NormalMath.logMass(-1e-9, 1e-9), 1e-13);
        assertRelative(-15.068446096529453, NormalMath.logMass(5, 6), 1e-13);
        assertRelative(-0.3689464152886564, NormalMath.logMass(-100, 0.5), 1e-13);
        assertEquals(Double.NEGATIVE_INFINITY, NormalMath.logMass(1, 1));
    }

    @Test
    void inverseCdfMatchesReferenceIncludingFarTails() {
        double[][] table = {
                {1e-300, -37.0470962993612}, {1e-20, -9.262340089798409}, {1e-05, -4.264890793922825},
                {0.02, -2.053748910631823}, {0.3, -0.5244005127080409}, {0.9, 1.2815515655446004},
                {0.999999, 4.753424308817087},
        };
        for (double[] row : table) {
            assertRelative(row[1], NormalMath.inverseCdf(row[0]), 1e-12);
        }
        assertEquals(0.0, NormalMath.inverseCdf(0.5), 1e-15);
        // Round trip where p itself carries full precision (near 1, p keeps only the digits of 1 - p).
        for (double z = -8; z <= 1; z += 0.37) {
            assertEquals(z, NormalMath.inverseCdf(NormalMath.cdf(z)), 1e-13 * Math.max(1, Math.abs(z)));
        }
    }
}
