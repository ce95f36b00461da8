package dev.crucible.scorers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.scoring.Optimization;
import dev.crucible.api.scoring.PromptSet;
import dev.crucible.api.scoring.Score;
import dev.crucible.api.scoring.Scorer;
import java.util.Map;
import org.junit.jupiter.api.Test;

class KlDivergenceTest {

    private static final float NEG_INF = Float.NEGATIVE_INFINITY;

    private static float[] logs(double... probabilities) {
        float[] row = new float[probabilities.length];
        for (int i = 0; i < row.length; i++) {
            row[i] = (float) Math.log(probabilities[i]);
        }
        return row;
    }

    private static Scorer create(Map<String, Object> settings) {
        return new KlDivergenceProvider().create("kl_divergence", settings);
    }

    private static Score score(float[][] base, float[][] current) {
        return create(Map.of()).score(FakeContext.ofLogProbs(PromptSet.HARMLESS, base, current));
    }

    @Test
    void matchesAHandComputation() {
        // Prompt 1: P = (1/2, 1/4, 1/4), Q = (1/4, 1/2, 1/4): 1/2 ln 2 + 1/4 ln(1/2) = 1/4 ln 2.
        // Prompt 2: P = (1, 0, 0), Q = (1/2, 1/4, 1/4): ln 2; P's zeros contribute nothing.
        float[][] base = {logs(0.5, 0.25, 0.25), {0f, NEG_INF, NEG_INF}};
        float[][] current = {logs(0.25, 0.5, 0.25), logs(0.5, 0.25, 0.25)};
        Score score = score(base, current);
        double expected = (0.25 * Math.log(2) + Math.log(2)) / 2;
        assertEquals(expected, score.value(), 1e-7);
        assertEquals("0.4332", score.display());
    }

    @Test
    void identicalDistributionsGiveExactlyZero() {
        float[][] rows = {logs(0.7, 0.2, 0.1), logs(0.01, 0.01, 0.98), {0f, NEG_INF, NEG_INF}};
        Score score = score(rows, rows.clone());
        assertEquals(0.0, score.value());
        assertEquals("0.0000", score.display());
    }

    @Test
    void rowsAreRenormalizedSoUnnormalizedLogitsGiveTheSameDivergence() {
        float[][] base = {logs(0.5, 0.25, 0.25)};
        float[][] current = {logs(0.25, 0.5, 0.25)};
        float[][] shifted = {{current[0][0] + 3f, current[0][1] + 3f, current[0][2] + 3f}};
        assertEquals(score(base, current).value(), score(base, shifted).value(), 1e-7);
    }

    @Test
    void tokenTheBaseEmitsButTheEditCannotMakesItInfinite() {
        Score score = score(new float[][] {logs(0.5, 0.5)}, new float[][] {{0f, NEG_INF}});
        assertEquals(Double.POSITIVE_INFINITY, score.value());
        assertEquals("inf", score.display());
    }

    @Test
    void baselineIsZeroAndDirectionIsMinimize() {
        Scorer scorer = create(Map.of());
        assertEquals(new Score(0.0, "0.0000"), scorer.baseline(FakeContext.ofLogProbs(PromptSet.HARMLESS,
                new float[][] {logs(1.0)}, new float[][] {logs(1.0)})));
        assertEquals(Optimization.MINIMIZE, scorer.defaultOptimization());
        assertEquals("kl_custom", new KlDivergenceProvider().create("kl_custom", null).name());
    }

    @Test
    void promptSetAndMistakes() {
        Scorer harmful = create(Map.of("prompt_set", "harmful"));
        float[][] rows = {logs(0.5, 0.5)};
        assertEquals(Math.log(2) * 0.5 + 0.5 * Math.log(0.5 / 0.75) , harmful.score(
                FakeContext.ofLogProbs(PromptSet.HARMFUL, rows, new float[][] {logs(0.25, 0.75)})).value(), 1e-7);
        UserInputException e = assertThrows(UserInputException.class, () -> create(Map.of("markers", "x")));
        assertEquals("scorer 'kl_divergence': unknown setting 'markers'; accepted: prompt_set", e.getMessage());
        assertThrows(IllegalStateException.class, () -> score(new float[][] {logs(1.0)}, new float[0][]));
        assertThrows(IllegalStateException.class,
                () -> score(new float[][] {logs(0.5, 0.5)}, new float[][] {logs(1.0)}));
        assertThrows(UserInputException.class, () -> score(new float[0][], new float[0][]));
        assertTrue(Double.isNaN(score(new float[][] {{Float.NaN, 0f}}, new float[][] {logs(0.5, 0.5)}).value()));
    }
}
