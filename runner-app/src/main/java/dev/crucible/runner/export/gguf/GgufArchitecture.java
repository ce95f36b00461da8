package dev.crucible.runner.export.gguf;

import dev.crucible.api.UserInputException;
import dev.crucible.api.model.Architecture;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.RopeScaling;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A family as llama.cpp reads it: the architecture name its loader knows it by, the hyperparameter keys it reads
 * (src/llama-arch.cpp, src/models/*.cpp), its name for every tensor and the transforms its converter applies to the
 * values (convert_hf_to_gguf.py). What its loader assumes rather than reads (Gemma's attention scale, SmolLM3's NoPE
 * step, Qwen3-MoE's all-sparse layers) is checked against the model, and a model it would misread is refused.
 *
 * @param name      llama.cpp's architecture name ({@code general.architecture})
 * @param config    the model
 */
record GgufArchitecture(String name, ModelConfig config) {

    private static final Pattern LAYER = Pattern.compile("model\\.layers\\.(\\d+)\\.(.+)");
    private static final Pattern EXPERT = Pattern.compile("(?:block_sparse_moe|mlp)\\.experts\\.(\\d+)\\.(\\w+)");

    /** llama.cpp's name for a tensor, the tensor's role (for the quantization mix) and layer. */
    record Name(String gguf, String role, int layer) { }

    /** One expert's projection: its place in the layer's stacked {@code ffn_*_exps} tensor. */
    record ExpertPart(Name stacked, int expert) { }

    /**
     * The family of {@code config} as llama.cpp reads it; a family llama.cpp has no architecture for here, or a model
     * whose settings its loader would not honour, is refused with the reason.
     */
    static GgufArchitecture of(ModelConfig config) {
        Architecture architecture = config.architecture();
        String name = switch (architecture) {
            case LLAMA, MISTRAL, MIXTRAL -> "llama";
            case QWEN2 -> "qwen2";
            case QWEN3 -> "qwen3";
            case QWEN3_MOE -> "qwen3moe";
            case PHI3 -> "phi3";
            case GEMMA2 -> "gemma2";
            case GEMMA3 -> "gemma3";
            case OLMO2 -> "olmo2";
            case GRANITE -> "granite";
            case SMOLLM3 -> "smollm3";
            default -> throw new UserInputException("GGUF export is not available for " + architecture.modelType()
                    + " models yet; it supports " + SUPPORTED + " (export a safetensors folder instead)");
        };
        GgufArchitecture gguf = new GgufArchitecture(name, config);
        gguf.check();
        return gguf;
    }

    static final String SUPPORTED = "llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, phi3, gemma2, gemma3_text, "
            + "olmo2, granite and smollm3";

    private void check() {
        String what = config.architecture().modelType() + " model";
        switch (config.architecture()) {
            case QWEN3_MOE -> {
                List<Integer> dense = new ArrayList<>();
                for (int layer = 0; layer < config.numLayers(); layer++) {
                    if (!config.experts().sparse(layer)) {
                        dense.add(layer);
                    }
                }
                if (!dense.isEmpty()) {
                    refuse(what + " has dense MLP layers " + dense + " (mlp_only_layers/decoder_sparse_step), and "
                            + "llama.cpp's qwen3moe makes every layer a mixture of experts");
                }
                if (!config.experts().normalize()) {
                    refuse(what + " has norm_topk_prob false, and llama.cpp's qwen3moe always renormalizes the "
                            + "chosen experts' weights");
                }
            }
            case SMOLLM3 -> {
                List<Integer> expected = new ArrayList<>();
                for (int layer = 0; layer < config.numLayers(); layer++) {
                    if ((layer + 1) % SMOLLM3_NO_ROPE_STEP == 0) {
                        expected.add(layer);
                    }
                }
                if (!config.options().positionlessLayers().equals(expected)) {
                    refuse(what + " applies no rotary embedding on layers " + config.options().positionlessLayers()
                            + ", and llama.cpp's smollm3 on every 4th layer " + expected);
                }
                if (config.slidingWindow() > 0) {
                    refuse(what + " has a sliding window, which llama.cpp's smollm3 does not apply");
                }
            }
            case GEMMA2, GEMMA3 -> {
                if (config.slidingWindow() > 0) {
                    slidingPattern(what);
                }
                if (config.architecture() == Architecture.GEMMA2
                        && (config.options().attentionSoftcap() <= 0 || config.options().logitSoftcap() <= 0)) {
                    refuse(what + " has no attention or final logit soft-capping, and llama.cpp's gemma2 always "
                            + "applies both");
                }
                if (config.architecture() == Architecture.GEMMA2 && !config.tieWordEmbeddings()) {
                    refuse(what + " has its own output head, and llama.cpp's gemma2 always uses the embedding");
                }
                if (config.architecture() == Architecture.GEMMA3 && config.options().attentionSoftcap() > 0) {
                    refuse(what + " soft-caps attention logits, which llama.cpp's gemma3 does not");
                }
            }
            case OLMO2 -> {
                if (config.qkvBias() || config.outputBias()) {
                    refuse(what + " has attention biases, which llama.cpp's olmo2 does not load");
                }
            }
            default -> { }
        }
        if (config.ropeScaling() instanceof RopeScaling.Llama3 && !name.equals("llama")) {
            refuse(what + " has Llama 3 rope scaling, which llama.cpp reads only for llama models");
        }
    }

    /** llama.cpp's smollm3 leaves out the rotary embedding on every 4th layer (its {@code n_no_rope_layer_step}). */
    private static final int SMOLLM3_NO_ROPE_STEP = 4;

    /**
     * The period N of Gemma's windowed layers (every layer windowed but each N-th), the only form llama.cpp's
     * {@code sliding_window_pattern} takes.
     */
    int slidingPattern(String what) {
        for (int period = 1; period <= config.numLayers() + 1; period++) {
            boolean matches = true;
            for (int layer = 0; layer < config.numLayers() && matches; layer++) {
                matches = (config.windowOf(layer) > 0) == ((layer + 1) % period != 0);
            }
            if (matches) {
                return period;
            }
        }
        refuse(what + "'s windowed layers are not every layer but each N-th, the only pattern llama.cpp reads");
        return 0;
    }

    private static void refuse(String reason) {
        throw new UserInputException("GGUF export: the " + reason + "; it cannot be written to GGUF (export a "
                + "safetensors folder instead)");
    }

    /** Whether llama.cpp's rope for this family rotates adjacent pairs, so the converter reorders q and k rows. */
    boolean interleavedRope() {
        return switch (config.architecture()) {
            case LLAMA, MISTRAL, MIXTRAL, GRANITE, SMOLLM3 -> true;
            default -> false;
        };
    }

    /** The hyperparameters under llama.cpp's keys for this family. */
    void hyperparameters(GgufFile file) {
        String arch = name;
        file.put(arch + ".vocab_size", new GgufFile.Value.U32(config.vocabSize()));
        file.put(arch + ".context_length", new GgufFile.Value.U32(config.maxPositionEmbeddings()));
        file.put(arch + ".embedding_length", new GgufFile.Value.U32(config.hiddenSize()));
        file.put(arch + ".block_count", new GgufFile.Value.U32(config.numLayers()));
        file.put(arch + ".feed_forward_length", new GgufFile.Value.U32(config.intermediateSize()));
        file.put(arch + ".attention.head_count", new GgufFile.Value.U32(config.numHeads()));
        file.put(arch + ".attention.head_count_kv", new GgufFile.Value.U32(config.numKvHeads()));
        file.put(arch + ".attention.key_length", new GgufFile.Value.U32(config.headDim()));
        file.put(arch + ".attention.value_length", new GgufFile.Value.U32(config.headDim()));
        // Phi-3's partial rotary: llama.cpp rotates the first rope.dimension_count dimensions of each head.
        file.put(arch + ".rope.dimension_count", new GgufFile.Value.U32(config.rotaryDims()));
        file.put(arch + ".rope.freq_base", new GgufFile.Value.F32((float) config.ropeTheta()));
        file.put(arch + ".attention.layer_norm_rms_epsilon", new GgufFile.Value.F32((float) config.rmsNormEps()));
        if (config.ropeScaling() instanceof RopeScaling.Linear linear) {
            file.put(arch + ".rope.scaling.type", new GgufFile.Value.Str("linear"));
            file.put(arch + ".rope.scaling.factor", new GgufFile.Value.F32((float) linear.factor()));
        }
        if (config.experts().count() > 0) {
            file.put(arch + ".expert_count", new GgufFile.Value.U32(config.experts().count()));
            file.put(arch + ".expert_used_count", new GgufFile.Value.U32(config.experts().perToken()));
            if (config.architecture() == Architecture.QWEN3_MOE) {
                file.put(arch + ".expert_feed_forward_length", new GgufFile.Value.U32(config.experts().width()));
            }
        }
        switch (config.architecture()) {
            case PHI3 -> file.put(arch + ".attention.sliding_window", new GgufFile.Value.U32(config.slidingWindow()));
            case GEMMA2, GEMMA3 -> {
                if (config.architecture() == Architecture.GEMMA2) {
                    file.put(arch + ".attn_logit_softcapping",
                            new GgufFile.Value.F32((float) config.options().attentionSoftcap()));
                }
                if (config.options().logitSoftcap() > 0) {
                    file.put(arch + ".final_logit_softcapping",
                            new GgufFile.Value.F32((float) config.options().logitSoftcap()));
                }
                if (config.slidingWindow() > 0) {
                    file.put(arch + ".attention.sliding_window", new GgufFile.Value.U32(config.slidingWindow()));
                    // Written although the converter leaves it to llama.cpp's default (2 for Gemma 2, 6 for Gemma 3),
                    // so a model with another period is read as it is.
                    file.put(arch + ".attention.sliding_window_pattern",
                            new GgufFile.Value.U32(slidingPattern(config.architecture().modelType() + " model")));
                }
                config.options().localRopeTheta().ifPresent(theta ->
                        file.put(arch + ".rope.freq_base_swa", new GgufFile.Value.F32((float) theta)));
            }
            case GRANITE -> {
                config.options().attentionMultiplier().ifPresent(scale ->
                        file.put(arch + ".attention.scale", new GgufFile.Value.F32((float) scale)));
                file.put(arch + ".embedding_scale",
                        new GgufFile.Value.F32((float) config.options().embeddingMultiplier()));
                file.put(arch + ".residual_scale", new GgufFile.Value.F32((float) config.options().residualMultiplier()));
                file.put(arch + ".logit_scale", new GgufFile.Value.F32((float) config.options().logitsScaling()));
            }
            default -> { }
        }
    }

    /** Whether llama.cpp's loader wants {@code output.weight} even when the head is tied (OLMo 2's requires it). */
    boolean storesTiedHead() {
        return config.architecture() == Architecture.OLMO2;
    }

    /**
     * llama.cpp's name for the checkpoint tensor {@code hf}, or null for one it does not store (rotary caches); an
     * expert's projection is named by {@link #expertPart}.
     */
    Name name(String hf) {
        switch (hf) {
            case "model.embed_tokens.weight":
                return new Name("token_embd.weight", "token_embd", -1);
            case "model.norm.weight":
                return new Name("output_norm.weight", "output_norm", -1);
            case "lm_head.weight":
                return new Name("output.weight", "output", -1);
            default:
                break;
        }
        Matcher layer = LAYER.matcher(hf);
        if (layer.matches()) {
            int index = Integer.parseInt(layer.group(1));
            String rest = layer.group(2);
            int dot = rest.lastIndexOf('.');
            String module = rest.substring(0, dot);
            String kind = rest.substring(dot + 1);
            boolean postNorms = switch (config.architecture()) {
                case GEMMA2, GEMMA3, OLMO2 -> true;
                default -> false;
            };
            String role = switch (module) {
                case "input_layernorm" -> "attn_norm";
                // Gemma and OLMo 2 norm attention's output with it; the others norm the MLP's input.
                case "post_attention_layernorm" -> postNorms ? "post_attention_norm" : "ffn_norm";
                case "pre_feedforward_layernorm" -> "ffn_norm";
                case "post_feedforward_layernorm" -> "post_ffw_norm";
                case "self_attn.q_proj" -> "attn_q";
                case "self_attn.k_proj" -> "attn_k";
                case "self_attn.v_proj" -> "attn_v";
                case "self_attn.qkv_proj" -> "attn_qkv";
                case "self_attn.o_proj" -> "attn_output";
                case "self_attn.q_norm" -> "attn_q_norm";
                case "self_attn.k_norm" -> "attn_k_norm";
                case "mlp.gate_proj" -> "ffn_gate";
                case "mlp.up_proj" -> "ffn_up";
                // Phi-3's gate rows then up rows: llama.cpp's fused ffn_up, whose first half its SwiGLU gates.
                case "mlp.gate_up_proj" -> "ffn_up";
                case "mlp.down_proj" -> "ffn_down";
                case "block_sparse_moe.gate", "mlp.gate" -> "ffn_gate_inp";
                default -> null;
            };
            if (role != null && (kind.equals("weight") || kind.equals("bias"))) {
                return new Name("blk." + index + "." + role + "." + kind, role, index);
            }
        }
        if (hf.endsWith("rotary_emb.inv_freq")) {
            return null;
        }
        throw new UserInputException("tensor " + hf + " has no name in llama.cpp's " + name
                + " layout; it cannot be written to GGUF");
    }

    /** Where an expert's projection goes: {@code blk.N.ffn_{gate,up,down}_exps.weight}, or null if {@code hf} is none. */
    ExpertPart expertPart(String hf) {
        Matcher layer = LAYER.matcher(hf);
        if (!layer.matches() || !layer.group(2).endsWith(".weight")) {
            return null;
        }
        String module = layer.group(2).substring(0, layer.group(2).length() - ".weight".length());
        Matcher expert = EXPERT.matcher(module);
        if (!expert.matches()) {
            return null;
        }
        String role = switch (expert.group(2)) {
            case "w1", "gate_proj" -> "ffn_gate";
            case "w3", "up_proj" -> "ffn_up";
            case "w2", "down_proj" -> "ffn_down";
            default -> throw new UserInputException("tensor " + hf + " has no name in llama.cpp's " + name
                    + " layout; it cannot be written to GGUF");
        };
        int index = Integer.parseInt(layer.group(1));
        return new ExpertPart(new Name("blk." + index + "." + role + "_exps.weight", role, index),
                Integer.parseInt(expert.group(1)));
    }

    /**
     * The converter's value transforms: Gemma's norms stored as {@code 1 + weight} (llama.cpp multiplies by the
     * weight itself), and, where Gemma's {@code query_pre_attn_scalar} is not what llama.cpp assumes, the ratio of the
     * two attention scales folded into the queries (q_proj for Gemma 2; Gemma 3's per-head q_norm, which follows
     * q_proj) so the scores are the model's. Returns {@code values}, changed in place.
     */
    float[] transform(Name name, float[] values) {
        boolean gemma = config.architecture() == Architecture.GEMMA2 || config.architecture() == Architecture.GEMMA3;
        if (!gemma) {
            return values;
        }
        if (name.gguf().endsWith("norm.weight")) {
            for (int i = 0; i < values.length; i++) {
                values[i] += 1;
            }
        }
        String queries = config.architecture() == Architecture.GEMMA2 ? "attn_q" : "attn_q_norm";
        double fold = gemmaQueryFold();
        if (name.role().equals(queries) && fold != 1) {
            for (int i = 0; i < values.length; i++) {
                values[i] = (float) (values[i] * fold);
            }
        }
        return values;
    }

    /**
     * The model's attention scale over the one llama.cpp's gemma2/gemma3 hard-code: {@code 1/sqrt(hidden/heads)}
     * for the 27B shapes (46 or 62 layers), {@code 1/sqrt(head_dim)} otherwise; 1 for real Gemma checkpoints.
     */
    double gemmaQueryFold() {
        int layers27b = config.architecture() == Architecture.GEMMA2 ? 46 : 62;
        double assumed = 1 / Math.sqrt(config.numLayers() == layers27b
                ? (double) (config.hiddenSize() / config.numHeads()) : config.headDim());
        double actual = config.options().attentionMultiplier().orElse(1 / Math.sqrt(config.headDim()));
        return Math.abs(actual - assumed) <= 1e-9 * assumed ? 1 : actual / assumed;
    }
}
