package dev.crucible.runner.finetune;

import dev.crucible.api.quant.QuantizationConfig;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceInfo;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.ModelCost;
import dev.crucible.api.model.layout.Linear;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.train.LoraSettings;
import dev.crucible.api.train.OptimizerSettings;
import dev.crucible.api.train.TrainingBatch;
import dev.crucible.api.train.TrainingMethod;
import dev.crucible.api.train.TrainingRequest;
import dev.crucible.api.train.TrainingSession;
import dev.crucible.huggingface.hub.ModelLocator;
import dev.crucible.runner.Host;
import dev.crucible.runner.backends.ActiveBackend;
import dev.crucible.runner.backends.ProbedBackend;
import dev.crucible.runner.evaluation.RefusalVerdict;
import dev.crucible.runner.export.BaseFiles;
import dev.crucible.runner.export.FileHashes;
import dev.crucible.runner.export.LoraAdapters;
import dev.crucible.runner.plugins.Discovered;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.text.ModelTokenizer;
import dev.crucible.runner.units.ByteSize;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One {@code runner finetune}: resolve and set up the backend, read and encode the data, choose the method, start
 * the backend's training session, run the {@link FinetuneLoop} with a progress bar and Ctrl+C handling, evaluate,
 * write the output. Nothing here depends on which device trains.
 *
 * <p>The model is not loaded through {@link ModelSession#open}, which places it for inference: training places
 * its own copy through {@link HardwareBackend#startTraining}, shaped for the method (a QLoRA run must never place
 * the bf16 base, full training needs float32 weights).
 */
public final class FinetuneRun {
    /** Exit status of a run stopped by Ctrl+C (after saving), as shells report SIGINT. */
    public static final int EXIT_INTERRUPTED = 130;
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Host host;
    private final FinetuneSettings settings;
    private final PrintWriter out;
    private final PrintWriter err;
    private final AtomicBoolean stop;
    private final FinetuneLoop.Listener observer;
    private final boolean terminal;
    private final List<String> commandLine;
    private final List<Path> rescueFolders;

    /**
     * @param stop     raised to stop after the current step and save (Ctrl+C raises it)
     * @param observer told about every step after the progress bar (tests stop runs with it)
     * @param terminal draw the progress bar on the console instead of printing lines to {@code err}
     * @param commandLine   the arguments after {@code runner}, for the command that finishes a rescued run
     * @param rescueFolders where the run is saved when {@code --out} cannot be written after training
     *                      ({@link FinetuneSave#defaultRescueFolders})
     */
    public FinetuneRun(Host host, FinetuneSettings settings, PrintWriter out, PrintWriter err, AtomicBoolean stop,
                       FinetuneLoop.Listener observer, boolean terminal, List<String> commandLine,
                       List<Path> rescueFolders) {
        this.host = host;
        this.settings = settings;
        this.out = out;
        this.err = err;
        this.stop = stop;
        this.observer = observer;
        this.terminal = terminal;
        this.commandLine = List.copyOf(commandLine);
        this.rescueFolders = List.copyOf(rescueFolders);
    }

    /** Runs it; returns the exit status (0 done, 130 stopped and saved). */
    public int run() {
        Path outDir = settings.out();
        // Every input and the output location are checked before anything costs time: a mistake found after
        // training costs the training.
        FinetuneSave save = FinetuneSave.check(settings, commandLine, rescueFolders);
        List<TrainingRow> rows = TrainingDataReader.read(settings.data());
        Optional<List<TrainingRow>> evalRows = settings.evalData().map(TrainingDataReader::read);
        Optional<RefusalVerdict> refusals = settings.refusalMarkers().map(file -> RefusalVerdict.withMarkers(
                host.scorers().stream().map(Discovered::service).toList(), RefusalEvaluation.readMarkers(file)));
        ProbedBackend chosen = host.resolve(settings.device());
        ActiveBackend<?, ?> backend = ActiveBackend.setUp(chosen, settings.device(), settings.threads());
        int deviceIndex = settings.device().index().orElse(0);
        String deviceName = backend.id() + ":" + deviceIndex;

        ModelLocator.Located base = ModelSession.locateModel(host, settings.model());
        Path modelDir = base.folder();
        ModelConfig config = ModelConfig.read(modelDir);
        try (ModelTokenizer tokenizer = ModelTokenizer.load(modelDir).notesTo(host::noteOnce);
             Checkpoint checkpoint = Checkpoint.open(modelDir)) {
            ChatFormat format = ChatFormat.of(tokenizer);
            ExampleEncoder encoder = new ExampleEncoder(format, settings.maxLength(), settings.overlong(),
                    settings.lossOn());
            ExampleEncoder.Result data = encoder.encodeAll(rows);
            out.println("rendering: " + data.rendering());
            out.println(dataLine(data));
            Optional<HeldOut> heldOut = evalRows.map(held -> new HeldOut(encoder.encodeAll(held),
                    held.stream().flatMap(row -> encoder.probe(row).stream()).toList()));

            // A folder stored quantized (runner quantize) is trained as the quantized base it is, unless asked to
            // train every weight, which starts from what its weights dequantize to.
            boolean full = settings.method().filter(m -> m == TrainingMethod.FULL).isPresent();
            QuantizationConfig quantization = settings.quantization().enabled() || full ? settings.quantization()
                    : checkpoint.storedQuantization();
            MethodChoice choice = quantization.enabled()
                    ? MethodChoice.quantizedBase(quantization, deviceName, backend::trainingUnsupported)
                    : MethodChoice.choose(settings.method(), ModelCost.of(config, DType.BF16).weightBytes(),
                            deviceMemory(chosen, deviceIndex), deviceName, backend::trainingUnsupported);
            TrainingMethod method = choice.method();
            QuantizationConfig baseFormat = quantization.enabled() ? quantization
                    : method == TrainingMethod.QLORA ? TrainingRequest.QLORA_NF4 : QuantizationConfig.NONE;
            out.println("method: " + method.userName() + " (" + choice.reason() + ")");
            DType baseDtype = method == TrainingMethod.FULL ? DType.F32
                    : settings.dtype().equalsIgnoreCase("auto") ? backend.chooseDtype(config.dtype())
                    : ModelSession.parseDtype(settings.dtype());
            TargetModules.Resolved targets = method.trainsAdapters()
                    ? TargetModules.resolve(settings.targetModules(), projections(config)) : null;
            out.println("device: " + deviceName + " (" + chosen.probe().reason() + "); "
                    + (method == TrainingMethod.FULL ? "every weight trained in float32"
                    : "base " + (baseFormat.equals(TrainingRequest.QLORA_NF4) ? "NF4 4-bit, computed in "
                    : baseFormat.enabled() ? baseFormat.describe() + ", computed in " : "")
                    + baseDtype.userName() + ", adapters float32, rank " + settings.rank() + ", alpha "
                    + number(settings.alpha()) + ", " + targets.modules().size() + " modules ("
                    + String.join(",", targets.peftTargets()) + ")"));

            TrainingPlan plan = TrainingPlan.of(data.examples(), settings.epochs(), settings.microBatch(),
                    settings.gradAccum(), settings.seed(), settings.groupByLength());
            LearningRateSchedule schedule = LearningRateSchedule.of(settings.learningRate(), settings.warmupRatio(),
                    plan.steps().size());
            LoraSettings lora = method.trainsAdapters() ? new LoraSettings(settings.rank(), settings.alpha(),
                    settings.dropout(), false, targets.modules()) : null;
            OptimizerSettings optimizer = OptimizerSettings.defaults().withWeightDecay(settings.weightDecay())
                    .withMaxGradNorm(settings.maxGradNorm());
            long outputBytes = method.trainsAdapters()
                    ? FinetuneOutput.adapterBytes(config.layout(), targets.modules(), settings.rank(), modelDir)
                    : modelFolderBytes(modelDir);
            save.checkSpace(outputBytes);
            String fingerprint = fingerprint(modelDir, checkpoint);
            TrainingRequest request = new TrainingRequest(config, checkpoint, method, baseDtype, lora, optimizer,
                    settings.seed(), baseFormat);

            try (TrainingSession session = backend.startTraining(request)) {
                List<Map<String, Object>> history = new ArrayList<>();
                if (save.resumeFrom().isPresent()) {
                    Path from = save.resumeFrom().get();
                    session.restore(TrainerStateFile.read(from, fingerprint));
                    history.addAll(previousHistory(from, session.completedSteps()));
                    out.println("resuming after step " + session.completedSteps() + " of " + plan.steps().size());
                }
                out.printf(Locale.ROOT, "training %,d parameters: %d steps (%d epochs, micro-batch %d, grad-accum %d), "
                                + "lr %s with %d warm-up steps%n", session.trainableParameters(), plan.steps().size(),
                        settings.epochs(), settings.microBatch(), settings.gradAccum(), number(settings.learningRate()),
                        schedule.warmupSteps());
                out.flush();
                long startTokens = plan.steps().stream().filter(s -> s.index() < session.completedSteps())
                        .mapToLong(TrainingPlan.Step::tokens).sum();
                FinetuneLoop.Outcome outcome;
                long started = System.nanoTime();
                try (TrainingProgress progress = new TrainingProgress(plan.totalTokens(), startTokens, terminal, err);
                     InterruptSignal signal = InterruptSignal.install(stop, () -> err.println(
                             "\nstopping after this step to save the " + (method.trainsAdapters() ? "adapter" : "model")
                                     + " so far (Ctrl+C again quits without saving)"))) {
                    outcome = new FinetuneLoop(plan, schedule, stop, System::nanoTime).run(session, report -> {
                        progress.stepped(report);
                        history.add(historyEntry(report));
                        observer.stepped(report);
                    });
                }
                double seconds = (System.nanoTime() - started) / 1e9;
                Map<String, Object> meta = meta(deviceName, chosen, choice, baseDtype, targets, data, plan, schedule,
                        session, history, outcome, seconds, base);
                if (!outcome.stopped() && heldOut.isPresent()) {
                    meta.put("eval", evaluate(session, heldOut.get(), refusals, tokenizer, config));
                }
                Optional<FinetuneOutput.StateToSave> state = outcome.stopped()
                        ? Optional.of(new FinetuneOutput.StateToSave(session.state(), fingerprint)) : Optional.empty();
                FinetuneSave.Writer writer = method.trainsAdapters()
                        ? (folder, replace, saved) -> FinetuneOutput.writeAdapter(folder, replace, base, config,
                                new LoraAdapters(session.adapters(), settings.rank(), settings.alpha(), settings.dropout(),
                                        targets.peftTargets()), meta, saved)
                        : (folder, replace, saved) -> FinetuneOutput.writeModel(folder, replace, base, config, checkpoint,
                                session.weights(), meta, saved);
                // Parameters and both AdamW moments, float32.
                long stateBytes = 3L * Float.BYTES * session.trainableParameters();
                save.save(writer, state, () -> new FinetuneOutput.StateToSave(session.state(), fingerprint),
                        outputBytes + stateBytes, outcome.stopped() ? "the run so far (step " + outcome.completedSteps()
                                + " of " + plan.steps().size() + ")" : "the trained run");
                return report(outcome, plan, outDir, save.resumeFrom(), seconds);
            }
        }
    }

    private int report(FinetuneLoop.Outcome outcome, TrainingPlan plan, Path outDir, Optional<Path> resumedFrom,
                       double seconds) {
        List<StepReport> reports = outcome.reports();
        String losses = reports.isEmpty() ? "no steps run" : String.format(Locale.ROOT, "loss %.4f -> %.4f",
                reports.getFirst().loss(), reports.getLast().loss());
        long tokens = reports.stream().mapToLong(StepReport::tokens).sum();
        String speed = String.format(Locale.ROOT, "%,.0f tokens/s", seconds > 0 ? tokens / seconds : 0);
        if (outcome.stopped()) {
            out.println("stopped after step " + outcome.completedSteps() + " of " + plan.steps().size() + " (" + losses
                    + ", " + speed + "); saved to " + outDir + "; continue with the same command and --resume");
            return EXIT_INTERRUPTED;
        }
        out.printf(Locale.ROOT, "done: %d steps in %.1f s (%s, %s); wrote %s%s%n", plan.steps().size(), seconds, losses,
                speed, outDir, resumedFrom.filter(from -> !from.toAbsolutePath().normalize()
                        .equals(outDir.toAbsolutePath().normalize())).map(from -> "; " + from + " is no longer needed")
                        .orElse(""));
        return 0;
    }

    /** The held-out rows, encoded before training so that a mistake in them costs nothing. */
    private record HeldOut(ExampleEncoder.Result encoded, List<RefusalEvaluation.Probe> probes) {
    }

    private Map<String, Object> evaluate(TrainingSession session, HeldOut heldOut, Optional<RefusalVerdict> refusals,
                                         ModelTokenizer tokenizer, ModelConfig config) {
        Map<String, Object> eval = new LinkedHashMap<>();
        Path file = settings.evalData().orElseThrow();
        ExampleEncoder.Result encoded = heldOut.encoded();
        double lossSum = 0;
        List<EncodedExample> examples = encoded.examples();
        for (int from = 0; from < examples.size(); from += settings.microBatch()) {
            List<EncodedExample> part = examples.subList(from, Math.min(examples.size(), from + settings.microBatch()));
            lossSum += session.evaluate(new TrainingBatch(part.stream().map(EncodedExample::ids).toList(),
                    part.stream().map(EncodedExample::labels).toList()));
        }
        double loss = lossSum / encoded.labelledTokens();
        eval.put("file", file.toString());
        eval.put("rows", examples.size());
        eval.put("loss", loss);
        out.printf(Locale.ROOT, "eval: loss %.4f on %d held-out rows%n", loss, examples.size());
        if (refusals.isPresent()) {
            Set<Integer> stops = new LinkedHashSet<>(tokenizer.eosIds());
            stops.addAll(config.eosTokenIds());
            RefusalEvaluation.Report report = RefusalEvaluation.run(heldOut.probes(), refusals.get(),
                    settings.evalMaxNewTokens(), stops,
                    tokenizer.padId(), session::decode, tokenizer::decode);
            eval.put("refusals", report.toJson());
            out.printf(Locale.ROOT, "eval: refused %d of %d that should be refused (%.1f%%), answered %d of %d that "
                            + "should be answered (%.1f%%)%n", report.refused(), report.shouldRefuse(),
                    100 * report.refusalRate(), report.answered(), report.shouldAnswer(), 100 * report.answerRate());
            report.misses().forEach(miss -> out.println("  " + miss));
        }
        return eval;
    }

    private Map<String, Object> meta(String deviceName, ProbedBackend chosen, MethodChoice choice, DType baseDtype,
                                     TargetModules.Resolved targets, ExampleEncoder.Result data, TrainingPlan plan,
                                     LearningRateSchedule schedule, TrainingSession session,
                                     List<Map<String, Object>> history, FinetuneLoop.Outcome outcome, double seconds,
                                     ModelLocator.Located base) {
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("base_model", base.reference());
        base.revision().ifPresent(revision -> meta.put("base_model_revision", revision));
        meta.put("base_model_folder", base.folder().toAbsolutePath().normalize().toString());
        meta.put("device", deviceName);
        meta.put("device_description", chosen.probe().reason());
        meta.put("method", choice.method().userName());
        meta.put("method_reason", choice.reason());
        meta.put("dtype", baseDtype.userName());
        if (settings.quantization().enabled()) {
            meta.put("quantization", settings.quantization().describe());
        }
        if (choice.method().trainsAdapters()) {
            meta.put("adapter_dtype", "float32");
            meta.put("rank", settings.rank());
            meta.put("alpha", settings.alpha());
            meta.put("dropout", settings.dropout());
            meta.put("target_modules", targets.peftTargets());
            meta.put("adapted_modules", targets.modules().size());
        }
        meta.put("trainable_parameters", session.trainableParameters());
        meta.put("lr", settings.learningRate());
        meta.put("warmup_ratio", settings.warmupRatio());
        meta.put("warmup_steps", schedule.warmupSteps());
        meta.put("schedule", "linear warm-up, cosine decay");
        meta.put("optimizer", "adamw");
        meta.put("weight_decay", settings.weightDecay());
        meta.put("max_grad_norm", settings.maxGradNorm());
        meta.put("epochs", settings.epochs());
        meta.put("micro_batch", settings.microBatch());
        meta.put("grad_accum", settings.gradAccum());
        meta.put("group_by_length", settings.groupByLength());
        meta.put("max_len", settings.maxLength());
        meta.put("loss_on", settings.lossOn().name().toLowerCase(Locale.ROOT));
        meta.put("seed", settings.seed());
        Map<String, Object> counts = new LinkedHashMap<>();
        counts.put("file", settings.data().toString());
        counts.put("rows", data.rows());
        counts.put("examples", data.examples().size());
        counts.put("truncated", data.truncated());
        counts.put("dropped", data.dropped());
        counts.put("tokenized_piecewise", data.tokenizedPiecewise());
        counts.put("prompts_merged", data.promptsMerged());
        counts.put("rendering", data.rendering());
        counts.put("tokens", data.tokens());
        counts.put("assistant_tokens", data.labelledTokens());
        meta.put("data", counts);
        meta.put("steps", plan.steps().size());
        meta.put("completed_steps", outcome.completedSteps());
        meta.put("stopped", outcome.stopped());
        meta.put("loss_history", history);
        long tokens = outcome.reports().stream().mapToLong(StepReport::tokens).sum();
        Map<String, Object> timing = new LinkedHashMap<>();
        timing.put("seconds", seconds);
        timing.put("tokens", tokens);
        timing.put("tokens_per_second", seconds > 0 ? tokens / seconds : 0);
        meta.put("timing", timing);
        return meta;
    }

    private static Map<String, Object> historyEntry(StepReport report) {
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("step", report.step());
        entry.put("epoch", report.epoch());
        entry.put("loss", report.loss());
        entry.put("lr", report.learningRate());
        entry.put("grad_norm", report.gradNorm());
        return entry;
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> previousHistory(Path outDir, long completedSteps) {
        return FinetuneOutput.readMeta(outDir)
                .map(meta -> (List<Map<String, Object>>) meta.getOrDefault("loss_history", List.of()))
                .orElse(List.of()).stream()
                .filter(entry -> ((Number) entry.get("step")).longValue() <= completedSteps).toList();
    }

    /** Ties a saved state to the model, the data and the settings that shape the run. */
    private String fingerprint(Path modelDir, Checkpoint checkpoint) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            digest.update(Files.readAllBytes(modelDir.resolve(ModelConfig.FILE_NAME)));
            for (String name : checkpoint.names()) {
                digest.update((name + checkpoint.info(name)).getBytes(StandardCharsets.UTF_8));
            }
            digest.update(FileHashes.sha256(settings.data()).getBytes(StandardCharsets.UTF_8));
            digest.update(JSON.writeValueAsBytes(settings.runIdentity()));
            return HexFormat.of().formatHex(digest.digest());
        } catch (NoSuchAlgorithmException | JsonProcessingException e) {
            throw new IllegalStateException(e);
        } catch (java.io.IOException e) {
            throw new UserInputException("cannot read " + modelDir.resolve(ModelConfig.FILE_NAME) + ": " + e.getMessage());
        }
    }

    private OptionalLong deviceMemory(ProbedBackend chosen, int index) {
        Optional<String> override = host.environment().get("CRUCIBLE_DEVICE_MEMORY");
        if (override.isPresent()) {
            return OptionalLong.of(ByteSize.parse(override.get(), "CRUCIBLE_DEVICE_MEMORY"));
        }
        return chosen.probe().devices().stream().filter(device -> device.index() == index)
                .map(DeviceInfo::memoryBytes).findFirst().orElse(OptionalLong.empty());
    }

    /**
     * What the model folder of a full fine-tune takes; the chat templates it will copy are compiled now, as every
     * exported folder's are, so that a broken one stops the run before training rather than at the save.
     */
    private static long modelFolderBytes(Path modelDir) {
        BaseFiles files = BaseFiles.of(modelDir);
        files.checkChatTemplates();
        return files.exportBytes();
    }

    /** Every adaptable projection's full name, layer by layer, as the model's layout has them. */
    static List<String> projections(ModelConfig config) {
        return config.layout().linears().stream().map(Linear::module).toList();
    }

    private static String dataLine(ExampleEncoder.Result data) {
        StringBuilder line = new StringBuilder(String.format(Locale.ROOT,
                "data: %,d rows, %,d tokens, %,d of them trained on", data.rows(), data.tokens(),
                data.labelledTokens()));
        if (data.truncated() > 0 || data.dropped() > 0) {
            line.append(String.format(Locale.ROOT, "; longer than --max-len: %d truncated, %d dropped",
                    data.truncated(), data.dropped()));
        }
        if (data.tokenizedPiecewise() > 0) {
            line.append("; ").append(data.tokenizedPiecewise()).append(" rows tokenized turn by turn");
        }
        if (data.promptsMerged() > 0) {
            line.append("; ").append(data.promptsMerged()).append(" rows whose prompt's last token merges with the "
                    + "completion (the loss starts after the prompt's own token count, as in TRL; start completions "
                    + "with the space or newline that separates them)");
        }
        return line.toString();
    }

    /** 32, 0.0002: as the user wrote it, not 32.0 or 2.0E-4. */
    static String number(double value) {
        return java.math.BigDecimal.valueOf(value).stripTrailingZeros().toPlainString();
    }
}
