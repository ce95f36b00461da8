package dev.crucible.runner.finetune;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One training row as chat messages ({@code role}, {@code content}), whatever format it was written in, with
 * where it came from for error messages.
 *
 * @param source {@code FILE:LINE}
 */
public record Conversation(List<Map<String, String>> messages, String source) implements TrainingRow {
    public Conversation {
        messages = messages.stream().map(Map::copyOf).toList();
        Objects.requireNonNull(source, "source is null");
    }

    public static Map<String, String> message(String role, String content) {
        return Map.of("role", role, "content", content);
    }
}
