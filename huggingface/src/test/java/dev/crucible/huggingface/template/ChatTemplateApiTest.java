package dev.crucible.huggingface.template;

import static dev.crucible.huggingface.template.Templates.FIXED_CLOCK;
import static dev.crucible.huggingface.template.Templates.map;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import java.time.Clock;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The public API: compiling, the conversation input, errors, the clock, speed. */
class ChatTemplateApiTest {

    private static final String TEMPLATE = "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}"
            + "{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}|{{ tools }}|{{ documents }}"
            + "|{{ pad_token is defined }}|{{ enable_thinking }}";

    @Test
    void rendersAConversationWithTransformersVariables() {
        Map<String, Object> tokens = new HashMap<>();
        tokens.put("bos_token", "<s>");
        tokens.put("pad_token", null);
        String out = ChatTemplate.compile(TEMPLATE).render(List.of(map("role", "user", "content", "hi")), true,
                tokens, Map.of("enable_thinking", false));
        // A null special token is left out, so the template sees it as undefined rather than None.
        assertEquals("<s><user>hi<assistant>|None|None|False|False", out);
    }

    @Test
    void inputCarriesToolsAndDocuments() {
        ChatTemplateInput input = ChatTemplateInput.of(List.of(map("role", "user", "content", "hi")), false)
                .withTools(List.of(map("name", "f")))
                .withDocuments(List.of(map("title", "d")))
                .withSpecialTokens(Map.of("bos_token", "<s>"));
        assertEquals("<s><user>hi|[{'name': 'f'}]|[{'title': 'd'}]|False|",
                ChatTemplate.compile(TEMPLATE).render(input));
    }

    @Test
    void extraVariablesCannotReplaceTheConversation() {
        UserInputException error = assertThrows(UserInputException.class,
                () -> ChatTemplateInput.of(List.of(), true).withExtraVariables(Map.of("messages", List.of())));
        assertTrue(error.getMessage().contains("'messages'"), error.getMessage());
    }

    @Test
    void raiseExceptionCarriesTheTemplatesMessageVerbatim() {
        ChatTemplate template = ChatTemplate.compile("{% if messages[0]['role'] == 'system' %}"
                + "{{ raise_exception('System role not supported') }}{% endif %}ok");
        ChatTemplateException error = assertThrows(ChatTemplateException.class,
                () -> template.render(List.of(map("role", "system", "content", "x")), false, Map.of(), Map.of()));
        assertEquals("System role not supported", error.getMessage());
        assertEquals(ChatTemplateException.Reason.RAISED_BY_TEMPLATE, error.reason());
        assertTrue(error instanceof UserInputException);
        assertEquals("ok", template.render(List.of(map("role", "user", "content", "x")), false, Map.of(), Map.of()));
    }

    @Test
    void syntaxErrorsAreReportedWhenCompiling() {
        ChatTemplateException error = assertThrows(ChatTemplateException.class,
                () -> ChatTemplate.compile("line one\n{% if x %}\nno end"));
        assertEquals(ChatTemplateException.Reason.SYNTAX_ERROR, error.reason());
        assertTrue(error.getMessage().contains("'endif'"), error.getMessage());
        ChatTemplateException unknownFilter = assertThrows(ChatTemplateException.class,
                () -> ChatTemplate.compile("a\n{{ x | no_such_filter }}"));
        assertEquals("chat template syntax error at line 2: No filter named 'no_such_filter'.",
                unknownFilter.getMessage());
        // Inside an if, Jinja only complains when the branch runs.
        assertEquals("ok", ChatTemplate.compile("{% if false %}{{ x | no_such_filter }}{% endif %}ok")
                .render(Map.of()));
    }

    @Test
    void strftimeNowReadsTheInjectedClock() {
        String template = "{{ strftime_now('%d %b %Y') }} {{ strftime_now('%A %H:%M') }}";
        assertEquals("26 Jul 2024 Friday 00:00", ChatTemplate.compile(template, FIXED_CLOCK).render(Map.of()));
        Clock later = Clock.fixed(LocalDateTime.of(2025, 1, 3, 14, 5).toInstant(ZoneOffset.UTC), ZoneOffset.UTC);
        assertEquals("03 Jan 2025 Friday 14:05", ChatTemplate.compile(template, later).render(Map.of()));
    }

    @Test
    void theDefaultClockIsToday() {
        String rendered = ChatTemplate.compile("{{ strftime_now('%Y-%m-%d') }}").render(Map.of());
        String today = java.time.LocalDate.now().toString();
        String yesterday = java.time.LocalDate.now().minusDays(1).toString();
        assertTrue(rendered.equals(today) || rendered.equals(yesterday), rendered);
    }

    @Test
    void aCompiledTemplateRendersAConversationInWellUnderAMillisecond() {
        ChatTemplate template = ChatTemplate.compile("{%- set ns = namespace(last=-1) %}"
                + "{%- for m in messages[::-1] %}{%- if ns.last < 0 and m.role == 'user' %}"
                + "{%- set ns.last = (messages|length - 1) - loop.index0 %}{%- endif %}{%- endfor %}"
                + "{%- for m in messages %}{{- '<|im_start|>' + m.role + '\\n' + m.content | trim + '<|im_end|>\\n' }}"
                + "{%- if loop.index0 > ns.last and '</think>' in m.content %}"
                + "{{- m.content.split('</think>')[-1].lstrip('\\n') }}{%- endif %}{%- endfor %}"
                + "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}");
        List<Map<String, Object>> messages = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            messages.add(map("role", i % 2 == 0 ? "user" : "assistant",
                    "content", "Turn " + i + ": some words of ordinary conversation, " + "x".repeat(i * 20)));
        }
        Map<String, Object> variables = map("messages", messages, "add_generation_prompt", true);
        String first = template.render(variables);
        assertFalse(first.isEmpty());
        int rounds = 2_000;
        for (int i = 0; i < rounds; i++) {
            template.render(variables);
        }
        long best = Long.MAX_VALUE;
        for (int batch = 0; batch < 5; batch++) {
            long start = System.nanoTime();
            for (int i = 0; i < rounds; i++) {
                template.render(variables);
            }
            best = Math.min(best, (System.nanoTime() - start) / rounds);
        }
        assertTrue(best < 1_000_000, "a render took " + best + " ns");
    }
}
