package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code runner generate --json} end to end on every family's fixture: the tokenizer, the config's family and the
 * model give transformers' greedy ids for each golden prompt.
 */
class FamilyGenerateTest {
    private static final Map<String, String> ONE_THREAD = Map.of("CRUCIBLE_THREADS", "1");

    @ParameterizedTest
    @ValueSource(strings = {"tiny-mistral", "tiny-granite", "tiny-olmo2", "tiny-smollm3", "tiny-phi3", "tiny-gemma2", "tiny-gemma3"})
    void generatesTransformersIds(String name) throws Exception {
        Path fixture = Path.of(System.getProperty("crucible.repo.root", ".."), "..", "shared", "fixtures", name)
                .normalize();
        Assumptions.assumeTrue(Files.isDirectory(fixture), "fixture " + fixture + " is missing");
        for (JsonNode golden : Json.mapper().readTree(fixture.resolve("goldens.json").toFile()).get("cases")) {
            String prompt = golden.get("prompt").asText();
            if (prompt.isEmpty()) {
                continue; // generate takes no empty prompt; the model tests cover BOS alone
            }
            int newTokens = golden.get("max_new_tokens").asInt();
            RunnerCli r = RunnerCli.run(ONE_THREAD, "generate", "--model", fixture.toString(), "--prompt", prompt,
                    "--max-new-tokens", Integer.toString(newTokens), "--json", "--device", "cpu");
            String where = name + "/" + golden.get("name").asText();
            assertEquals(0, r.exit(), where + ": " + r.err());
            JsonNode result = Json.mapper().readTree(r.out());
            assertEquals(ints(golden.get("prompt_ids")), ints(result.get("prompt_ids")), where);
            assertEquals(ints(golden.get("generated_ids")), ints(result.get("generated_ids")), where);
        }
    }

    private static List<Integer> ints(JsonNode array) {
        List<Integer> out = new ArrayList<>();
        array.forEach(node -> out.add(node.asInt()));
        return out;
    }
}
