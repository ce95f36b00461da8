package dev.crucible.runner.abliterate;

import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.model.Activations;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.LoraFactors;
import dev.crucible.api.model.layout.Linear;
import dev.crucible.api.model.layout.ModelLayout;
import dev.crucible.api.model.layout.Role;
import dev.crucible.api.scoring.PromptSet;
import dev.crucible.api.scoring.ScoringContext;
import dev.crucible.api.tensor.DType;
import dev.crucible.runner.abliterate.config.RowNormalization;
import dev.crucible.runner.session.ContextBudget;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.session.PromptTruncation;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.function.Consumer;
import dev.crucible.runner.evaluation.ModelOutputs;
import dev.crucible.runner.evaluation.Timings;

/**
 * The abliteration experiment on one loaded model, on any backend: refusal directions from the training prompts,
 * a trial's edit applied as LoRA adapters (the base weights are loaded once and never change; a trial resets by
 * zeroing B), and the outputs scorers read, computed lazily and cached per model state.
 */
public final class Abliterator {
    /** What the experiment needs besides the model. */
    public record Options(String responsePrefix, int maxResponseLength, int batchSize,
                          RowNormalization rowNormalization, int loraRank, double winsorizationQuantile,
                          boolean orthogonalize, long seed, PromptTruncation truncation) { }

    /**
     * One prompt set as the user wrote it, and the system prompt its prompts are rendered with.
     *
     * @param name how messages name the set: its setting's flag without dashes, {@code bad-prompts}
     */
    public record PromptGroup(String name, List<String> texts, Optional<String> systemPrompt) {
        public PromptGroup {
            texts = List.copyOf(texts);
        }
    }

    /** The four prompt sets of the method. */
    public record Prompts(PromptGroup harmfulTrain, PromptGroup harmlessTrain, PromptGroup harmfulTest,
                          PromptGroup harmlessTest) { }

    private final ModelSession session;
    private final Options options;
    private final Prompts prompts;
    private final Timings timings = new Timings();
    private ModelOutputs.EvaluationPrompts evaluation;
    private List<int[]> harmfulTrainIds;
    private List<int[]> harmlessTrainIds;
    private final Map<String, EditableWeight> weights = new LinkedHashMap<>();
    private RefusalDirections directions;
    private ModelOutputs base;

    public Abliterator(ModelSession session, Prompts prompts, Options options) {
        this.session = session;
        this.prompts = prompts;
        this.options = options;
    }

    /** A weight the edit may touch, in float32 with its row norms, read from the checkpoint once per run. */
    private record EditableWeight(Linear linear, float[] values, float[] rowNorms) { }

    /**
     * Encodes the four prompt sets, each prompt plus the response length checked against the model's context
     * before anything runs (cut to fit when {@link Options#truncation()} says so). Returns a note per set whose
     * prompts were cut. {@link #prepare} does this first when it was not done.
     *
     * @throws dev.crucible.api.UserInputException naming the first prompt that does not fit
     */
    public List<String> encodePrompts() {
        ContextBudget budget = session.budget(options.maxResponseLength(), "--max-response-length", options.truncation());
        List<String> notes = new ArrayList<>();
        List<EncodedPrompts> sets = new ArrayList<>();
        for (PromptGroup group : List.of(prompts.harmfulTrain(), prompts.harmlessTrain(), prompts.harmfulTest(),
                prompts.harmlessTest())) {
            EncodedPrompts encoded = EncodedPrompts.of(session, budget, group, options.responsePrefix());
            encoded.cutNote(budget, group).ifPresent(notes::add);
            sets.add(encoded);
        }
        harmfulTrainIds = sets.get(0).ids();
        harmlessTrainIds = sets.get(1).ids();
        evaluation = new ModelOutputs.EvaluationPrompts(
                Map.of(PromptSet.HARMFUL, sets.get(2).texts(), PromptSet.HARMLESS, sets.get(3).texts()),
                Map.of(PromptSet.HARMFUL, sets.get(2).ids(), PromptSet.HARMLESS, sets.get(3).ids()));
        return notes;
    }

    /**
     * Computes the refusal directions from the training sets and the base model's outputs for the test sets.
     * {@code progress} receives one line per step.
     */
    public void prepare(Consumer<String> progress) {
        prepare(progress, Optional.empty());
    }

    /**
     * As {@link #prepare(Consumer)}, but what {@code earlier} holds (a study's cache, computed for this model,
     * these prompts and these options) is taken as it is instead of being computed again.
     */
    public void prepare(Consumer<String> progress, Optional<StudyCache.Prepared> earlier) {
        if (evaluation == null) {
            encodePrompts().forEach(progress);
        }
        if (earlier.isPresent()) {
            directions = earlier.get().directions();
        } else {
            progress.accept("residuals of " + prompts.harmfulTrain().texts().size() + " harmful and "
                    + prompts.harmlessTrain().texts().size() + " harmless training prompts");
            long start = System.nanoTime();
            PassProgress pass = new PassProgress("residuals", harmfulTrainIds.size() + harmlessTrainIds.size(), progress,
                    System::nanoTime);
            List<Activations> bad = forward(harmfulTrainIds, pass);
            List<Activations> good = forward(harmlessTrainIds, pass);
            directions = RefusalDirections.compute(bad, good, options.winsorizationQuantile(), options.orthogonalize());
            timings.add("directions", System.nanoTime() - start);
        }
        for (Linear linear : session.model().layout().residualWriters()) {
            // On a quantized model the edit starts from the rows the model computes with: the dequantized ones.
            float[] values = session.weightValues(linear.weight().name());
            weights.put(linear.module(), new EditableWeight(linear, values,
                    AblationAdapter.rowNorms(values, (int) linear.out(), (int) linear.in())));
        }
        session.model().zeroAdapters();
        base = outputs(null);
        if (earlier.isPresent()) {
            base.restore(earlier.get().baseResponses(), earlier.get().baseLogProbs());
        } else {
            progress.accept("base model outputs on " + prompts.harmfulTest().texts().size() + " harmful and "
                    + prompts.harmlessTest().texts().size() + " harmless test prompts");
        }
    }

    /** What {@link #prepare} computed and the base model's outputs so far, for the study to keep. */
    public StudyCache.Prepared prepared() {
        return new StudyCache.Prepared(options.responsePrefix(), directions, base.computedResponses(), base.computedLogProbs());
    }

    private ModelOutputs outputs(ModelOutputs baseline) {
        return new ModelOutputs(session, evaluation, options.maxResponseLength(), options.batchSize(), timings, baseline);
    }

    /**
     * Ends the baseline phase: computes the base first-token log-probabilities of both test sets (KL compares
     * every trial against them) and refuses any further base computation, which would run on an edited model.
     */
    public void freezeBase() {
        base.freeze();
    }

    /** Test hook: freezing twice is harmless. */
    void freezeBaseForTest() {
        base.freeze();
    }

    /**
     * The weight profile of an edited component: the method edits every projection that writes into the residual
     * stream ({@link ModelLayout#residualWriters()}), attention's (or a convolution's) output with the attention
     * profile and the MLP's down projection (every expert's) with the MLP one.
     */
    private static AblationParameters.WeightProfile profile(AblationParameters parameters, Role role) {
        return switch (role) {
            // LFM2's convolution layers take the place of attention: their out_proj gets the attention profile.
            case ATTENTION_OUTPUT, CONVOLUTION_OUTPUT -> parameters.attention();
            case MLP_DOWN -> parameters.mlp();
            default -> throw new IllegalArgumentException(role + " does not write into the residual stream");
        };
    }

    public RefusalDirections directions() {
        return directions;
    }

    public Timings timings() {
        return timings;
    }

    public int numLayers() {
        return session.config().numLayers();
    }

    /** The unedited model's outputs (what baselines are scored on). */
    public ScoringContext baseContext() {
        return base;
    }

    /** Applies a trial's edit and returns the context its scores read; the edit stays until the next call. */
    public ScoringContext apply(AblationParameters parameters) {
        long start = System.nanoTime();
        Map<String, LoraFactors> adapters = adapters(parameters);
        DeviceModel model = session.model();
        model.zeroAdapters();
        adapters.forEach(model::setAdapter);
        timings.add("adapters", System.nanoTime() - start);
        return outputs(base);
    }

    /** The LoRA factors of an edit, by module name; layers the profile skips have none. Deterministic. */
    public Map<String, LoraFactors> adapters(AblationParameters parameters) {
        Map<String, LoraFactors> out = new LinkedHashMap<>();
        for (EditableWeight weight : weights.values()) {
            String name = weight.linear().module();
            int layer = weight.linear().layer();
            OptionalDouble strength = profile(parameters, weight.linear().role()).weightAt(layer);
            if (strength.isEmpty()) {
                continue;
            }
            float[] v = parameters.perLayerScope() ? directions.at(Math.min(layer + 1, directions.count() - 1))
                    : directions.interpolated(parameters.directionIndex());
            int outFeatures = (int) weight.linear().out();
            int inFeatures = (int) weight.linear().in();
            AblationAdapter.Factors f = AblationAdapter.compute(options.rowNormalization(), weight.values(), weight.rowNorms(),
                    outFeatures, inFeatures, v, strength.getAsDouble(), options.loraRank(), options.seed() ^ name.hashCode());
            out.put(name, new LoraFactors(host(name + ".lora_A", f.a(), f.rank(), inFeatures),
                    host(name + ".lora_B", f.b(), outFeatures, f.rank()), 1.0));
        }
        return out;
    }

    private static HostTensor host(String name, float[] values, long rows, long cols) {
        return new HostTensor(name, DType.F32, new long[] {rows, cols}, MemorySegment.ofArray(values));
    }

    /**
     * The residual pass in slices of {@link PassProgress#SLICE} prompts, so a long one (minutes on a 0.5 B model)
     * reports how far it got.
     */
    private List<Activations> forward(List<int[]> ids, PassProgress pass) {
        List<Activations> out = new ArrayList<>(ids.size());
        for (int from = 0; from < ids.size(); from += PassProgress.SLICE) {
            List<int[]> slice = ids.subList(from, Math.min(ids.size(), from + PassProgress.SLICE));
            out.addAll(session.forward(new ForwardRequest(slice, options.batchSize())).prompts());
            pass.done(slice.size());
        }
        return out;
    }
}
