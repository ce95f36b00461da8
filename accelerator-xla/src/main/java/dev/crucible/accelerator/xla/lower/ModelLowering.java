package dev.crucible.accelerator.xla.lower;

import dev.crucible.accelerator.xla.exec.Program;
import dev.crucible.accelerator.xla.exec.XlaExecutor;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.ModelRunner;
import dev.crucible.api.model.PlacedModel;
import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.api.tensor.DType;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The programs a run of one model at one shape compiles, found by running the backend's own code (placement and
 * {@link ModelRunner}) on an executor that only compiles: a forward pass over a batch (residuals, final norm and
 * first-step logits, what abliteration measures) and a greedy decode (prefill into the KV cache, the first token's
 * argmax, one decode step that every later token reuses). Each distinct program appears once, named for its role.
 */
public final class ModelLowering {

    /** The shape a run is lowered for: prompts per batch, tokens per prompt, tokens generated. */
    public record Shape(int batch, int promptLength, int newTokens) {
        public Shape {
            if (batch < 1 || promptLength < 1 || newTokens < 1) {
                throw new IllegalArgumentException("batch, prompt length and new tokens must be at least 1, got "
                        + batch + ", " + promptLength + ", " + newTokens);
            }
        }
    }

    private ModelLowering() {
    }

    /** {@link #lower(ModelConfig, Checkpoint, DType, QuantizationConfig, Sharding, Shape, XlaExecutor)}, dense. */
    public static List<LoweredProgram> lower(ModelConfig config, Checkpoint checkpoint, DType dtype, Sharding sharding,
                                             Shape shape, XlaExecutor executor) {
        return lower(config, checkpoint, dtype, QuantizationConfig.NONE, sharding, shape, executor);
    }

    /**
     * Lowers {@code config}'s model, with {@code checkpoint}'s tensors (only their names and shapes are read when
     * {@code executor} does not compute) in {@code dtype}, the projections {@code quantization} names taken in its
     * format, split as {@code sharding} says.
     */
    public static List<LoweredProgram> lower(ModelConfig config, Checkpoint checkpoint, DType dtype,
                                             QuantizationConfig quantization, Sharding sharding, Shape shape,
                                             XlaExecutor executor) {
        Map<String, LoweredProgram> programs = new LinkedHashMap<>();
        List<LoweredProgram> phase = new ArrayList<>();
        try (XlaOps ops = new XlaOps(executor, sharding)) {
            ops.observe(phase::add);
            try (PlacedModel model = PlacedModel.place(config, checkpoint, new XlaPlacement(ops, dtype, quantization));
                 ModelRunner runner = new ModelRunner(ops, model, Buckets.SHAPES)) {
                List<int[]> prompts = Collections.nCopies(shape.batch(), new int[shape.promptLength()]);
                runner.forward(new ForwardRequest(prompts, shape.batch()), shape.batch());
                collect(phase, "forward", programs);
                runner.decode(new DecodeRequest(prompts, shape.newTokens(), Set.of(), 0, shape.batch()), shape.batch());
                collect(phase, "decode", programs);
            }
        }
        return List.copyOf(programs.values());
    }

    /**
     * Names each new program of a phase for its role and keeps the first of each text: the program that fills the
     * cache is the prefill, the one that updates it in place the decode step; the others are the request's own
     * ({@code forward}, then {@code forward_2}, ...).
     */
    private static void collect(List<LoweredProgram> phase, String request, Map<String, LoweredProgram> into) {
        int others = 0;
        for (LoweredProgram lowered : phase) {
            Program program = lowered.program();
            if (into.containsKey(program.stablehlo())) {
                continue;
            }
            boolean writesState = lowered.results().stream().anyMatch(r -> r.name().startsWith("state:"));
            String name;
            if (!program.manifest().donations().isEmpty()) {
                name = "decode_step";
            } else if (writesState) {
                name = "prefill";
            } else {
                others++;
                name = others == 1 ? request : request + "_" + others;
            }
            into.put(program.stablehlo(), rename(lowered, name));
        }
        phase.clear();
    }

    private static LoweredProgram rename(LoweredProgram lowered, String name) {
        Program p = lowered.program();
        return new LoweredProgram(new Program(name, p.stablehlo(), p.manifest(), p.compileOptions()),
                lowered.arguments(), lowered.argumentLayouts(), lowered.results(), lowered.resultLayouts(),
                lowered.sharding());
    }
}
