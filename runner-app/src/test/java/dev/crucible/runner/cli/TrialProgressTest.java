package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.scoring.Optimization;
import dev.crucible.api.scoring.Score;
import dev.crucible.runner.abliterate.AblationParameters;
import dev.crucible.runner.study.FrozenTrial;
import dev.crucible.runner.study.Objective;
import dev.crucible.runner.study.TrialState;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TrialProgressTest {
    private static final List<Objective> OBJECTIVES = List.of(new Objective("refusals", Optimization.MINIMIZE));
    private static final AblationParameters PARAMETERS = new AblationParameters(false, 1.5,
            new AblationParameters.WeightProfile(1, 2, 0.5, 1), new AblationParameters.WeightProfile(0, 2, 0, 1));

    private static String run(boolean redraw, int already, int target) {
        StringWriter text = new StringWriter();
        try (TrialProgress progress = new TrialProgress(new PrintWriter(text), redraw, target, already, OBJECTIVES)) {
            for (int n = already; n < target; n++) {
                progress.trialStarted(n, PARAMETERS);
                progress.trialFinished(trial(n), PARAMETERS);
            }
        }
        return text.toString();
    }

    private static FrozenTrial trial(int number) {
        Instant start = Instant.EPOCH;
        return new FrozenTrial(number, TrialState.COMPLETE, Map.of(), Map.of(), List.of(Score.of(number)), start,
                start.plus(Duration.ofSeconds(1)), null);
    }

    @Test
    void offATerminalTheBarIsALineEveryTenTrialsAndAfterTheLast() {
        String out = run(false, 0, 23);
        assertFalse(out.contains("\r"), "no carriage returns in a log");
        List<String> lines = out.lines().toList();
        List<String> bars = lines.stream().filter(l -> l.startsWith("[#") || l.startsWith("[-")).toList();
        assertEquals(3, bars.size(), out);
        assertTrue(bars.get(0).contains(" 10/23 ") && bars.get(1).contains(" 20/23 ") && bars.get(2).contains(" 23/23 "), out);
        for (int n = 0; n < 23; n++) {
            String prefix = "[Trial " + n + "] ";
            assertEquals(1, lines.stream().filter(l -> l.startsWith(prefix)).count(), prefix);
        }
        assertEquals(23 + 3, lines.size(), out);
    }

    @Test
    void aContinuedStudyCountsFromWhereItWas() {
        List<String> bars = run(false, 15, 27).lines().filter(l -> l.startsWith("[#")).toList();
        assertEquals(2, bars.size(), bars.toString());
        assertTrue(bars.get(0).contains(" 25/27 ") && bars.get(1).contains(" 27/27 "), bars.toString());
    }

    @Test
    void onATerminalOneBarIsRedrawnUnderTheTrialLines() {
        String out = run(true, 0, 12);
        assertTrue(out.contains("\r"), "redrawn in place");
        List<String> screen = Screen.of(out);
        List<String> expected = new ArrayList<>();
        for (int n = 0; n < 12; n++) {
            expected.add("[Trial " + n + "] Refusals: " + Score.of(n).display() + "  (" + PARAMETERS + ")");
        }
        assertEquals(expected, screen.subList(0, 12), out);
        assertEquals(13, screen.size(), "the trial lines and one bar under them: " + screen);
        assertTrue(screen.getLast().startsWith("[####################] 12/12 100%"), screen.getLast());
        assertTrue(screen.getLast().length() < 80, "fits an 80-column terminal: " + screen.getLast());
        assertTrue(out.endsWith("\n"), "the last bar's line is ended");
    }
}
