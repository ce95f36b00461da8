package dev.crucible.runner.abliterate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.scoring.Optimization;
import dev.crucible.api.scoring.Score;
import dev.crucible.runner.study.FrozenTrial;
import dev.crucible.runner.study.Objective;
import dev.crucible.runner.study.TrialState;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SelectionAndPrefixTest {
    private static final List<Objective> OBJECTIVES = List.of(new Objective("refusals", Optimization.MINIMIZE),
            new Objective("kl_divergence", Optimization.MINIMIZE));

    private static FrozenTrial trial(int number, double refusals, double kl) {
        return new FrozenTrial(number, TrialState.COMPLETE, Map.of(), Map.of(), List.of(Score.of(refusals), Score.of(kl)),
                Instant.EPOCH, Instant.EPOCH, null);
    }

    @Test
    void bestIsTheFewestRefusalsWithinTheKlBudgetTiesByLowerKl() {
        List<FrozenTrial> front = List.of(trial(1, 0.02, 0.9), trial(2, 0.05, 0.30), trial(3, 0.05, 0.20), trial(4, 0.40, 0.01));
        assertEquals(3, TrialSelection.best(front, OBJECTIVES, 0.5).orElseThrow().number());
        assertEquals(1, TrialSelection.best(front, OBJECTIVES, 1.0).orElseThrow().number());
        assertEquals(4, TrialSelection.best(front, OBJECTIVES, 0.05).orElseThrow().number());
        assertTrue(TrialSelection.best(front, OBJECTIVES, 0.001).isEmpty());
    }

    @Test
    void numbersMustExist() {
        List<FrozenTrial> trials = List.of(trial(0, 1, 0), trial(1, 1, 0));
        assertEquals(1, TrialSelection.byNumber(trials, 1).number());
        UserInputException e = assertThrows(UserInputException.class, () -> TrialSelection.byNumber(trials, 7));
        assertEquals("there is no trial 7 in this study (it has trials 0..1)", e.getMessage());
        assertThrows(UserInputException.class, () -> TrialSelection.parseNumber("seven"));
    }

    @Test
    void aSharedThoughtBlockBecomesTheResponsePrefix() {
        assertEquals("<think>\n\n</think>\n\n", ResponsePrefix.fromAnswers(List.of("<think>\n\n</think>\n\nSure", "<think>\n\n</think>\n\nNo")));
        assertEquals(ResponsePrefix.CLOSED_THOUGHT, ResponsePrefix.fromAnswers(List.of("<think>\nOkay, the user", "<think>\nHmm")));
        assertEquals("", ResponsePrefix.fromAnswers(List.of("I'm sorry", "I can help")), "a common word is not a prefix");
        assertEquals("", ResponsePrefix.fromAnswers(List.of()));
    }
}
