package dev.crucible.runner.abliterate;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PassProgressTest {
    private long now;

    @Test
    void reportsAtMostEveryTenSecondsWithAnEstimateAndNothingAtTheEnd() {
        List<String> lines = new ArrayList<>();
        PassProgress pass = new PassProgress("residuals", 800, lines::add, () -> now);
        now = 4_000_000_000L;
        pass.done(64);
        assertEquals(List.of(), lines, "a fast slice says nothing");
        now = 20_000_000_000L;
        pass.done(136);
        assertEquals(List.of("residuals: 200 of 800 prompts done, 0:20 elapsed, ~1:00 left"), lines);
        now = 25_000_000_000L;
        pass.done(100);
        assertEquals(1, lines.size(), "five seconds after the last line: quiet");
        now = 200_000_000_000L;
        pass.done(500);
        assertEquals(1, lines.size(), "the pass is over: its own next line says so");
    }
}
