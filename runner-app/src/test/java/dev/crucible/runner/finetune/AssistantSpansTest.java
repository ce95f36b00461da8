package dev.crucible.runner.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.crucible.api.UserInputException;
import dev.crucible.huggingface.template.ChatTemplate;
import dev.crucible.runner.model.CharTokenizerFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** The assistant spans found by rendering prefixes, on ChatML and on real templates (rendering only, no weights). */
class AssistantSpansTest {

    private static final Conversation TWO_TURNS = new Conversation(List.of(
            Conversation.message("system", "You are terse."),
            Conversation.message("user", "Capital of France?"),
            Conversation.message("assistant", "Paris."),
            Conversation.message("user", "And of Italy?"),
            Conversation.message("assistant", "Rome.")), "test:1");

    @Test
    void chatMlSpansAreEachReplyWithItsEndMarker() {
        AssistantSpans.Rendered rendered = AssistantSpans.locate(format(CharTokenizerFiles.CHAT_TEMPLATE, Map.of()),
                TWO_TURNS);
        assertEquals(List.of("Paris.<|im_end|>", "Rome.<|im_end|>"), rendered.spanTexts());
        assertTrue(rendered.text().startsWith("<|im_start|>system\nYou are terse.<|im_end|>\n"));
        assertTrue(rendered.text().endsWith("Rome.<|im_end|>\n"), "the newline after the marker is context only");
    }

    @Test
    void qwenTemplateAddsItsDefaultSystemPromptOutsideTheSpans() {
        Conversation noSystem = new Conversation(TWO_TURNS.messages().subList(1, 5), "test:2");
        AssistantSpans.Rendered rendered = AssistantSpans.locate(fixture("qwen2.5-instruct"), noSystem);
        assertEquals(List.of("Paris.<|im_end|>", "Rome.<|im_end|>"), rendered.spanTexts());
        assertTrue(rendered.text().startsWith("<|im_start|>system\nYou are Qwen"), rendered.text());
    }

    @Test
    void llamaTemplateSpansEndWithEotAndSkipTheHeaders() {
        AssistantSpans.Rendered rendered = AssistantSpans.locate(fixture("llama-3.2-instruct"), TWO_TURNS);
        assertEquals(List.of("Paris.<|eot_id|>", "Rome.<|eot_id|>"), rendered.spanTexts());
        int first = rendered.spans().getFirst()[0];
        assertTrue(rendered.text().substring(0, first).endsWith("<|start_header_id|>assistant<|end_header_id|>\n\n"));
        assertTrue(rendered.text().startsWith("<|begin_of_text|>"), "BOS comes from the template, as context");
    }

    @Test
    void aTemplateThatRewritesEarlierTurnsIsReported() {
        // Renders the last message in capitals: earlier renderings are not prefixes of the whole.
        String shouting = "{%- for m in messages %}{%- if loop.last %}{{ m['content'] | upper }}{%- else %}"
                + "{{ m['content'] }}{%- endif %}|{%- endfor %}{%- if add_generation_prompt %}>{%- endif %}";
        UserInputException error = assertThrows(UserInputException.class,
                () -> AssistantSpans.locate(format(shouting, Map.of()), TWO_TURNS));
        assertTrue(error.getMessage().startsWith("test:1: the chat template renders the turns before assistant message 2"),
                error.getMessage());
    }

    private static ChatFormat fixture(String family) {
        Path file = Path.of(System.getProperty("crucible.repo.root", ".."), "..", "shared", "fixtures",
                "chat-templates", family, "tokenizer_config.json").normalize();
        Assumptions.assumeTrue(Files.isRegularFile(file), "fixture " + file + " is missing");
        try {
            JsonNode config = JsonMapper.builder().build().readTree(file.toFile());
            Map<String, String> special = new HashMap<>();
            for (String name : List.of("bos_token", "eos_token", "pad_token", "unk_token")) {
                JsonNode token = config.get(name);
                if (token != null && token.isTextual()) {
                    special.put(name, token.asText());
                }
            }
            return format(config.get("chat_template").asText(), special);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Rendering only; ids are never asked for here. */
    static ChatFormat format(String source, Map<String, String> specialTokens) {
        ChatTemplate template = ChatTemplate.compile(source, Clock.fixed(Instant.parse("2025-01-15T00:00:00Z"),
                ZoneOffset.UTC));
        return new ChatFormat() {
            @Override
            public String render(List<Map<String, String>> messages, boolean addGenerationPrompt) {
                return template.render(messages, addGenerationPrompt, specialTokens, Map.of());
            }

            @Override
            public int[] encode(String text) {
                throw new UnsupportedOperationException();
            }

            @Override
            public int[] encodePlain(String text) {
                throw new UnsupportedOperationException();
            }

            @Override
            public boolean hasTemplate() {
                return true;
            }

            @Override
            public java.util.Optional<String> eosToken() {
                return java.util.Optional.ofNullable(specialTokens.get("eos_token"));
            }
        };
    }
}
