package dev.crucible.runner.study;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.runner.OracleVenv;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Crucible's TPE against Optuna 5.0's multivariate TPE (the reference tool's sampler) at equal trials and seeds.
 * The quick tests run in the suite; {@code scripts/search-comparison.sh} runs the full comparison (every problem,
 * 10 seeds, 50/100/200 trials) through {@link #fullComparison}, whose table docs/search.md quotes.
 */
class SearchComparisonTest {
    private static final int STARTUP = TpeSampler.Settings.DEFAULT_STARTUP_TRIALS;
    private static final int CANDIDATES = TpeSampler.Settings.DEFAULT_CANDIDATES;
    /** The demo model refuses 97 of the 100 harmful test prompts before editing. */
    private static final double DEMO_BASE_REFUSALS = 0.97;
    /** The reference tool's default KL target. */
    private static final double KL_TARGET = 0.01;

    private static Path root() {
        return Path.of(System.getProperty("crucible.repo.root", "..")).toAbsolutePath().normalize();
    }

    /**
     * The cached real evaluations of the demo model now in demo-model/ ({@code -Dcrucible.search.demo-evaluations}
     * names another file); the calling test is skipped where none was collected for this model.
     */
    static Path demoEvaluations() {
        String named = System.getProperty("crucible.search.demo-evaluations", "");
        Path csv = named.isEmpty() ? DemoReplay.cacheFile(root()) : Path.of(named);
        Assumptions.assumeTrue(Files.isRegularFile(csv), "no cached evaluations of this demo model at " + csv
                + " (scripts/search-comparison.sh collects them)");
        return csv;
    }

    @Test
    void notWorseThanOptunaOnZdt1OnTheAbliterationSpace() {
        assertNotWorseThanOptuna(SearchProblem.zdtOnAbliterationSpace(1), 100, 5);
    }

    @Test
    void notWorseThanOptunaOnTheDemoAbliterationReplay() {
        assertNotWorseThanOptuna(SearchProblem.demoReplay(demoEvaluations()), 200, 4);
    }

    /** Crucible's mean hypervolume at {@code trials} must not fall below Optuna's by more than two standard errors. */
    private static void assertNotWorseThanOptuna(SearchProblem problem, int trials, int seedCount) {
        long[] seeds = LongStream.rangeClosed(1, seedCount).toArray();
        int[] checkpoints = {trials};
        SearchComparison.Measurement ours = SearchComparison.measureCrucible("Crucible TPE", problem,
                () -> new TpeSampler(TpeSampler.Settings.defaults()), seeds, checkpoints);
        SearchComparison.Measurement optuna;
        try (OptunaTpe tpe = new OptunaTpe(OracleVenv.python(), root())) {
            optuna = SearchComparison.measureOptuna("Optuna 5.0 TPE", tpe, problem, STARTUP, CANDIDATES, seeds, checkpoints);
        }
        System.out.print(SearchComparison.table(Map.of(problem, List.of(ours, optuna))));
        double[] a = ours.atCheckpoint(0);
        double[] b = optuna.atCheckpoint(0);
        double margin = 2 * SearchComparison.standardError(a, b);
        assertTrue(SearchComparison.mean(a) >= SearchComparison.mean(b) - margin, problem.name() + ": Crucible's mean hypervolume "
                + SearchComparison.mean(a) + " is below Optuna's " + SearchComparison.mean(b) + " by more than " + margin);
    }

    @Test
    @EnabledIfSystemProperty(named = "crucible.search.report", matches = ".+")
    void fullComparison() throws IOException {
        int seedCount = Integer.getInteger("crucible.search.seeds", 10);
        long[] seeds = LongStream.rangeClosed(1, seedCount).toArray();
        int[] checkpoints = {50, 100, 200};
        String only = System.getProperty("crucible.search.problems", "");
        StringBuilder report = new StringBuilder();
        try (OptunaTpe tpe = new OptunaTpe(OracleVenv.python(), root())) {
            Map<SearchProblem, List<SearchComparison.Measurement>> zdt = new LinkedHashMap<>();
            for (SearchProblem problem : List.of(
                    SearchProblem.zdtOnAbliterationSpace(1), SearchProblem.zdtOnAbliterationSpace(2), SearchProblem.zdtOnAbliterationSpace(3),
                    SearchProblem.zdtContinuous(1), SearchProblem.zdtContinuous(2), SearchProblem.zdtContinuous(3))) {
                if (problem.name().matches(only.isEmpty() ? ".*" : only)) {
                    zdt.put(problem, List.of(crucible(problem, seeds, checkpoints),
                            SearchComparison.measureOptuna("Optuna 5.0 TPE", tpe, problem, STARTUP, CANDIDATES, seeds, checkpoints)));
                    System.out.print(SearchComparison.table(Map.of(problem, zdt.get(problem))));
                }
            }
            if (!zdt.isEmpty()) {
                report.append(SearchComparison.table(zdt)).append('\n');
            }
            SearchProblem demo = SearchProblem.demoReplay(demoEvaluations());
            if (demo.name().matches(only.isEmpty() ? ".*" : only)) {
                // Optuna told the reference tool's objectives (relative refusals, KL target) is the search as that
                // tool runs it; the hypervolume is of the real (refusals / 100, KL) either way.
                SearchProblem asHeretic = demo.shaped("", SearchProblem.klTarget(DEMO_BASE_REFUSALS, KL_TARGET));
                Map<SearchProblem, List<SearchComparison.Measurement>> replay = Map.of(demo, List.of(
                        crucible(demo, seeds, checkpoints),
                        SearchComparison.measureOptuna("Optuna 5.0 TPE", tpe, demo, STARTUP, CANDIDATES, seeds, checkpoints),
                        SearchComparison.measureOptuna("Optuna 5.0 TPE, KL target 0.01", tpe, asHeretic, STARTUP, CANDIDATES, seeds, checkpoints),
                        SearchComparison.measureCrucible("Crucible TPE, KL target 0.01", asHeretic,
                                () -> new TpeSampler(TpeSampler.Settings.defaults()), seeds, checkpoints)));
                System.out.print(SearchComparison.table(replay));
                report.append(SearchComparison.table(replay));
            }
        }
        Files.writeString(Path.of(System.getProperty("crucible.search.report")), report);
    }

    private static SearchComparison.Measurement crucible(SearchProblem problem, long[] seeds, int[] checkpoints) {
        return SearchComparison.measureCrucible("Crucible TPE", problem, () -> new TpeSampler(TpeSampler.Settings.defaults()),
                seeds, checkpoints);
    }
}
