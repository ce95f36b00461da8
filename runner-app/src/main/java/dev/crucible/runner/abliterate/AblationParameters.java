package dev.crucible.runner.abliterate;

import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalDouble;

/**
 * One trial's edit: which direction, and how strongly each component is ablated at each layer.
 *
 * @param perLayerScope  true: layer l uses direction R_{l+1}; false ("global"): every layer uses the interpolated
 *                       {@code directionIndex}
 * @param directionIndex float index into the directions (global scope)
 * @param attention      the o_proj weight profile
 * @param mlp            the down_proj weight profile (every expert's down projection in MoE models)
 */
public record AblationParameters(boolean perLayerScope, double directionIndex, WeightProfile attention, WeightProfile mlp) {

    public AblationParameters {
        Objects.requireNonNull(attention, "attention is null");
        Objects.requireNonNull(mlp, "mlp is null");
    }

    /**
     * A component's ablation weight by layer: largest ({@code maxWeight}) at {@code maxWeightPosition}, falling
     * linearly to {@code minWeight} at {@code minWeightDistance} layers away, and zero beyond.
     */
    public record WeightProfile(double maxWeight, double maxWeightPosition, double minWeight, double minWeightDistance) {

        /** The weight of {@code layer}, empty when the layer is not edited. */
        public OptionalDouble weightAt(int layer) {
            double distance = Math.abs(layer - maxWeightPosition);
            if (distance > minWeightDistance) {
                return OptionalDouble.empty();
            }
            double w = minWeightDistance == 0 ? maxWeight
                    : maxWeight + (distance / minWeightDistance) * (minWeight - maxWeight);
            return w == 0 ? OptionalDouble.empty() : OptionalDouble.of(w);
        }
    }

    /** Reads the parameters a trial's sampler chose (names as in the study journal). */
    public static AblationParameters fromTrial(Map<String, Object> params) {
        return new AblationParameters(
                "per_layer".equals(params.get("direction_scope")),
                number(params, "direction_index"),
                profile(params, "attn"),
                profile(params, "mlp"));
    }

    private static WeightProfile profile(Map<String, Object> params, String prefix) {
        // The MLP's range dips below zero so that "no MLP edit" has real probability mass; negatives clamp to 0.
        double max = Math.max(0, number(params, prefix + ".max_weight"));
        return new WeightProfile(max, number(params, prefix + ".max_weight_position"),
                number(params, prefix + ".min_weight_fraction") * max, number(params, prefix + ".min_weight_distance"));
    }

    private static double number(Map<String, Object> params, String name) {
        Object value = params.get(name);
        if (!(value instanceof Number n)) {
            throw new IllegalArgumentException("trial has no numeric parameter " + name + ": " + params);
        }
        return n.doubleValue();
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "%s dir=%.2f attn(max=%.2f@%.1f min=%.2f dist=%.1f) mlp(max=%.2f@%.1f min=%.2f dist=%.1f)",
                perLayerScope ? "per_layer" : "global", directionIndex,
                attention.maxWeight(), attention.maxWeightPosition(), attention.minWeight(), attention.minWeightDistance(),
                mlp.maxWeight(), mlp.maxWeightPosition(), mlp.minWeight(), mlp.minWeightDistance());
    }
}
