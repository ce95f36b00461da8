package dev.crucible.api.model;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/** Defensive copies and checks of token-id prompts for the request records. */
final class Prompts {
    private Prompts() {
    }

    static List<int[]> copyOf(List<int[]> prompts) {
        Objects.requireNonNull(prompts, "prompts is null");
        List<int[]> copy = new ArrayList<>(prompts.size());
        for (int i = 0; i < prompts.size(); i++) {
            int[] prompt = Objects.requireNonNull(prompts.get(i), "prompt " + i + " is null");
            if (prompt.length == 0) {
                throw new IllegalArgumentException("prompt " + i + " is empty; every prompt needs at least one token"
                        + " (usually BOS)");
            }
            copy.add(prompt.clone());
        }
        return List.copyOf(copy);
    }
}
