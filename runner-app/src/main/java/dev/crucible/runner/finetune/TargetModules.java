package dev.crucible.runner.finetune;

import dev.crucible.api.UserInputException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * {@code --target-modules}: which projections get adapters. {@code auto} (and PEFT's {@code all-linear}) means all
 * seven of every layer (q, k, v, o, gate, up, down): the QLoRA paper found adapting every linear layer is what
 * matches full fine-tuning. Otherwise a comma-separated list of short names ({@code q_proj,v_proj}), as PEFT
 * takes them, or full module names.
 */
public final class TargetModules {

    /**
     * The resolved modules: full names in layer order, and what adapter_config.json's {@code target_modules} lists
     * so that PEFT attaches adapters to exactly these modules (short names, or the full names when the user gave
     * some, since a short name would match every layer).
     */
    public record Resolved(List<String> modules, List<String> peftTargets) {
        public Resolved {
            modules = List.copyOf(modules);
            peftTargets = List.copyOf(peftTargets);
        }
    }

    private TargetModules() {
    }

    /** @param available every adaptable projection's full name, layer by layer (the model's linear modules) */
    public static Resolved resolve(String spec, List<String> available) {
        Set<String> shortAvailable = new LinkedHashSet<>();
        available.forEach(name -> shortAvailable.add(shortName(name)));
        String text = spec.strip();
        if (text.equalsIgnoreCase("auto") || text.equalsIgnoreCase("all-linear")) {
            return new Resolved(available, List.copyOf(shortAvailable));
        }
        Set<String> wanted = new LinkedHashSet<>();
        for (String part : text.split(",")) {
            String name = part.strip();
            if (name.isEmpty()) {
                continue;
            }
            if (!shortAvailable.contains(name) && !available.contains(name)) {
                throw new UserInputException("--target-modules: '" + name + "' is not a projection of this model; "
                        + "use auto or some of " + String.join(",", shortAvailable));
            }
            wanted.add(name);
        }
        if (wanted.isEmpty()) {
            throw new UserInputException("--target-modules is empty; use auto or e.g. q_proj,v_proj");
        }
        List<String> modules = new ArrayList<>();
        Set<String> shortNames = new LinkedHashSet<>();
        for (String module : available) {
            if (wanted.contains(module) || wanted.contains(shortName(module))) {
                modules.add(module);
                shortNames.add(shortName(module));
            }
        }
        boolean onlyShortNames = wanted.stream().allMatch(shortAvailable::contains);
        return new Resolved(modules, onlyShortNames ? List.copyOf(shortNames) : modules);
    }

    /** {@code model.layers.3.self_attn.q_proj} to {@code q_proj}. */
    static String shortName(String module) {
        return module.substring(module.lastIndexOf('.') + 1);
    }
}
