package dev.crucible.huggingface.template;

import java.time.Clock;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.Map;

/** Test helpers: render a template string with variables given as name/value pairs. */
final class Templates {

    static final Clock FIXED_CLOCK = Clock.fixed(LocalDateTime.of(2024, 7, 26, 0, 0).toInstant(ZoneOffset.UTC),
            ZoneOffset.UTC);

    private Templates() {
    }

    static String render(String template, Object... namesAndValues) {
        return ChatTemplate.compile(template, FIXED_CLOCK).render(variables(namesAndValues));
    }

    static Map<String, Object> variables(Object... namesAndValues) {
        Map<String, Object> variables = new LinkedHashMap<>();
        for (int i = 0; i < namesAndValues.length; i += 2) {
            variables.put((String) namesAndValues[i], namesAndValues[i + 1]);
        }
        return variables;
    }

    /** A map literal that keeps insertion order and allows null values (Python None). */
    static Map<String, Object> map(Object... namesAndValues) {
        return variables(namesAndValues);
    }
}
