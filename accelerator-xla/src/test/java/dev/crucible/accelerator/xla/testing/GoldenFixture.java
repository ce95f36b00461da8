package dev.crucible.accelerator.xla.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.crucible.api.model.ModelConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;

/**
 * A model folder of {@code ../shared/fixtures} with its third-party goldens: prompt ids, greedy ids, first-step
 * logits and the residual norms at the last prompt token.
 */
public record GoldenFixture(String name, Path directory, ModelConfig config, List<Case> cases, double logitsTolerance,
                            double normTolerance) {

    public record Case(String name, int[] promptIds, int maxNewTokens, int[] generatedIds, float[] firstStepLogits,
                       double embeddingNorm, double[] afterLayerNorms, double finalNormNorm) {
    }

    public static Path root() {
        return OracleVenv.repositoryRoot().resolve("../shared/fixtures").normalize();
    }

    public static GoldenFixture load(String name) {
        Path directory = root().resolve(name);
        Assumptions.assumeTrue(Files.isRegularFile(directory.resolve("goldens.json")),
                "fixture " + directory + " is not present");
        try {
            JsonNode goldens = new ObjectMapper().readTree(directory.resolve("goldens.json").toFile());
            List<Case> cases = new ArrayList<>();
            for (JsonNode node : goldens.get("cases")) {
                JsonNode norms = node.get("residual_l2_last_prompt_position");
                double[] afterLayer = new double[norms.get("after_layer").size()];
                for (int i = 0; i < afterLayer.length; i++) {
                    afterLayer[i] = norms.get("after_layer").get(i).asDouble();
                }
                JsonNode logits = node.get("first_step").get("logits");
                float[] first = new float[logits.size()];
                for (int i = 0; i < first.length; i++) {
                    first[i] = (float) logits.get(i).asDouble();
                }
                cases.add(new Case(node.get("name").asText(), ints(node.get("prompt_ids")),
                        node.get("max_new_tokens").asInt(), ints(node.get("generated_ids")), first,
                        norms.get("embedding").asDouble(), afterLayer, norms.get("after_final_norm").asDouble()));
            }
            JsonNode tolerances = goldens.get("tolerances");
            return new GoldenFixture(name, directory, ModelConfig.read(directory), cases,
                    tolerances.get("logits_abs").asDouble(), tolerances.get("residual_l2_rel").asDouble());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public List<int[]> prompts() {
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
