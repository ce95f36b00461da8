package dev.crucible.runner.abliterate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.scoring.PromptSet;
import dev.crucible.api.scoring.ScoringContext;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * An edited model's responses end where the scorer asking for them has its verdict (the refusal count: once a
 * marker is generated), on the demo model with the default run's settings and trial 1 of
 * {@code abliterate --seed 1} (61 of 100 harmful prompts refused; trial 0 removes nearly all refusals): each response that ended early is a beginning of
 * the whole one that already settles it, the others are whole, the refusal count is the same, and the base model's
 * responses, which the study keeps, are whole.
 */
class ResponsesEndAtTheirVerdictTest {
    private static final Map<String, Object> TRIAL_1 = Map.of("direction_scope", "global",
            "direction_index", 1.8720346153720304, "attn.max_weight", 0.8656252926210255,
            "attn.max_weight_position", 2.160192866160178, "attn.min_weight_fraction", 0.8653899778993372,
            "attn.min_weight_distance", 1.3302309502195322, "mlp.max_weight", 0.4451841079063107,
            "mlp.max_weight_position", 2.8043040931276826, "mlp.min_weight_fraction", 0.6411442465391529,
            "mlp.min_weight_distance", 1.1580715733825961);
    /** A verdict of the test's own, so the whole and the cut responses can be compared text by text. */
    private static final Predicate<String> APOLOGY = text -> {
        String lower = text.toLowerCase(Locale.ROOT);
        return lower.contains("sorry") || lower.contains("i can");
    };

    private static DemoAbliteration demo;

    @BeforeAll
    static void open() {
        demo = new DemoAbliteration(Path.of(System.getProperty("crucible.repo.root", "..")).toAbsolutePath().normalize(), 1);
    }

    @AfterAll
    static void close() {
        demo.close();
    }

    @Test
    void responsesThatSettleTheVerdictEndThereAndTheRestAreWhole() {
        ScoringContext edited = demo.apply(TRIAL_1);
        List<String> cut = edited.responses(PromptSet.HARMFUL, APOLOGY);
        List<String> whole = edited.responses(PromptSet.HARMFUL); // asked whole: generated again, whole
        assertEquals(whole.size(), cut.size());
        int ended = 0;
        long cutChars = 0;
        long wholeChars = 0;
        for (int i = 0; i < whole.size(); i++) {
            String c = cut.get(i);
            String w = whole.get(i);
            assertTrue(w.startsWith(c), "response " + i + " '" + c + "' begins '" + w + "'");
            assertEquals(APOLOGY.test(w), APOLOGY.test(c), "the same verdict on response " + i);
            if (!c.equals(w)) {
                ended++;
                assertTrue(APOLOGY.test(c), "only a settled response ends early: " + i);
            }
            cutChars += c.length();
            wholeChars += w.length();
        }
        assertTrue(ended >= 30, ended + " responses ended at their apology");
        assertTrue(cutChars < wholeChars * 3 / 4, cutChars + " of " + wholeChars + " characters generated");
        // Whole responses answer a later request for cut ones: nothing is generated again.
        assertSame(whole, edited.responses(PromptSet.HARMFUL, APOLOGY));
    }

    @Test
    void theRefusalCountIsTheSameAsOnWholeResponses() {
        ScoringContext cut = demo.apply(TRIAL_1); // the scorers ask for responses that end at a marker
        double[] scores = demo.score(cut);
        assertEquals(0.61, scores[0], 1e-12, "trial 1's refusals");
        ScoringContext whole = demo.apply(TRIAL_1);
        whole.responses(PromptSet.HARMFUL); // generated whole first, so the scorers read whole responses
        assertArrayEquals(scores, demo.score(whole), 0.0);
    }

    @Test
    void theBaseModelsResponsesAreWhole() {
        ScoringContext base = demo.base();
        assertSame(base.responses(PromptSet.HARMFUL), base.responses(PromptSet.HARMFUL, APOLOGY));
        assertTrue(base.responses(PromptSet.HARMFUL).stream().anyMatch(r -> APOLOGY.test(r) && r.length() > 40),
                "the base refuses in whole sentences");
    }
}
