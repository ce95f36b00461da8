package dev.crucible.huggingface.template;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Renders the real chat templates of seven model families and compares byte for byte with what Python
 * transformers (Jinja2 3.1.2) produced for the same conversations, or checks the same {@code raise_exception}.
 */
class ChatTemplateFixturesTest {

    private static final Path FIXTURES = Path.of(System.getProperty("crucible.repo.root", ".."), "..", "shared",
            "fixtures", "chat-templates").toAbsolutePath().normalize();
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The goldens were rendered with strftime_now fixed to 2024-07-26 00:00:00. */
    static final Clock FIXTURE_CLOCK = Clock.fixed(LocalDateTime.of(2024, 7, 26, 0, 0).toInstant(ZoneOffset.UTC),
            ZoneOffset.UTC);

    record Case(String family, String template, Map<String, Object> specialTokens, Map<String, Object> input,
                String expected, String expectedError) {
    }

    @SuppressWarnings("unchecked")
    static Stream<Named<Case>> cases() throws IOException {
        Path casesFile = FIXTURES.resolve("cases.json");
        Assumptions.assumeTrue(Files.exists(casesFile), "fixture chat-templates/cases.json is missing");
        Map<String, Object> root = JSON.readValue(casesFile.toFile(), Map.class);
        Map<String, Map<String, Object>> families = (Map<String, Map<String, Object>>) root.get("families");
        List<Named<Case>> cases = new ArrayList<>();
        for (Map.Entry<String, Map<String, Object>> family : families.entrySet()) {
            Map<String, Object> spec = family.getValue();
            Map<String, Object> config = JSON.readValue(FIXTURES.resolve((String) spec.get("template_file")).toFile(),
                    Map.class);
            String template = (String) config.get("chat_template");
            assertEquals(spec.get("chat_template_sha256"), sha256(template), family.getKey() + " template changed");
            for (Map<String, Object> c : (List<Map<String, Object>>) spec.get("cases")) {
                cases.add(Named.of(family.getKey() + "/" + c.get("id"), new Case(family.getKey(), template,
                        (Map<String, Object>) spec.get("special_tokens_passed"),
                        (Map<String, Object>) c.get("input"), (String) c.get("expected"),
                        (String) c.get("expected_error"))));
            }
        }
        assertEquals(((Number) root.get("case_count")).intValue(), cases.size());
        return cases.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    @SuppressWarnings("unchecked")
    void rendersLikeTransformers(Case c) {
        ChatTemplate template = ChatTemplate.compile(c.template(), FIXTURE_CLOCK);
        Map<String, Object> input = c.input();
        ChatTemplateInput request = ChatTemplateInput
                .of((List<Map<String, Object>>) input.get("messages"), (Boolean) input.get("add_generation_prompt"))
                .withTools((List<Map<String, Object>>) input.get("tools"))
                .withSpecialTokens(c.specialTokens())
                .withExtraVariables((Map<String, Object>) input.get("extra_variables"));
        if (c.expectedError() != null) {
            ChatTemplateException error = assertThrows(ChatTemplateException.class, () -> template.render(request));
            assertEquals(c.expectedError(), error.getMessage());
            assertEquals(ChatTemplateException.Reason.RAISED_BY_TEMPLATE, error.reason());
        } else {
            assertEquals(c.expected(), template.render(request));
        }
    }

    private static String sha256(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }
}
