package dev.crucible.runner.evaluation;

import dev.crucible.api.model.Activations;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.Generation;
import dev.crucible.api.scoring.PromptSet;
import dev.crucible.api.scoring.ScoringContext;
import dev.crucible.runner.session.ModelSession;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * A model state's outputs on the evaluation prompt sets, as scorers read them: greedy responses and first-token
 * log-probabilities, each computed on first request and cached. A scorer comparing against the base reads the
 * baseline's outputs, which are frozen before any edit so they can never be computed on an edited model.
 */
public final class ModelOutputs implements ScoringContext {
    private final ModelSession session;
    private final EvaluationPrompts prompts;
    private final int maxResponseLength;
    private final int batchSize;
    private final Timings timings;
    private final ModelOutputs baseline;
    private final Map<PromptSet, List<String>> responses = new EnumMap<>(PromptSet.class);
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
        if (cached != null) {
            return cached;
        }
        checkNotFrozen();
        long start = System.nanoTime();
        List<Generation> generations = session.generate(prompts.ids().get(set), maxResponseLength, batchSize);
        List<String> texts = new ArrayList<>();
        for (Generation g : generations) {
            int[] tokens = g.tokens();
            texts.add(session.tokenizer().decode(g.stopped() ? Arrays.copyOf(tokens, tokens.length - 1) : tokens));
        }
        timings.add("generation", System.nanoTime() - start);
        responses.put(set, List.copyOf(texts));
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
