package dev.crucible.torch;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.ShardRequest;
import dev.crucible.api.tensor.DType;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;

/** A model folder from shared/fixtures with its goldens.json, read without a tokenizer. */
record Fixture(String name, Path directory, ModelConfig config, List<Case> cases, double logitsTolerance,
               double normTolerance) {

    /** One golden case: prompt ids in, greedy ids, first-step logits and residual norms out. */
    record Case(String name, int[] promptIds, int maxNewTokens, int[] generatedIds, float[] firstStepLogits,
                double embeddingNorm, double[] afterLayerNorms, double finalNormNorm) {
    }

    static Path root() {
        return Path.of(System.getProperty("crucible.repo.root", ".."), "..", "shared", "fixtures")
                .toAbsolutePath().normalize();
    }

    static Fixture load(String name) {
        Path directory = root().resolve(name);
        Assumptions.assumeTrue(Files.isRegularFile(directory.resolve("goldens.json")),
                "fixture " + directory + " is not present");
        try {
            JsonNode goldens = JsonMapper.builder().build().readTree(directory.resolve("goldens.json").toFile());
            List<Case> cases = new ArrayList<>();
            for (JsonNode node : goldens.get("cases")) {
                JsonNode norms = node.get("residual_l2_last_prompt_position");
                double[] afterLayer = new double[norms.get("after_layer").size()];
                for (int i = 0; i < afterLayer.length; i++) {
                    afterLayer[i] = norms.get("after_layer").get(i).asDouble();
                }
                JsonNode logits = node.get("first_step").get("logits");
                float[] firstLogits = new float[logits.size()];
                for (int i = 0; i < firstLogits.length; i++) {
                    firstLogits[i] = (float) logits.get(i).asDouble();
                }
                cases.add(new Case(node.get("name").asText(), ints(node.get("prompt_ids")),
                        node.get("max_new_tokens").asInt(), ints(node.get("generated_ids")), firstLogits,
                        norms.get("embedding").asDouble(), afterLayer, norms.get("after_final_norm").asDouble()));
            }
            JsonNode tolerances = goldens.get("tolerances");
            return new Fixture(name, directory, ModelConfig.read(directory), cases,
                    tolerances.get("logits_abs").asDouble(), tolerances.get("residual_l2_rel").asDouble());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    ShardRequest shardRequest(Checkpoint checkpoint, DType dtype) {
        return new ShardRequest(config, checkpoint, dtype);
    }

    List<int[]> prompts() {
        return cases.stream().map(Case::promptIds).toList();
    }

    private static int[] ints(JsonNode array) {
        int[] values = new int[array.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = array.get(i).asInt();
        }
        return values;
    }
}
