package dev.crucible.runner.finetune;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.HalfFloats;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.io.SafetensorsWriter;
import dev.crucible.api.io.WritableTensor;
import dev.crucible.api.model.LoraFactors;
import dev.crucible.api.tensor.DType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code runner merge} and the PEFT reader behind it, against the merge computed on the host. */
class MergeCommandTest {
    private static final String Q = "model.layers.0.self_attn.q_proj";
    private static final String DOWN = "model.layers.1.mlp.down_proj";

    @TempDir
    Path temp;

    /**
     * An adapter as Python PEFT saves it (keys with the adapter name, rsLoRA, a rank_pattern override for one
     * module), merged into a bf16 base: W + scale·B·A rounded once to bf16, every other tensor copied as it was.
     */
    @Test
    void mergeEqualsBasePlusScaledBATimesAOnTheHost() throws Exception {
        Path base = TinyModel.write(temp.resolve("base"), DType.BF16);
        Path adapter = Files.createDirectories(temp.resolve("adapter"));
        Random random = new Random(3);
        float[] qA = gaussian(random, 4 * 32);
        float[] qB = gaussian(random, 32 * 4);
        float[] downA = gaussian(random, 2 * 64);
        float[] downB = gaussian(random, 32 * 2);
        SafetensorsWriter.write(adapter.resolve("adapter_model.safetensors"), List.of(
                WritableTensor.ofFloats("base_model.model." + Q + ".lora_A.default.weight", DType.F32, new long[] {4, 32}, qA),
                WritableTensor.ofFloats("base_model.model." + Q + ".lora_B.default.weight", DType.F32, new long[] {32, 4}, qB),
                WritableTensor.ofFloats("base_model.model." + DOWN + ".lora_A.default.weight", DType.BF16, new long[] {2, 64}, downA),
                WritableTensor.ofFloats("base_model.model." + DOWN + ".lora_B.default.weight", DType.BF16, new long[] {32, 2}, downB)),
                Map.of("format", "pt"));
        Files.writeString(adapter.resolve("adapter_config.json"), """
                {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": 4, "lora_alpha": 16, "use_rslora": true,
                 "rank_pattern": {"down_proj": 2}, "alpha_pattern": {}, "target_modules": ["q_proj", "down_proj"],
                 "fan_in_fan_out": false, "use_dora": false}
                """);
        Map<String, LoraFactors> read = PeftAdapterReader.read(adapter);
        assertEquals(List.of(Q, DOWN), List.copyOf(read.keySet()), "'.default' keys name the same modules");
        assertEquals(16 / Math.sqrt(4), read.get(Q).scale(), "rsLoRA: alpha / sqrt(r)");
        assertEquals(16 / Math.sqrt(2), read.get(DOWN).scale(), "r from rank_pattern");

        Path merged = temp.resolve("merged");
        Cli run = Cli.run("merge", "--model", base.toString(), "--adapter", adapter.toString(), "--out", merged.toString());
        assertEquals(0, run.exit(), run.all());
        assertTrue(run.out().contains("merged 2 adapted projections"), run.out());
        try (Checkpoint before = Checkpoint.open(base); Checkpoint after = Checkpoint.open(merged)) {
            assertEquals(List.copyOf(before.names()), List.copyOf(after.names()));
            for (String name : before.names()) {
                HostTensor original = before.tensor(name);
                HostTensor result = after.tensor(name);
                assertEquals(original.dtype(), result.dtype(), name);
                assertArrayEquals(original.shape(), result.shape(), name);
                if (!Set.of(Q + ".weight", DOWN + ".weight").contains(name)) {
                    assertArrayEquals(original.toByteArray(), result.toByteArray(), name + " is copied as it was");
                }
            }
            checkMerged(before.tensor(Q + ".weight"), after.tensor(Q + ".weight"), read.get(Q));
            checkMerged(before.tensor(DOWN + ".weight"), after.tensor(DOWN + ".weight"), read.get(DOWN));
        }
        for (String file : List.of("config.json", "tokenizer.json", "tokenizer_config.json")) {
            assertEquals(Cli.sha256(base.resolve(file)), Cli.sha256(merged.resolve(file)), file);
        }
    }

    /** A finetune's own adapter merges back (the round trip a user does after training). */
    @Test
    void aFinetunedAdapterMerges() {
        Path base = TinyModel.write(temp.resolve("base"), DType.F32);
        Path data = TinyModel.chatData(temp.resolve("chat.jsonl"), 8);
        Path adapter = temp.resolve("adapter");
        Cli train = Cli.run("finetune", "--model", base.toString(), "--data", data.toString(), "--out", adapter.toString(),
                "--method", "lora", "--rank", "2", "--epochs", "1", "--micro-batch", "4", "--grad-accum", "1", "--lr", "1e-2");
        assertEquals(0, train.exit(), train.all());
        Cli merge = Cli.run("merge", "--model", base.toString(), "--adapter", adapter.toString(), "--out",
                temp.resolve("merged").toString());
        assertEquals(0, merge.exit(), merge.all());
        assertTrue(merge.out().contains("merged 14 adapted projections"), merge.out());
        Cli again = Cli.run("merge", "--model", base.toString(), "--adapter", adapter.toString(), "--out",
                temp.resolve("merged").toString());
        assertEquals(2, again.exit());
        assertTrue(again.err().contains("already exists; pass --force"), again.err());
    }

    /** merge reads --max-shard-size with abliterate's grammar: a size abliterate refuses, merge refuses too. */
    @Test
    void maxShardSizeIsReadAsAbliterateReadsIt() {
        Path base = TinyModel.write(temp.resolve("base"), DType.F32);
        Cli merge = Cli.run("merge", "--model", base.toString(), "--adapter", temp.resolve("none").toString(), "--out",
                temp.resolve("merged").toString(), "--max-shard-size", "1.5GB");
        assertEquals(2, merge.exit(), merge.all());
        assertEquals("error: --max-shard-size must be a whole number of bytes or of a unit, e.g. 1500MB rather than "
                + "1.5GB, got '1.5GB'", merge.err().strip());
    }

    @Test
    void unsupportedAdaptersAreRefusedWithTheReason() throws Exception {
        Path adapter = Files.createDirectories(temp.resolve("dora"));
        Files.writeString(adapter.resolve("adapter_config.json"), "{\"peft_type\": \"LORA\", \"r\": 2, \"use_dora\": true}");
        assertTrue(org.junit.jupiter.api.Assertions.assertThrows(UserInputException.class,
                () -> PeftAdapterReader.read(adapter)).getMessage().contains("DoRA"));
        Files.writeString(adapter.resolve("adapter_config.json"), "{\"peft_type\": \"LORA\", \"r\": 2, \"lora_alpha\": 4}");
        assertTrue(org.junit.jupiter.api.Assertions.assertThrows(UserInputException.class,
                () -> PeftAdapterReader.read(adapter)).getMessage().contains("no adapter_model.safetensors"));
        SafetensorsWriter.write(adapter.resolve("adapter_model.safetensors"), List.of(WritableTensor.ofFloats(
                "base_model.model.model.embed_tokens.lora_embedding_A.default", DType.F32, new long[] {2, 4},
                new float[8])), Map.of());
        assertTrue(org.junit.jupiter.api.Assertions.assertThrows(UserInputException.class,
                () -> PeftAdapterReader.read(adapter)).getMessage().contains("not a LoRA A or B weight"));
    }

    private static void checkMerged(HostTensor weight, HostTensor merged, LoraFactors factors) {
        float[] w = weight.toFloatArray();
        float[] a = factors.a().toFloatArray();
        float[] b = factors.b().toFloatArray();
        int rank = (int) factors.a().shape()[0];
        int in = (int) weight.shape()[1];
        float[] actual = merged.toFloatArray();
        int exactMatches = 0;
        for (int o = 0; o < weight.shape()[0]; o++) {
            for (int i = 0; i < in; i++) {
                double delta = 0;
                for (int r = 0; r < rank; r++) {
                    delta += (double) b[o * rank + r] * a[r * in + i];
                }
                float exact = (float) (w[o * in + i] + factors.scale() * delta);
                float expected = HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(exact));
                float got = actual[o * in + i];
                // The device sums in float32, the host in double: at most one bf16 step apart, near a rounding edge.
                float bf16Step = Math.ulp(expected) * 65536f;
                assertTrue(Math.abs(got - expected) <= bf16Step,
                        weight.name() + "[" + o + "," + i + "] = " + got + ", expected " + expected);
                exactMatches += got == expected ? 1 : 0;
            }
        }
        assertTrue(exactMatches >= 0.99 * actual.length, exactMatches + " of " + actual.length + " exact");
    }

    private static float[] gaussian(Random random, int count) {
        float[] values = new float[count];
        for (int i = 0; i < count; i++) {
            values[i] = (float) (random.nextGaussian() * 0.1);
        }
        return values;
    }
}
