package dev.crucible.runner.text;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.crucible.api.UserInputException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Tokenization of the real stories260k tokenizer against the goldens made with llama2.c and Python tokenizers. */
class ModelTokenizerTest {
    static Path fixture(String name) {
        Path p = Path.of(System.getProperty("crucible.repo.root", ".."), "..", "shared", "fixtures", name).normalize();
        Assumptions.assumeTrue(Files.isDirectory(p), "fixture " + p + " is missing (../shared beside the repository)");
        return p;
    }

    @Test
    void encodesEveryGoldenPromptAndTokenizerCaseExactly() throws Exception {
        Path dir = fixture("stories260k");
        JsonNode goldens = new ObjectMapper().readTree(dir.resolve("goldens.json").toFile());
        try (ModelTokenizer tokenizer = ModelTokenizer.load(dir)) {
            int checked = 0;
            for (JsonNode c : goldens.get("cases")) {
                assertArrayEquals(ints(c.get("prompt_ids")), tokenizer.encode(c.get("prompt").asText()), c.get("name").asText());
                checked++;
            }
            for (JsonNode c : goldens.get("tokenizer_cases")) {
                int[] ids = ints(c.get("ids"));
                assertArrayEquals(ids, tokenizer.encode(c.get("text").asText()), c.get("text").asText());
                assertEquals(c.get("decoded").asText(), tokenizer.decode(ids), c.get("text").asText());
                checked++;
            }
            assertEquals(30, checked);
            assertEquals(Set.of(2), tokenizer.eosIds());
            assertEquals(2, tokenizer.padId(), "pad falls back to eos");
            assertEquals(Optional.of(1), tokenizer.bosId());
            assertEquals("</s>", tokenizer.specialTokens().get("eos_token"));
        }
    }

    @Test
    void missingTokenizerIsAUserError(@TempDir Path empty) {
        UserInputException e = assertThrows(UserInputException.class, () -> ModelTokenizer.load(empty));
        assertTrue(e.getMessage().contains("has no tokenizer.json"));
    }

    private static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).asInt();
        }
        return out;
    }
}
