package dev.crucible.runner.evaluation;

import dev.crucible.api.model.Activations;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.Generation;
import dev.crucible.api.model.StopCondition;
import dev.crucible.api.scoring.PromptSet;
import dev.crucible.api.scoring.ScoringContext;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.text.ModelTokenizer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * A model state's outputs on the evaluation prompt sets, as scorers read them: greedy responses and first-token
 * log-probabilities, each computed on first request and cached. An edited model's responses end early where the
 * scorer asking for them says the rest cannot change its verdict ({@link #responses(PromptSet, Predicate)}). A
 * scorer comparing against the base reads the baseline's outputs, which are frozen before any edit so they can
 * never be computed on an edited model.
 */
public final class ModelOutputs implements ScoringContext {
    private final ModelSession session;
    private final EvaluationPrompts prompts;
    private final int maxResponseLength;
    private final int batchSize;
    private final Timings timings;
    private final ModelOutputs baseline;
    private final Map<PromptSet, List<String>> responses = new EnumMap<>(PromptSet.class);
    /** The sets whose cached responses ended where a predicate settled them, and the predicate. */
    private final Map<PromptSet, Predicate<String>> cutBy = new EnumMap<>(PromptSet.class);
    private final Map<PromptSet, float[][]> logProbs = new EnumMap<>(PromptSet.class);
    private boolean frozen;

    /** The evaluation prompts as written and as encoded for the model. */
    public record EvaluationPrompts(Map<PromptSet, List<String>> texts, Map<PromptSet, List<int[]>> ids) { }

    /** @param baseline the base model's outputs, or null when this is the base */
    public ModelOutputs(ModelSession session, EvaluationPrompts prompts, int maxResponseLength, int batchSize,
                        Timings timings, ModelOutputs baseline) {
        this.session = session;
        this.prompts = prompts;
        this.maxResponseLength = maxResponseLength;
        this.batchSize = batchSize;
        this.timings = timings;
        this.baseline = baseline;
    }

    @Override
    public List<String> prompts(PromptSet set) {
        return prompts.texts().get(set);
    }

    @Override
    public synchronized List<String> responses(PromptSet set) {
        List<String> cached = responses.get(set);
        if (cached != null && !cutBy.containsKey(set)) {
            return cached;
        }
        return generate(set, null);
    }

    /**
     * Responses that end once {@code settled} holds for their text (checked every {@link #SETTLE_CHECK_EVERY}
     * tokens); the base model's are always whole, since the study keeps them. Cached like whole ones: asked again
     * with an equal predicate, or after whole responses were generated, nothing is generated.
     */
    @Override
    public synchronized List<String> responses(PromptSet set, Predicate<String> settled) {
        if (baseline == null) {
            return responses(set);
        }
        List<String> cached = responses.get(set);
        if (cached != null && (!cutBy.containsKey(set) || cutBy.get(set).equals(settled))) {
            return cached;
        }
        return generate(set, settled);
    }

    /**
     * How often a row's text is decoded to ask whether it is settled: each check decodes the row's tokens so far,
     * and a refusal marker is a few tokens long, so checking every fourth token ends a refusal at most three tokens
     * late for a quarter of the decoding.
     */
    static final int SETTLE_CHECK_EVERY = 4;

    /** @param settled ends a row once it holds for the row's text, or null for whole responses */
    private List<String> generate(PromptSet set, Predicate<String> settled) {
        checkNotFrozen();
        long start = System.nanoTime();
        ModelTokenizer tokenizer = session.tokenizer();
        StopCondition condition = settled == null ? StopCondition.NONE
                : (prompt, tokens) -> tokens.length % SETTLE_CHECK_EVERY == 0 && settled.test(tokenizer.decode(tokens));
        List<Generation> generations = session.generate(prompts.ids().get(set), maxResponseLength, batchSize, condition);
        List<String> texts = new ArrayList<>();
        for (Generation g : generations) {
            int[] tokens = g.tokens();
            texts.add(tokenizer.decode(g.stopped() ? Arrays.copyOf(tokens, tokens.length - 1) : tokens));
        }
        timings.add("generation", System.nanoTime() - start);
        responses.put(set, List.copyOf(texts));
        if (settled == null) {
            cutBy.remove(set);
        } else {
            cutBy.put(set, settled);
        }
        return responses.get(set);
    }

    @Override
    public synchronized float[][] firstTokenLogProbs(PromptSet set) {
        float[][] cached = logProbs.get(set);
        if (cached != null) {
            return cached;
        }
        checkNotFrozen();
        long start = System.nanoTime();
        List<Activations> acts = session.forward(new ForwardRequest(prompts.ids().get(set), batchSize)).prompts();
        float[][] out = new float[acts.size()][];
        for (int i = 0; i < out.length; i++) {
            out[i] = logSoftmax(acts.get(i).logits());
        }
        timings.add("kl_forward", System.nanoTime() - start);
        logProbs.put(set, out);
        return out;
    }

    @Override
    public float[][] baseFirstTokenLogProbs(PromptSet set) {
        return (baseline == null ? this : baseline).firstTokenLogProbs(set);
    }

    /** The responses computed (or restored) so far, by set: what a study keeps of its base model. */
    public synchronized Map<PromptSet, List<String>> computedResponses() {
        return new EnumMap<>(responses);
    }

    /** The first-token log-probabilities computed (or restored) so far, by set. */
    public synchronized Map<PromptSet, float[][]> computedLogProbs() {
        return new EnumMap<>(logProbs);
    }

    /** Outputs of this same model state computed by an earlier run; they are used instead of computing them again. */
    public synchronized void restore(Map<PromptSet, List<String>> earlierResponses, Map<PromptSet, float[][]> earlierLogProbs) {
        checkNotFrozen();
        earlierResponses.forEach((set, texts) -> responses.put(set, List.copyOf(texts)));
        logProbs.putAll(earlierLogProbs);
    }

    /** Computes the log-probabilities of every set, then refuses further computation (see class comment). */
    public synchronized void freeze() {
        for (PromptSet set : PromptSet.values()) {
            firstTokenLogProbs(set);
        }
        frozen = true;
    }

    private void checkNotFrozen() {
        if (frozen) {
            throw new IllegalStateException("the base model's outputs were asked for after trials began; a scorer must read them in baseline()");
        }
    }

    static float[] logSoftmax(float[] logits) {
        double max = Double.NEGATIVE_INFINITY;
        for (float x : logits) {
            max = Math.max(max, x);
        }
        double sum = 0;
        for (float x : logits) {
            sum += Math.exp(x - max);
        }
        double log = max + Math.log(sum);
        float[] out = new float[logits.length];
        for (int i = 0; i < logits.length; i++) {
            out[i] = (float) (logits[i] - log);
        }
        return out;
    }
}
