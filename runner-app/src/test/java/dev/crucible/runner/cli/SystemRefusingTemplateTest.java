package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.runner.text.ModelTokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Gemma 2's real chat template raises "System role not supported" for a leading system message: a run with a system
 * prompt renders without it, as the same run without a system prompt does, and says so once.
 */
class SystemRefusingTemplateTest {

    @TempDir
    Path temp;

    @Test
    void aSystemPromptTheTemplateRefusesIsDroppedWithOneNote() throws Exception {
        Path model = FamilyCommandsTest.fixture("tiny-gemma2");
        Path gemmaConfig = model.resolve("../chat-templates/gemma-2-it/tokenizer_config.json").normalize();
        Assumptions.assumeTrue(Files.isRegularFile(gemmaConfig), gemmaConfig + " is missing");
        Path folder = temp.resolve("gemma");
        Files.createDirectories(folder);
        try (var files = Files.list(model)) {
            for (Path file : files.toList()) {
                Files.copy(file, folder.resolve(file.getFileName()));
            }
        }
        String template = Json.mapper().readTree(gemmaConfig.toFile()).get("chat_template").asText();
        Files.writeString(folder.resolve("chat_template.jinja"), template);

        RunnerCli withSystem = generate(folder, "--system", "You are a helpful assistant.");
        RunnerCli without = generate(folder);
        assertEquals(0, withSystem.exit(), withSystem.err());
        assertEquals(0, without.exit(), without.err());
        assertEquals(1, withSystem.err().lines().filter(ModelTokenizer.SYSTEM_REFUSED_NOTE::equals).count(),
                "one note for two prompts: " + withSystem.err());
        assertFalse(without.err().contains(ModelTokenizer.SYSTEM_REFUSED_NOTE), without.err());
        JsonNode a = Json.mapper().readTree(withSystem.out());
        JsonNode b = Json.mapper().readTree(without.out());
        for (int i = 0; i < 2; i++) {
            assertEquals(b.get(i).get("prompt_ids"), a.get(i).get("prompt_ids"), "prompt " + i + " renders without the system turn");
        }
    }

    private RunnerCli generate(Path model, String... extra) {
        java.util.List<String> args = new java.util.ArrayList<>(java.util.List.of("generate", "--model", model.toString(),
                "--prompt", "Once upon a time", "--prompt", "The cat", "--chat", "--max-new-tokens", "2", "--json",
                "--device", "cpu"));
        args.addAll(java.util.List.of(extra));
        return RunnerCli.run(Map.of("CRUCIBLE_THREADS", "1"), args.toArray(String[]::new));
    }
}
