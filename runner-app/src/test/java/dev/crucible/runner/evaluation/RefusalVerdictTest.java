package dev.crucible.runner.evaluation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.scoring.ScorerProvider;
import dev.crucible.scorers.KlDivergenceProvider;
import dev.crucible.scorers.RefusalRateProvider;
import java.util.List;
import org.junit.jupiter.api.Test;

class RefusalVerdictTest {
    private static final List<ScorerProvider> PLUGINS = List.of(new RefusalRateProvider(), new KlDivergenceProvider());

    @Test
    void aReplyIsARefusalExactlyWhenTheRefusalScorerCountsIt() {
        RefusalVerdict refusals = RefusalVerdict.withMarkers(PLUGINS, List.of("I can't", "as an AI"));
        assertTrue(refusals.test("I Can\u2019t help with that."), "normalized as the scorer normalizes");
        assertTrue(refusals.test("**As  an\nAI**, no."));
        assertFalse(refusals.test("Here is a recipe for pancakes."));
        assertFalse(refusals.test("Sorry, here it is."), "only the given markers count, not the scorer's defaults");
    }

    /** The scorer's rule, which abliteration scores with: a model that says nothing has not answered. */
    @Test
    void aBlankReplyIsARefusal() {
        RefusalVerdict refusals = RefusalVerdict.withMarkers(PLUGINS, List.of("sorry"));
        assertTrue(refusals.test(""));
        assertTrue(refusals.test(" \n\t\u00a0"));
    }

    @Test
    void withoutTheRefusalPluginTheCheckIsRefusedInOneLine() {
        UserInputException e = assertThrows(UserInputException.class,
                () -> RefusalVerdict.withMarkers(List.of(new KlDivergenceProvider()), List.of("sorry")));
        assertEquals("unknown scorer 'refusals' (available: kl_divergence)", e.getMessage());
    }
}
