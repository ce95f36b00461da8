package dev.crucible.runner.abliterate;

import dev.crucible.api.UserInputException;
import dev.crucible.runner.study.ParameterDistribution;
import dev.crucible.runner.study.Trial;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The method's parameter space for a model with {@code numLayers} layers (L = numLayers − 1): direction scope
 * {global, per_layer}; direction_index U[0.4L, 0.9L]; attention max_weight U[0.8, 1.5]; MLP max_weight
 * U[−0.25, 1.5] clamped at 0; max_weight_position U[0.6L, L]; min_weight = U[0, 1] × max_weight;
 * min_weight_distance U[1, max(0.6L, 1)]. Parameter names are what the study journal records.
 */
public final class SearchSpace {
    private final int lastLayer;
    private final List<String> scopes;

    /** The full space: both direction scopes. */
    public SearchSpace(int numLayers) {
        this(numLayers, List.of("global", "per_layer"));
    }

    /** @param scopes the direction scopes the optimizer may choose ({@code global}, {@code per_layer}) */
    public SearchSpace(int numLayers, List<String> scopes) {
        if (scopes.isEmpty()) {
            throw new UserInputException("direction_scopes is empty; allow global, per_layer or both");
        }
        this.scopes = List.copyOf(scopes);
        if (numLayers < 2) {
            throw new UserInputException("abliteration needs a model with at least 2 layers, this one has " + numLayers);
        }
        this.lastLayer = numLayers - 1;
    }

    /** Draws one trial's parameters (define-by-run, in a fixed order so TPE sees the same space every time). */
    public AblationParameters suggest(Trial trial) {
        for (Map.Entry<String, ParameterDistribution> p : distributions().entrySet()) {
            switch (p.getValue()) {
                case ParameterDistribution.Categorical c -> trial.suggestCategorical(p.getKey(), c.choices());
                case ParameterDistribution.FloatRange f -> trial.suggestFloat(p.getKey(), f.low(), f.high(), f.log());
                case ParameterDistribution.IntRange i -> trial.suggestInt(p.getKey(), i.low(), i.high());
            }
        }
        return AblationParameters.fromTrial(trial.params());
    }

    /** Every parameter with its distribution, in draw order. */
    public Map<String, ParameterDistribution> distributions() {
        double l = lastLayer;
        Map<String, ParameterDistribution> space = new LinkedHashMap<>();
        space.put("direction_scope", new ParameterDistribution.Categorical(scopes));
        space.put("direction_index", new ParameterDistribution.FloatRange(0.4 * l, 0.9 * l, false));
        component(space, "attn", 0.8, 1.5, l);
        component(space, "mlp", -0.25, 1.5, l);
        return space;
    }

    private static void component(Map<String, ParameterDistribution> space, String prefix, double low, double high, double l) {
        space.put(prefix + ".max_weight", new ParameterDistribution.FloatRange(low, high, false));
        space.put(prefix + ".max_weight_position", new ParameterDistribution.FloatRange(0.6 * l, l, false));
        space.put(prefix + ".min_weight_fraction", new ParameterDistribution.FloatRange(0, 1, false));
        space.put(prefix + ".min_weight_distance", new ParameterDistribution.FloatRange(1, Math.max(0.6 * l, 1), false));
    }
}
