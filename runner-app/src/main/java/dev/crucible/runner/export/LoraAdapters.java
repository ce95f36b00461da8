package dev.crucible.runner.export;

import dev.crucible.api.model.LoraFactors;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A change made of LoRA factors, with what PEFT's {@code adapter_config.json} says about them.
 *
 * @param factors       A and B by module name (e.g. {@code model.layers.3.mlp.down_proj}), in layer order
 * @param targetModules {@code target_modules}: the modules by full name, or PEFT's short names for every layer
 */
public record LoraAdapters(Map<String, LoraFactors> factors, int rank, double alpha, double dropout,
                           List<String> targetModules) {
    public LoraAdapters {
        factors = Collections.unmodifiableMap(new LinkedHashMap<>(factors));
        targetModules = List.copyOf(targetModules);
    }
}
