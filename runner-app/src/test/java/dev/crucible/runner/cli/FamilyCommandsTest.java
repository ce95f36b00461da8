package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.layout.Linear;
import dev.crucible.api.model.layout.MixtureOfExperts;
import dev.crucible.api.model.layout.ModelLayout;
import dev.crucible.api.model.layout.ShortConvolution;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code runner generate --json} reproduces each family fixture's goldens (its prompts as one batch), and
 * {@code runner abliterate --trials 3} on the families beyond Llama's layout, exporting a folder with the base's
 * tensor names, shapes and dtypes in which every block output writing into the residual stream of an edited layer
 * changed: each expert's down projection of a mixture included.
 */
class FamilyCommandsTest {

    @TempDir
    Path temp;

    static Path fixture(String name) {
        Path fixture = Path.of(System.getProperty("crucible.repo.root", ".."), "..", "shared", "fixtures", name)
                .toAbsolutePath().normalize();
        Assumptions.assumeTrue(Files.isRegularFile(fixture.resolve("model.safetensors")), fixture + " is missing");
        return fixture;
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-qwen3-moe", "tiny-mixtral", "tiny-lfm2"})
    void generatePrintsTheGoldenIds(String name) throws Exception {
        Path fixture = fixture(name);
        JsonNode cases = Json.mapper().readTree(fixture.resolve("goldens.json").toFile()).get("cases");
        List<JsonNode> prompted = new java.util.ArrayList<>();
        cases.forEach(golden -> {
            if (!golden.get("prompt").asText().isEmpty()) {
                prompted.add(golden);
            }
        });
        Path prompts = Files.write(temp.resolve("prompts.txt"), prompted.stream()
                .map(golden -> golden.get("prompt").asText()).toList());
        int budget = prompted.stream().mapToInt(golden -> golden.get("max_new_tokens").asInt()).min().orElseThrow();
        RunnerCli r = RunnerCli.run(Map.of("CRUCIBLE_THREADS", "1"), "generate", "--model", fixture.toString(),
                "--prompts", prompts.toString(), "--max-new-tokens", String.valueOf(budget), "--json", "--device", "cpu");
        assertEquals(0, r.exit(), r.err());
        JsonNode results = Json.mapper().readTree(r.out());
        assertEquals(prompted.size(), results.size());
        for (int i = 0; i < prompted.size(); i++) {
            JsonNode golden = prompted.get(i);
            assertEquals(golden.get("prompt_ids"), results.get(i).get("prompt_ids"), golden.get("name").asText());
            List<Integer> expected = new java.util.ArrayList<>();
            for (int t = 0; t < budget; t++) {
                expected.add(golden.get("generated_ids").get(t).asInt());
            }
            List<Integer> actual = new java.util.ArrayList<>();
            results.get(i).get("generated_ids").forEach(id -> actual.add(id.asInt()));
            assertEquals(expected, actual, golden.get("name").asText());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-qwen3-moe", "tiny-lfm2"})
    void abliterationEditsEveryResidualWriterAndExportsTheBasesTensors(String name) throws Exception {
        Path base = withChatTemplate(fixture(name), temp.resolve("base"));
        Path out = temp.resolve("abliterated");
        RunnerCli r = RunnerCli.run(Map.of(), "abliterate", "--model", base.toString(), "--threads", "1",
                "--trials", "3", "--startup-trials", "2", "--max-response-length", "4",
                "--good-prompts", "bundled:harmless/train[:8]", "--bad-prompts", "bundled:harmful/train[:8]",
                "--good-test-prompts", "bundled:harmless/test[:4]", "--bad-test-prompts", "bundled:harmful/test[:4]",
                "--study", temp.resolve("study").toString(), "--headless", "--seed", "5", "--trial", "best",
                "--max-kl", "100", "--export", out.toString(), "--json");
        assertEquals(0, r.exit(), r.err());
        JsonNode report = Json.mapper().readTree(r.out());
        assertEquals(3, report.get("trials").size());

        ModelLayout layout = ModelConfig.read(base).layout();
        try (Checkpoint before = Checkpoint.open(base); Checkpoint after = Checkpoint.open(out)) {
            assertEquals(describe(before), describe(after), "the export has the base's tensors, shapes and dtypes");
            Map<Integer, List<Boolean>> changedByLayer = new TreeMap<>();
            for (Linear writer : layout.residualWriters()) {
                String weight = writer.weight().name();
                boolean changed = !Arrays.equals(before.tensor(weight).toFloatArray(),
                        after.tensor(weight).toFloatArray());
                changedByLayer.computeIfAbsent(writer.layer(), layer -> new java.util.ArrayList<>()).add(changed);
            }
            assertTrue(changedByLayer.values().stream().anyMatch(layer -> layer.contains(true)),
                    "the chosen trial edits something: " + changedByLayer);
            for (var layer : changedByLayer.entrySet()) {
                // Attention and MLP have their own weight profiles; within a layer every MLP writer (each expert's
                // down projection) is edited or none is.
                List<Boolean> mlp = layer.getValue().subList(1, layer.getValue().size());
                assertFalse(mlp.contains(true) && mlp.contains(false), "layer " + layer.getKey()
                        + " edits some of its MLP writers but not all: " + mlp);
            }
            if (!layout.blocks(MixtureOfExperts.class).isEmpty()) {
                assertTrue(changedByLayer.values().stream().anyMatch(layer -> layer.size() > 2
                        && layer.subList(1, layer.size()).stream().allMatch(changed -> changed)),
                        "every expert's down_proj of some mixture layer is edited: " + changedByLayer);
            }
            for (ShortConvolution convolution : layout.blocks(ShortConvolution.class)) {
                String weight = convolution.output().weight().name();
                int layer = convolution.output().layer();
                assertEquals(changedByLayer.get(layer).getFirst(), !Arrays.equals(before.tensor(weight).toFloatArray(),
                        after.tensor(weight).toFloatArray()), weight + " is the layer's first residual writer");
            }
            assertTrue(layout.blocks(ShortConvolution.class).isEmpty()
                    || layout.blocks(ShortConvolution.class).stream().anyMatch(convolution -> changedByLayer.get(
                            convolution.output().layer()).getFirst()),
                    "some convolution's out_proj is edited: " + changedByLayer);
        }
    }

    /** The fixture's files copied into {@code folder}, plus a ChatML template (the fixtures carry none). */
    static Path withChatTemplate(Path fixture, Path folder) throws java.io.IOException {
        Files.createDirectories(folder);
        try (var files = Files.list(fixture)) {
            for (Path file : files.toList()) {
                Files.copy(file, folder.resolve(file.getFileName()));
            }
        }
        Files.writeString(folder.resolve("chat_template.jinja"), """
                {% for message in messages %}<|im_start|>{{ message['role'] }}
                {{ message['content'] }}<|im_end|>
                {% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
                {% endif %}""");
        return folder;
    }

    private static Map<String, String> describe(Checkpoint checkpoint) {
        return checkpoint.names().stream().collect(Collectors.toMap(name -> name,
                name -> checkpoint.info(name).dtype() + Arrays.toString(checkpoint.info(name).shape()),
                (a, b) -> a, TreeMap::new));
    }
}
