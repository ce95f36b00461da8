package dev.crucible.accelerator.cpu.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.Generation;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.ShardRequest;
import dev.crucible.api.tensor.DType;
import dev.crucible.torch.TorchModel;
import dev.crucible.torch.TorchRuntime;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Greedy decoding with the CPU kernels in the loop reproduces the fixtures' goldens (made by llama2.c and PyTorch
 * references, not by us): ids exactly, first-step logits within each fixture's tolerance, one prompt at a time and
 * as a left-padded batch.
 */
class KernelGoldenTest {

    @ParameterizedTest
    @ValueSource(strings = {"stories260k", "tiny-qwen2", "tiny-qwen3", "tiny-llama3-rope"})
    void decodeWithTheKernelsMatchesTheGoldens(String name) throws Exception {
        Path directory = fixture(name);
        JsonNode goldens = JsonMapper.builder().build().readTree(directory.resolve("goldens.json").toFile());
        double tolerance = goldens.get("tolerances").get("logits_abs").asDouble();
        TorchRuntime.load();
        TorchRuntime.setThreads(1);
        VectorKernels kernels = new VectorKernels(2);
        CountingKernels counted = new CountingKernels(kernels);
        ModelConfig config = ModelConfig.read(directory);
        try (Checkpoint checkpoint = Checkpoint.open(directory);
             TorchModel model = TorchModel.place(new ShardRequest(config, checkpoint, DType.F32), "cpu", counted)) {
            List<int[]> prompts = new ArrayList<>();
            List<int[]> expected = new ArrayList<>();
            int longest = 0;
            for (JsonNode golden : goldens.get("cases")) {
                int[] prompt = ints(golden.get("prompt_ids"));
                int[] ids = ints(golden.get("generated_ids"));
                prompts.add(prompt);
                expected.add(ids);
                longest = Math.max(longest, ids.length);
                Generation single = model.runner().decode(new DecodeRequest(List.of(prompt), ids.length, Set.of(),
                        DecodeRequest.defaultPadToken(config), 1), 1).generations().getFirst();
                String where = name + "/" + golden.get("name").asText();
                assertArrayEquals(ids, single.tokens(), where);
                JsonNode logits = golden.get("first_step").get("logits");
                float[] got = single.firstStepLogits();
                for (int i = 0; i < logits.size(); i++) {
                    double error = Math.abs(logits.get(i).asDouble() - got[i]);
                    assertTrue(error <= tolerance, where + " logit " + i + " off by " + error);
                }
            }
            List<Generation> batched = model.runner().decode(new DecodeRequest(prompts, longest, Set.of(),
                    DecodeRequest.defaultPadToken(config), prompts.size()), prompts.size()).generations();
            for (int i = 0; i < prompts.size(); i++) {
                assertArrayEquals(expected.get(i), java.util.Arrays.copyOf(batched.get(i).tokens(), expected.get(i).length),
                        name + " case " + i + " in a batch");
            }
        } finally {
            kernels.close();
        }
        for (String kernel : List.of("linear", "rmsNorm", "rotary", "attention", "argmax", "gatedSilu")) {
            assertTrue(counted.calls(kernel) > 0, kernel + " ran: " + counted.calls);
        }
    }

    /**
     * The same fixtures in bfloat16 with the machine-code products in the loop (where this CPU can run them): the
     * first step's top token and logits are those of the Vector API kernels up to bfloat16's rounding (the two differ
     * only in the order of float32 sums, whose rounding to bf16 may flip a last bit). Not the float32 goldens': in
     * bfloat16 tiny-qwen3's random weights already pick another first token with either kernel.
     */
    @ParameterizedTest
    @ValueSource(strings = {"stories260k", "tiny-qwen2", "tiny-qwen3", "tiny-llama3-rope"})
    void bf16DecodeWithTheMachineCodeAgreesWithTheVectorKernels(String name) throws Exception {
        Path directory = fixture(name);
        Set<String> flags = dev.crucible.accelerator.cpu.CpuFeatures.probe().flags();
        String unsupported = MachineCode.unsupported(flags);
        Assumptions.assumeTrue(unsupported == null, "the machine code cannot run here: " + unsupported);
        JsonNode goldens = JsonMapper.builder().build().readTree(directory.resolve("goldens.json").toFile());
        TorchRuntime.load();
        TorchRuntime.setThreads(1);
        ModelConfig config = ModelConfig.read(directory);
        List<float[]> logits = new ArrayList<>();
        MachineCode.Availability mapped = MachineCode.load(flags);
        assertTrue(mapped.available(), mapped.reason());
        for (MachineCode code : java.util.Arrays.asList(mapped.code(), null)) {
            VectorKernels kernels = new VectorKernels(2, List.of(DType.BF16), code);
            try (Checkpoint checkpoint = Checkpoint.open(directory);
                 TorchModel model = TorchModel.place(new ShardRequest(config, checkpoint, DType.BF16), "cpu", kernels)) {
                for (JsonNode golden : goldens.get("cases")) {
                    Generation single = model.runner().decode(new DecodeRequest(List.of(ints(golden.get("prompt_ids"))),
                            2, Set.of(), DecodeRequest.defaultPadToken(config), 1), 1).generations().getFirst();
                    logits.add(single.firstStepLogits());
                }
            } finally {
                kernels.close();
            }
        }
        int cases = logits.size() / 2;
        for (int i = 0; i < cases; i++) {
            float[] machine = logits.get(i);
            float[] vector = logits.get(cases + i);
            double largest = 0;
            double worst = 0;
            for (int v = 0; v < machine.length; v++) {
                largest = Math.max(largest, Math.abs(vector[v]));
                worst = Math.max(worst, Math.abs(machine[v] - vector[v]));
            }
            assertTrue(worst <= 0.05 * Math.max(1, largest), name + " case " + i + ": logits differ by " + worst
                    + " (largest " + largest + ")");
            org.junit.jupiter.api.Assertions.assertEquals(argmax(vector), argmax(machine), name + " case " + i
                    + ": the first token");
        }
    }

    /** The shared fixture's folder; the test is skipped where it is missing. */
    private static Path fixture(String name) {
        Path directory = Path.of(System.getProperty("crucible.repo.root", ".."), "..", "shared", "fixtures", name)
                .toAbsolutePath().normalize();
        Assumptions.assumeTrue(Files.isRegularFile(directory.resolve("goldens.json")), "fixture " + directory + " is missing");
        return directory;
    }

    private static int argmax(float[] values) {
        int best = 0;
        for (int i = 1; i < values.length; i++) {
            if (values[i] > values[best]) {
                best = i;
            }
        }
        return best;
    }

    private static int[] ints(JsonNode array) {
        int[] values = new int[array.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = array.get(i).asInt();
        }
        return values;
    }
}
