package dev.crucible.huggingface.template;

import static dev.crucible.huggingface.template.Templates.map;
import static dev.crucible.huggingface.template.Templates.render;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** tojson as transformers defines it: Python json.dumps with ensure_ascii=False. */
class ChatTemplateJsonTest {

    private final Object tool = map("name", "get_weather", "description", "°C \"Zürich\" <b>&</b> 😀\\\n\t\u0001\u007f",
            "parameters", map("required", List.of("location"), "empty", map(), "none", Arrays.asList(null, 1.5, true)));

    @Test
    void compactFormUsesPythonSeparatorsAndEscapesOnlyQuotesBackslashesAndControls() {
        assertEquals("{\"name\": \"get_weather\", "
                + "\"description\": \"°C \\\"Zürich\\\" <b>&</b> 😀\\\\\\n\\t\\u0001\u007f\", "
                + "\"parameters\": {\"required\": [\"location\"], \"empty\": {}, \"none\": [null, 1.5, true]}}",
                render("{{ t|tojson }}", "t", tool));
    }

    @Test
    void indentPutsEachItemOnItsOwnLine() {
        assertEquals("""
                {
                    "a": [
                        1,
                        {}
                    ],
                    "b": []
                }""", render("{{ x|tojson(indent=4) }}", "x", map("a", List.of(1, map()), "b", List.of())));
    }

    @Test
    void optionsOfJsonDumps() {
        assertEquals("{\"a\":1,\"b\":2}|{\"a\": 1, \"b\": 2}|\"\\u00e9\\ud83d\\ude00\"", render(
                "{{ x|tojson(separators=(',', ':')) }}|{{ y|tojson(sort_keys=true) }}"
                        + "|{{ 'é😀'|tojson(ensure_ascii=true) }}",
                "x", map("a", 1, "b", 2), "y", map("b", 2, "a", 1)));
    }

    @Test
    void keyOrderIsTheMapsOrder() {
        assertEquals("{\"z\": 1, \"a\": 2}", render("{{ x|tojson }}", "x", map("z", 1, "a", 2)));
    }

    @Test
    void undefinedIsNotSerialisable() {
        ChatTemplateException error = assertThrows(ChatTemplateException.class, () -> render("{{ missing|tojson }}"));
        assertEquals("TypeError: Object of type Undefined is not JSON serializable (chat template line 1)",
                error.getMessage());
    }

    @Test
    void slicingTheJsonLikeMistralNemoDoes() {
        assertEquals("{\"name\": \"f\", \"id\": \"x\"}", render(
                "{% set out = f|tojson %}{{ out[:-1] }}, \"id\": \"x\"}", "f", map("name", "f")));
    }
}
