package dev.crucible.runner.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.api.io.SafetensorsFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code runner finetune --method lora} with the default {@code --target-modules auto} on the families whose
 * projections differ from Llama's: Phi-3's fused {@code qkv_proj} and {@code gate_up_proj}, Gemma 2's seven
 * projections. The adapter names each family's modules as PEFT does, for every layer, and training moved it.
 */
class FamilyLoraTest {
    @TempDir
    Path temp;

    @ParameterizedTest
    @CsvSource(delimiter = ';', value = {
            "tiny-phi3; self_attn.qkv_proj,self_attn.o_proj,mlp.gate_up_proj,mlp.down_proj",
            "tiny-gemma2; self_attn.q_proj,self_attn.k_proj,self_attn.v_proj,self_attn.o_proj,mlp.gate_proj,mlp.up_proj,mlp.down_proj"})
    void loraAdapterHasPeftKeysForTheFamilysModules(String name, String modules) throws Exception {
        Path model = Path.of(System.getProperty("crucible.repo.root", ".."), "..", "shared", "fixtures", name)
                .toAbsolutePath().normalize();
        Assumptions.assumeTrue(Files.isRegularFile(model.resolve("model.safetensors")), model + " is missing");
        // The fixtures carry no chat template: prompt/completion rows train as plain text.
        Path data = Files.write(temp.resolve("rows.jsonl"), IntStream.range(0, 4).mapToObj(i ->
                "{\"prompt\": \"Once upon a time " + i + "\", \"completion\": \" there was a cat.\"}").toList());
        Path out = temp.resolve("adapter");
        Cli run = Cli.run(java.util.Map.of("CRUCIBLE_THREADS", "1"), "finetune", "--model", model.toString(),
                "--data", data.toString(), "--out", out.toString(), "--device", "cpu", "--method", "lora",
                "--rank", "4", "--alpha", "8", "--epochs", "1", "--micro-batch", "2", "--grad-accum", "1",
                "--warmup-ratio", "0", "--lr", "1e-2");
        assertEquals(0, run.exit(), run.out() + run.err());

        int layers = Cli.json(model.resolve("config.json")).get("num_hidden_layers").asInt();
        List<String> projections = List.of(modules.split(","));
        Set<String> expected = new TreeSet<>();
        for (int layer = 0; layer < layers; layer++) {
            for (String projection : projections) {
                String prefix = "base_model.model.model.layers." + layer + "." + projection;
                expected.add(prefix + ".lora_A.weight");
                expected.add(prefix + ".lora_B.weight");
            }
        }
        try (SafetensorsFile adapter = SafetensorsFile.open(out.resolve("adapter_model.safetensors"))) {
            assertEquals(expected, new TreeSet<>(adapter.tensors().keySet()));
            boolean trained = adapter.tensors().keySet().stream().filter(key -> key.endsWith("lora_B.weight"))
                    .anyMatch(key -> {
                        for (float v : adapter.tensor(key).toFloatArray()) {
                            if (v != 0f) {
                                return true;
                            }
                        }
                        return false;
                    });
            assertTrue(trained, "some lora_B left its zero initialisation");
        }
        JsonNode config = Cli.json(out.resolve("adapter_config.json"));
        Set<String> targets = new TreeSet<>();
        config.get("target_modules").forEach(module -> targets.add(module.asText()));
        Set<String> leaf = new TreeSet<>();
        projections.forEach(projection -> leaf.add(projection.substring(projection.indexOf('.') + 1)));
        assertEquals(leaf, targets);
    }
}
