package dev.crucible.runner.cli;

import dev.crucible.api.io.OutputLocation;
import dev.crucible.api.model.LoraFactors;
import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.runner.export.ExportWeights;
import dev.crucible.runner.export.gguf.GgufType;
import dev.crucible.runner.finetune.PeftAdapterReader;
import dev.crucible.runner.session.ModelSession;
import java.nio.file.Files;
import java.util.Map;
import dev.crucible.api.train.TrainingMethod;
import dev.crucible.runner.Host;
import dev.crucible.runner.finetune.ExampleEncoder;
import dev.crucible.runner.finetune.FinetuneRun;
import dev.crucible.runner.finetune.FinetuneSave;
import dev.crucible.runner.finetune.FinetuneSettings;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

@Command(name = "finetune", mixinStandardHelpOptions = true,
        description = {"Fine-tune a model with LoRA, QLoRA (4-bit NF4 base) or all of its weights on a JSONL file of "
                + "{\"messages\": [...]}, {\"prompt\", \"completion\"}, {\"instruction\", \"input\", \"output\"} or "
                + "{\"text\"} rows. With a chat template, rows are rendered with it and only the assistant's tokens "
                + "are trained; on a model without one, prompt/completion rows are plain text (prompt + completion + "
                + "EOS, as TRL does) and only the completion is trained. LoRA writes a PEFT adapter folder, full training a model folder; both add "
                + "finetune_meta.json. Ctrl+C stops after the current step and saves; --resume continues.",
                "Example: runner finetune --model Qwen/Qwen2.5-0.5B-Instruct --data chat.jsonl --out adapters/chat "
                        + "--rank 16 --alpha 32 --epochs 3 --grad-accum 8 --lr 2e-4"})
public final class FinetuneCommand implements Callable<Integer> {
    private final Host host;

    @Spec
    CommandSpec spec;

    @Mixin
    DeviceOptions deviceOptions;

    @Option(names = "--model", required = true, paramLabel = "M", description = "A model folder, or org/name[@revision] from the Hugging Face cache or hub.")
    String model;

    @Option(names = "--data", required = true, paramLabel = "FILE.jsonl", description = "Training rows, one JSON object per line.")
    Path data;

    @Option(names = "--out", required = true, paramLabel = "DIR", description = "Where the adapter (or, with --method full, the model) goes.")
    Path out;

    @Mixin
    QuantizationOptions quantizationOptions;

    @Option(names = "--method", defaultValue = "auto", description = "auto, lora, qlora or full (default: auto = LoRA, or QLoRA when the frozen bf16 weights do not fit the device; with --quantization, adapters on that quantized base).")
    String method;

    @Option(names = "--dtype", defaultValue = "auto", description = "Compute dtype of the frozen base: auto (the backend's policy), float32, bfloat16, float16. Adapters are always float32; full training is float32.")
    String dtype;

    @Option(names = "--rank", defaultValue = "16", description = "LoRA rank r (default: ${DEFAULT-VALUE}).")
    int rank;

    @Option(names = "--alpha", defaultValue = "32", description = "LoRA alpha; the update is scaled by alpha/r (default: ${DEFAULT-VALUE}).")
    double alpha;

    @Option(names = "--dropout", defaultValue = "0", description = "LoRA dropout on the adapters' input (default: ${DEFAULT-VALUE}).")
    double dropout;

    @Option(names = "--target-modules", defaultValue = "auto", paramLabel = "auto|q_proj,v_proj,...",
            description = "Projections to adapt: auto = all seven per layer (q,k,v,o,gate,up,down), or a comma-separated list (default: ${DEFAULT-VALUE}).")
    String targetModules;

    @Option(names = "--epochs", defaultValue = "3", description = "Passes over the data (default: ${DEFAULT-VALUE}).")
    int epochs;

    @Option(names = "--micro-batch", defaultValue = "1", description = "Rows per forward/backward pass (default: ${DEFAULT-VALUE}).")
    int microBatch;

    @Option(names = "--grad-accum", defaultValue = "8", description = "Micro-batches per optimizer step (default: ${DEFAULT-VALUE}).")
    int gradAccum;

    @Option(names = "--group-by-length", description = "Batch rows of similar length together (less padding; order random at the scale of 50 micro-batches).")
    boolean groupByLength;

    @Option(names = "--max-len", defaultValue = "1024", description = "Longest row in tokens (default: ${DEFAULT-VALUE}); see --overlong.")
    int maxLength;

    @Option(names = "--overlong", defaultValue = "truncate", description = "Rows longer than --max-len: truncate (keep the start) or drop (default: ${DEFAULT-VALUE}).")
    String overlong;

    @Option(names = "--loss-on", defaultValue = "assistant", description = "Tokens the loss is taken on: assistant (the assistant's messages, or a plain completion, only) or all (the whole rendered row, for training from scratch) (default: ${DEFAULT-VALUE}).")
    String lossOn;

    @Option(names = "--lr", defaultValue = "2e-4", description = "Peak learning rate (default: ${DEFAULT-VALUE}).")
    double learningRate;

    @Option(names = "--warmup-ratio", defaultValue = "0.03", description = "Share of steps with linear warm-up before cosine decay (default: ${DEFAULT-VALUE}).")
    double warmupRatio;

    @Option(names = "--weight-decay", defaultValue = "0", description = "AdamW decoupled weight decay on matrices (default: ${DEFAULT-VALUE}).")
    double weightDecay;

    @Option(names = "--max-grad-norm", defaultValue = "1.0", description = "Clip the global gradient norm; 0 turns clipping off (default: ${DEFAULT-VALUE}).")
    double maxGradNorm;

    @Option(names = "--seed", defaultValue = "0", paramLabel = "S", description = "Seed of the data order, adapter initialization and dropout (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--eval-data", paramLabel = "FILE.jsonl", description = "Held-out rows: the eval loss is reported at the end.")
    Path evalData;

    @Option(names = "--refusal-markers", paramLabel = "FILE", description = "With --eval-data: also generate each row's reply and check it refuses exactly when the reference does (markers one per line).")
    Path refusalMarkers;

    @Option(names = "--eval-max-new-tokens", defaultValue = "48", description = "Tokens generated per reply for --refusal-markers (default: ${DEFAULT-VALUE}).")
    int evalMaxNewTokens;

    @Option(names = "--resume", arity = "0..1", paramLabel = "DIR", fallbackValue = "",
            description = "Continue the run stopped in --out (same command line), or the one saved in DIR when --out could not be written.")
    String resume;

    @Option(names = "--export-gguf", paramLabel = "FILE", description = "Also write the trained model (adapters merged) as a GGUF file for llama.cpp.")
    Path exportGguf;

    @Option(names = "--gguf-type", defaultValue = "f16", paramLabel = "T",
            description = "Type of --export-gguf's matrices: f32, f16, bf16, q8_0, q4_0, q4_k_m or q6_k (default: ${DEFAULT-VALUE}).")
    String ggufType;

    @Option(names = "--force", description = "Replace --out (and FILE) when they exist.")
    boolean force;

    FinetuneCommand(Host host) {
        this.host = host;
    }

    @Override
    public Integer call() {
        FinetuneSettings settings = new FinetuneSettings(model, data, out, deviceOptions.request(),
                deviceOptions.threads(host),
                method.equalsIgnoreCase("auto") ? Optional.empty() : Optional.of(TrainingMethod.parse(method)),
                dtype, rank, alpha, dropout, targetModules, epochs, microBatch, gradAccum, groupByLength, maxLength,
                overlong(overlong), lossOn(lossOn), learningRate, warmupRatio, weightDecay, maxGradNorm, seed,
                Optional.ofNullable(evalData), Optional.ofNullable(refusalMarkers), evalMaxNewTokens,
                resume == null ? Optional.empty() : Optional.of(resume.isEmpty() ? out : Path.of(resume)), force,
                quantizationOptions.config());
        GgufType gguf = GgufType.parse(ggufType, "--gguf-type");
        if (exportGguf != null) {
            OutputLocation.checkNewFile(exportGguf, force, 0);
        }
        boolean terminal = System.console() != null && System.console().isTerminal();
        int status = new FinetuneRun(host, settings, spec.commandLine().getOut(), spec.commandLine().getErr(),
                new AtomicBoolean(), report -> { }, terminal,
                spec.commandLine().getParseResult().originalArgs(), FinetuneSave.defaultRescueFolders()).run();
        if (status == 0 && exportGguf != null) {
            exportGguf(new ExportGguf(gguf, spec.commandLine().getOut()));
        }
        return status;
    }

    /**
     * The trained model as GGUF, from what the run saved: a full fine-tune's folder as it is, or the adapter merged
     * into its base as {@code runner merge} merges it.
     */
    private void exportGguf(ExportGguf gguf) {
        if (!Files.isRegularFile(out.resolve("adapter_config.json"))) {
            gguf.folder(ModelSession.locateModel(host, out.toString()), exportGguf, force);
            return;
        }
        Map<String, LoraFactors> adapters = PeftAdapterReader.read(out);
        try (ModelSession session = deviceOptions.open(host, ModelSession.locateModel(host, model), "float32",
                QuantizationConfig.NONE)) {
            gguf.merged(session, ExportWeights.merging(session, adapters), exportGguf, force);
        }
    }

    private static ExampleEncoder.LossOn lossOn(String text) {
        return switch (text.strip().toLowerCase(java.util.Locale.ROOT)) {
            case "assistant" -> ExampleEncoder.LossOn.ASSISTANT;
            case "all" -> ExampleEncoder.LossOn.ALL;
            default -> throw new dev.crucible.api.UserInputException("--loss-on '" + text + "' is not assistant or all");
        };
    }

    private static ExampleEncoder.Overlong overlong(String text) {
        return switch (text.strip().toLowerCase(java.util.Locale.ROOT)) {
            case "truncate" -> ExampleEncoder.Overlong.TRUNCATE;
            case "drop" -> ExampleEncoder.Overlong.DROP;
            default -> throw new dev.crucible.api.UserInputException("--overlong '" + text + "' is not truncate or drop");
        };
    }
}
