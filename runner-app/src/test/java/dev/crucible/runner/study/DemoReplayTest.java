package dev.crucible.runner.study;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.runner.OracleVenv;
import dev.crucible.runner.abliterate.AblationParameters;
import dev.crucible.runner.abliterate.DemoAbliteration;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The demo-model abliteration as a benchmark. {@link #collect} evaluates the real objective (the default
 * {@code runner abliterate --seed 1} on the demo model) at the trials of real studies, a Crucible TPE study and an
 * Optuna TPE study per seed run in lockstep (trial t of one, then trial t of the other, so that whenever the
 * collection stops both samplers' regions are covered alike), and appends every evaluation to a CSV that the replay
 * reads. Evaluations already in the CSV are not run again (the objective is deterministic), so a stopped collection
 * continues where it was.
 */
class DemoReplayTest {

    private static Path root() {
        return Path.of(System.getProperty("crucible.repo.root", "..")).toAbsolutePath().normalize();
    }

    @Test
    void replaysEveryCachedEvaluationExactlyAndInterpolatesBetweenThem() {
        // A cache of a known smooth objective of the edit: refusals fall and KL rises with the total ablation weight.
        Map<String, ParameterDistribution> space = SearchProblem.ABLITERATION_SPACE;
        SplittableRandom random = new SplittableRandom(7);
        List<Map<String, Object>> rows = new ArrayList<>();
        for (int i = 0; i < 400; i++) {
            Map<String, Object> row = new LinkedHashMap<>();
            space.forEach((name, d) -> row.put(name, d.toExternal(RandomSampler.uniform(d, random))));
            double weight = totalWeight(row);
            row.put("refusals", Math.round(100 * Math.max(0, 1 - weight / 6)) / 100.0);
            row.put("kl_divergence", 1e-3 * Math.exp(weight));
            rows.add(row);
        }
        DemoReplay replay = DemoReplay.of(rows, space);
        for (Map<String, Object> row : rows) {
            assertArrayEquals(new double[] {(Double) row.get("refusals"), (Double) row.get("kl_divergence")},
                    replay.evaluate(row), "the cached evaluation of " + row);
        }
        double[] error = replay.leaveOneOutError();
        assertTrue(error[0] < 0.1, "refusal rates within 10 prompts on average: " + error[0]);
        assertTrue(error[1] < Math.log(2), "KL within a factor of 2 for half the points: " + Math.exp(error[1]));
        // Per-layer scope ignores the direction index, as the real edit does.
        Map<String, Object> perLayer = new LinkedHashMap<>(rows.stream()
                .filter(r -> r.get("direction_scope").equals("per_layer")).findFirst().orElseThrow());
        double[] before = replay.evaluate(perLayer);
        perLayer.put("direction_index", 0.5 + (Double) perLayer.get("direction_index") / 2);
        assertArrayEquals(before, replay.evaluate(perLayer));
    }

    /** The sum of the 4 layers' attention and MLP ablation weights the parameters give. */
    private static double totalWeight(Map<String, Object> row) {
        AblationParameters p = AblationParameters.fromTrial(row);
        double sum = 0;
        for (int layer = 0; layer < 4; layer++) {
            sum += p.attention().weightAt(layer).orElse(0) + p.mlp().weightAt(layer).orElse(0);
        }
        return sum;
    }

    /** The same check on the real cache of the demo model in demo-model/, where scripts/search-comparison.sh made one. */
    @Test
    void replaysTheDemoModelsCacheExactlyAndStaysCloseToTheEvaluationsItHasNotSeen() {
        Map<String, ParameterDistribution> space = SearchProblem.ABLITERATION_SPACE;
        List<Map<String, Object>> rows = DemoReplay.readRows(SearchComparisonTest.demoEvaluations(), space);
        DemoReplay replay = DemoReplay.of(rows, space);
        for (Map<String, Object> row : rows) {
            double[] replayed = replay.evaluate(row);
            assertEquals((Double) row.get("refusals"), replayed[0], "refusals of " + row);
            assertEquals((Double) row.get("kl_divergence"), replayed[1], "KL divergence of " + row);
        }
        // Each evaluation predicted from all the others: how far the replay is from the real objective off the cache.
        double[] error = replay.leaveOneOutError();
        System.out.printf(Locale.ROOT, "demo replay, %d evaluations, leave-one-out: mean |refusal rate error| %.3f,"
                + " median |log KL error| %.3f (a factor of %.2f)%n", rows.size(), error[0], error[1], Math.exp(error[1]));
        assertTrue(error[0] < 0.2, "refusal rates within 20 prompts on average: " + error[0]);
        assertTrue(error[1] < Math.log(2), "KL within a factor of 2 for half the points: " + Math.exp(error[1]));
    }

    @Test
    @EnabledIfSystemProperty(named = "crucible.search.collect", matches = ".+")
    void collect() throws Exception {
        Path csv = Path.of(System.getProperty("crucible.search.collect"));
        int firstSeed = Integer.getInteger("crucible.search.collect.first-seed", 1);
        int seeds = Integer.getInteger("crucible.search.collect.seeds", 2);
        Files.createDirectories(csv.toAbsolutePath().getParent());
        int trials = 200;
        Map<String, double[]> known = new HashMap<>();
        try (DemoAbliteration demo = new DemoAbliteration(root(), 1);
             OptunaTpe optuna = new OptunaTpe(OracleVenv.python(), root())) {
            Map<String, ParameterDistribution> space = demo.space().distributions();
            if (Files.exists(csv)) {
                for (Map<String, Object> row : DemoReplay.readRows(csv, space)) {
                    known.put(key(space, row), new double[] {(Double) row.get("refusals"), (Double) row.get("kl_divergence")});
                }
            }
            ReentrantLock turns = new ReentrantLock(true); // fair: the two studies take turns at the model
            try (BufferedWriter out = Files.newBufferedWriter(csv, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
                 ExecutorService pool = Executors.newFixedThreadPool(2)) {
                if (Files.size(csv) == 0) {
                    out.write("source,seed,trial," + String.join(",", space.keySet()) + ",refusals,kl_divergence\n");
                }
                for (int seed = firstSeed; seed < firstSeed + seeds; seed++) {
                    long s = seed;
                    Future<List<double[]>> ours = pool.submit(() -> SearchComparison.crucible(
                            real(demo, space, "crucible", s, known, turns, out), new TpeSampler(TpeSampler.Settings.defaults()), s, trials));
                    Future<List<double[]>> theirs = pool.submit(() -> optuna.run(real(demo, space, "optuna", s, known, turns, out),
                            s, trials, TpeSampler.Settings.DEFAULT_STARTUP_TRIALS, TpeSampler.Settings.DEFAULT_CANDIDATES));
                    report("crucible", s, ours);
                    report("optuna", s, theirs);
                }
            }
        }
    }

    private static void report(String source, long seed, Future<List<double[]>> study) throws InterruptedException, ExecutionException {
        System.out.printf(Locale.ROOT, "%s seed %d: hypervolume at 50/100/200 %s%n", source, seed,
                Arrays.toString(SearchComparison.hypervolumes(study.get(), new int[] {50, 100, 200}, new double[] {1.0, 0.2})));
    }

    /** The real objective, taking turns at the model, answering known points from the CSV and appending new ones. */
    private static SearchProblem real(DemoAbliteration demo, Map<String, ParameterDistribution> space, String source, long seed,
                                      Map<String, double[]> known, ReentrantLock turns, BufferedWriter out) {
        int[] trial = {0};
        return new SearchProblem("demo", space, new double[] {1.0, 0.2}, params -> {
            turns.lock();
            try {
                String key = key(space, params);
                double[] losses = known.get(key);
                if (losses == null) {
                    losses = demo.evaluate(params);
                    known.put(key, losses);
                    out.write(source + "," + seed + "," + trial[0] + "," + key + "," + losses[0] + "," + losses[1] + "\n");
                    out.flush();
                }
                trial[0]++;
                return losses;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } finally {
                turns.unlock();
            }
        });
    }

    private static String key(Map<String, ParameterDistribution> space, Map<String, Object> params) {
        return space.keySet().stream().map(k -> String.valueOf(params.get(k))).collect(Collectors.joining(","));
    }
}
