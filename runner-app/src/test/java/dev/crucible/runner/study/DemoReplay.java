package dev.crucible.runner.study;

import dev.crucible.runner.abliterate.AblationParameters;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The demo-model abliteration's objective replayed from a cache of real evaluations ({@link DemoReplayTest#collect}),
 * so that sampler comparisons over many seeds cost seconds instead of hours. The cache belongs to one demo model: it
 * lives under {@code target/search/}, named after the SHA-256 of {@code demo-model/model.safetensors}
 * ({@link #cacheFile}), so a rebuilt demo model gets a fresh cache ({@code scripts/search-comparison.sh} collects it)
 * instead of being compared on the old model's evaluations.
 *
 * <p>A point is described by the edit it makes, not by its raw parameters: the direction scope, the direction index
 * (global scope only; per-layer scope ignores it), and the ablation weight of each of the 4 layers' attention and MLP
 * components (0 where a layer is not edited). Many parameter points make the same edit, and these 8 weights are what
 * the model sees. The replayed losses are an inverse-distance-weighted mean of the {@value #NEIGHBOURS} nearest cached
 * edits of the same scope: refusals as a rate, rounded to whole prompts like the real score; KL divergence averaged in
 * log space (it spans three decades). It is an interpolation: where the cache has evaluations the replay returns
 * them, between them a blend, which can lie a little beyond the cached front (a geometric mean of KL values is below
 * their average). The cache was built by both samplers' real studies, so neither searches a region only the other
 * one taught it.
 */
final class DemoReplay {
    static final int NEIGHBOURS = 4;
    private static final int LAYERS = 4;
    /** The abliteration's weights are at most 1.5; the direction index spans its range once. */
    private static final double WEIGHT_SCALE = 1.5;
    /** KL of an edit that changes nothing is 0; log space needs a floor far below any real edit's. */
    private static final double MIN_KL = 1e-9;

    /** One cached evaluation: its edit's features and the real losses (refusal rate, KL divergence). */
    record Evaluation(boolean perLayer, double[] features, double refusals, double kl) {
    }

    private final List<Evaluation> cache;
    private final double directionLow;
    private final double directionRange;

    DemoReplay(List<Evaluation> cache, ParameterDistribution.FloatRange directionIndex) {
        this.cache = List.copyOf(cache);
        this.directionLow = directionIndex.low();
        this.directionRange = directionIndex.high() - directionIndex.low();
    }

    /** Where the cache of the demo model now in {@code repositoryRoot/demo-model} is (or will be) kept. */
    static Path cacheFile(Path repositoryRoot) {
        Path weights = repositoryRoot.resolve("demo-model/model.safetensors");
        try (InputStream in = Files.newInputStream(weights)) {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            byte[] buffer = new byte[1 << 16];
            for (int n; (n = in.read(buffer)) > 0; ) {
                sha.update(buffer, 0, n);
            }
            String hex = HexFormat.of().formatHex(sha.digest());
            return repositoryRoot.resolve("target/search/demo-evaluations-" + hex.substring(0, 12) + ".csv");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Reads the CSV {@link DemoReplayTest#collect} writes (header: source, seed, trial, the parameters, refusals, kl_divergence). */
    static List<Map<String, Object>> readRows(Path csv, Map<String, ParameterDistribution> space) {
        List<String> lines;
        try {
            lines = Files.readAllLines(csv);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> header = List.of(lines.getFirst().split(","));
        List<Map<String, Object>> rows = new ArrayList<>();
        for (String line : lines.subList(1, lines.size())) {
            String[] cells = line.split(",");
            Map<String, Object> row = new LinkedHashMap<>();
            for (int i = 0; i < header.size(); i++) {
                String name = header.get(i);
                ParameterDistribution d = space.get(name);
                row.put(name, d instanceof ParameterDistribution.Categorical || name.equals("source") ? cells[i]
                        : Double.valueOf(cells[i]));
            }
            rows.add(row);
        }
        return rows;
    }

    static DemoReplay of(List<Map<String, Object>> rows, Map<String, ParameterDistribution> space) {
        var directionIndex = (ParameterDistribution.FloatRange) space.get("direction_index");
        DemoReplay empty = new DemoReplay(List.of(), directionIndex);
        List<Evaluation> cache = new ArrayList<>();
        for (Map<String, Object> row : rows) {
            AblationParameters p = AblationParameters.fromTrial(row);
            cache.add(new Evaluation(p.perLayerScope(), empty.features(p), (Double) row.get("refusals"),
                    (Double) row.get("kl_divergence")));
        }
        return new DemoReplay(cache, directionIndex);
    }

    /** The edit's coordinates: each layer's attention then MLP weight over 1.5, then the direction index over its range. */
    private double[] features(AblationParameters p) {
        double[] f = new double[2 * LAYERS + 1];
        for (int layer = 0; layer < LAYERS; layer++) {
            f[layer] = p.attention().weightAt(layer).orElse(0) / WEIGHT_SCALE;
            f[LAYERS + layer] = p.mlp().weightAt(layer).orElse(0) / WEIGHT_SCALE;
        }
        // Per-layer scope uses one fixed direction per layer: the index is not part of its edit.
        f[2 * LAYERS] = p.perLayerScope() ? 0 : (p.directionIndex() - directionLow) / directionRange;
        return f;
    }

    /** The replayed (refusal rate, KL divergence) of a parameter point. */
    double[] evaluate(Map<String, Object> params) {
        AblationParameters p = AblationParameters.fromTrial(params);
        return predict(p.perLayerScope(), features(p), cache);
    }

    private static double[] predict(boolean perLayer, double[] x, List<Evaluation> from) {
        double[] bestDistances = new double[NEIGHBOURS];
        Evaluation[] best = new Evaluation[NEIGHBOURS];
        Arrays.fill(bestDistances, Double.POSITIVE_INFINITY);
        for (Evaluation e : from) {
            if (e.perLayer() != perLayer) {
                continue;
            }
            double d = 0;
            for (int j = 0; j < x.length; j++) {
                d += (x[j] - e.features()[j]) * (x[j] - e.features()[j]);
            }
            for (int k = 0; k < NEIGHBOURS; k++) {
                if (d < bestDistances[k]) {
                    System.arraycopy(bestDistances, k, bestDistances, k + 1, NEIGHBOURS - k - 1);
                    System.arraycopy(best, k, best, k + 1, NEIGHBOURS - k - 1);
                    bestDistances[k] = d;
                    best[k] = e;
                    break;
                }
            }
        }
        if (best[0] == null) {
            throw new IllegalStateException("the cache has no evaluation of this direction scope");
        }
        if (bestDistances[0] == 0) {
            return new double[] {best[0].refusals(), best[0].kl()};
        }
        double weights = 0;
        double refusals = 0;
        double logKl = 0;
        for (int k = 0; k < NEIGHBOURS && best[k] != null; k++) {
            double w = 1 / bestDistances[k]; // squared distances: weights 1/d^2
            weights += w;
            refusals += w * best[k].refusals();
            logKl += w * Math.log(Math.max(best[k].kl(), MIN_KL));
        }
        return new double[] {Math.round(100 * refusals / weights) / 100.0, Math.exp(logKl / weights)};
    }

    /**
     * Leave-one-out check of the replay against the real evaluations: each cached point predicted from all the
     * others. Returns {mean absolute refusal-rate error, median absolute log KL error}.
     */
    double[] leaveOneOutError() {
        double refusalError = 0;
        double[] logKlErrors = new double[cache.size()];
        for (int i = 0; i < cache.size(); i++) {
            List<Evaluation> others = new ArrayList<>(cache);
            Evaluation held = others.remove(i);
            double[] predicted = predict(held.perLayer(), held.features(), others);
            refusalError += Math.abs(predicted[0] - held.refusals());
            logKlErrors[i] = Math.abs(Math.log(predicted[1]) - Math.log(Math.max(held.kl(), MIN_KL)));
        }
        Arrays.sort(logKlErrors);
        return new double[] {refusalError / cache.size(), logKlErrors[logKlErrors.length / 2]};
    }
}
