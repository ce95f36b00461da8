package dev.crucible.runner.export.gguf;

import dev.crucible.api.UserInputException;
import dev.crucible.api.io.AtomicFiles;
import dev.crucible.api.tensor.HalfFloats;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.io.OutputLocation;
import dev.crucible.api.io.WritableTensor;
import dev.crucible.api.model.Architecture;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.RopeScaling;
import dev.crucible.api.model.RotaryEmbedding;
import dev.crucible.api.quant.GgufCodec;
import dev.crucible.runner.export.ExportWeights;
import dev.crucible.runner.export.ExportedModel;
import dev.crucible.runner.export.ModelWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A GGUF file that llama.cpp loads with nothing beside it: the architecture's hyperparameters under its keys, the
 * tokenizer ({@link GgufTokenizer}), and every tensor under llama.cpp's name for it (token_embd, blk.N.attn_q, ...,
 * output), matrices in the type {@code type} asks for (encoded by {@link GgufCodec}, llama.cpp's reference quantizers
 * byte for byte), vectors in F32. For the llama family (Llama, Mistral) the q and k rows of each head are reordered
 * from Hugging Face's rotate-half layout to the interleaved pairs llama.cpp's rope reads, as its converter does;
 * Qwen2 and Qwen3 use the rotate-half rope and keep theirs. A tied output head is not stored (llama.cpp reuses
 * token_embd). The file is written beside {@code out} and renamed into place.
 *
 * @param type    the matrices' type
 * @param written told the file's bytes and the types it used, once it is in place
 */
public record GgufWriter(GgufType type, Written written) implements ModelWriter {

    /** What a write stored. */
    public interface Written {
        void report(long bytes, String types);
    }

    private static final Pattern LAYER = Pattern.compile("model\\.layers\\.(\\d+)\\.(.+)");

    public GgufWriter {
        Objects.requireNonNull(type, "type is null");
        Objects.requireNonNull(written, "written is null");
    }

    /**
     * The architecture name llama.cpp gives the family (Mistral is llama to it). The other families have their own
     * llama.cpp tensor names and hyperparameters (soft-capping, norms, windows) that this writer has not been checked
     * against, so they are refused rather than written as a file llama.cpp would misread.
     */
    static String architecture(Architecture architecture) {
        return switch (architecture) {
            case LLAMA, MISTRAL -> "llama";
            case QWEN2 -> "qwen2";
            case QWEN3 -> "qwen3";
            default -> throw new dev.crucible.api.UserInputException("GGUF export is not available for "
                    + architecture.modelType() + " models yet; it supports llama, mistral, qwen2 and qwen3 (export a "
                    + "safetensors folder instead)");
        };
    }

    @Override
    public void write(ExportedModel model, Path out, boolean force) {
        ExportWeights weights = model.requireWeights("a GGUF file");
        OutputLocation.checkNewFile(out, force, model.files().weightBytes());
        ModelConfig config = model.config();
        GgufFile file = new GgufFile();
        String arch = architecture(config.architecture());
        hyperparameters(file, model, arch);
        GgufTokenizer.write(file, model.files().folder(), config);
        java.util.Map<String, Integer> types = new java.util.TreeMap<>();
        try (ExportWeights.Opened opened = weights.open()) {
            for (WritableTensor tensor : opened.tensors()) {
                add(file, tensor, config, types);
            }
            if (config.ropeScaling() instanceof RopeScaling.Llama3) {
                // llama.cpp divides each rotary frequency by its factor from this tensor, as its converter writes it.
                float[] plain = new RotaryEmbedding(config.headDim(), config.ropeTheta(), new RopeScaling.None())
                        .inverseFrequencies();
                float[] scaled = new RotaryEmbedding(config).inverseFrequencies();
                float[] factors = new float[plain.length];
                for (int i = 0; i < plain.length; i++) {
                    factors[i] = plain[i] / scaled[i];
                }
                file.add(new GgufFile.Tensor("rope_freqs.weight", new long[] {factors.length}, GgufType.GGML_F32,
                        4L * factors.length, () -> f32(factors)));
                types.merge("F32", 1, Integer::sum);
            }
            OutputLocation.checkNewFile(out, force, file.size());
            Path parent = out.toAbsolutePath().normalize().getParent();
            OutputLocation.createFolder(parent);
            AtomicFiles.write(out, file::writeTo);
        }
        StringBuilder summary = new StringBuilder();
        types.forEach((name, count) -> summary.append(summary.isEmpty() ? "" : ", ").append(count).append(" ").append(name));
        written.report(file.size(), summary.toString());
    }

    private void hyperparameters(GgufFile file, ExportedModel model, String arch) {
        ModelConfig config = model.config();
        file.put("general.architecture", new GgufFile.Value.Str(arch));
        Path name = model.files().folder().toAbsolutePath().normalize().getFileName();
        file.put("general.name", new GgufFile.Value.Str(name == null ? "model" : name.toString()));
        file.put("general.file_type", new GgufFile.Value.U32(type.fileType()));
        file.put("general.quantization_version", new GgufFile.Value.U32(2));
        file.put(arch + ".vocab_size", new GgufFile.Value.U32(config.vocabSize()));
        file.put(arch + ".context_length", new GgufFile.Value.U32(config.maxPositionEmbeddings()));
        file.put(arch + ".embedding_length", new GgufFile.Value.U32(config.hiddenSize()));
        file.put(arch + ".block_count", new GgufFile.Value.U32(config.numLayers()));
        file.put(arch + ".feed_forward_length", new GgufFile.Value.U32(config.intermediateSize()));
        file.put(arch + ".attention.head_count", new GgufFile.Value.U32(config.numHeads()));
        file.put(arch + ".attention.head_count_kv", new GgufFile.Value.U32(config.numKvHeads()));
        file.put(arch + ".attention.key_length", new GgufFile.Value.U32(config.headDim()));
        file.put(arch + ".attention.value_length", new GgufFile.Value.U32(config.headDim()));
        file.put(arch + ".rope.dimension_count", new GgufFile.Value.U32(config.headDim()));
        file.put(arch + ".rope.freq_base", new GgufFile.Value.F32((float) config.ropeTheta()));
        file.put(arch + ".attention.layer_norm_rms_epsilon", new GgufFile.Value.F32((float) config.rmsNormEps()));
        if (config.ropeScaling() instanceof RopeScaling.Linear linear) {
            file.put(arch + ".rope.scaling.type", new GgufFile.Value.Str("linear"));
            file.put(arch + ".rope.scaling.factor", new GgufFile.Value.F32((float) linear.factor()));
        }
    }

    private void add(GgufFile file, WritableTensor tensor, ModelConfig config, java.util.Map<String, Integer> types) {
        String hf = tensor.name();
        if (hf.endsWith("rotary_emb.inv_freq")) {
            return;
        }
        if (hf.equals("lm_head.weight") && config.tieWordEmbeddings()) {
            return;
        }
        Name name = name(hf, config);
        long[] shape = tensor.shape();
        long[] dims = new long[shape.length];
        for (int i = 0; i < shape.length; i++) {
            dims[i] = shape[shape.length - 1 - i];
        }
        boolean llamaRope = config.architecture() == Architecture.LLAMA || config.architecture() == Architecture.MISTRAL;
        int heads = name.role().equals("attn_q") ? config.numHeads()
                : name.role().equals("attn_k") ? config.numKvHeads() : 0;
        int permuteHeads = llamaRope ? heads : 0;
        long elements = 1;
        for (long extent : shape) {
            elements *= extent;
        }
        if (shape.length == 1) {
            file.add(new GgufFile.Tensor(name.gguf(), dims, GgufType.GGML_F32, 4 * elements,
                    () -> f32(values(tensor, permuteHeads))));
            types.merge("F32", 1, Integer::sum);
            return;
        }
        if (shape.length != 2) {
            throw new UserInputException("tensor " + hf + " has " + shape.length + " dimensions; GGUF export takes "
                    + "vectors and matrices");
        }
        // A tied head is token_embd itself, so llama.cpp's quantizer gives token_embd the head's type.
        String role = name.role().equals("token_embd") && config.tieWordEmbeddings() ? "output" : name.role();
        GgufType.TensorType tensorType = type.matrixType(role, name.layer(), config.numLayers(), shape[1]);
        types.merge(tensorType.describe(), 1, Integer::sum);
        file.add(new GgufFile.Tensor(name.gguf(), dims, tensorType.ggmlType(), tensorType.bytes(elements), () -> {
            float[] values = values(tensor, permuteHeads);
            if (tensorType.block() != null) {
                return new GgufCodec(tensorType.block()).encode(values);
            }
            return switch (tensorType.ggmlType()) {
                case GgufType.GGML_F32 -> f32(values);
                case GgufType.GGML_F16 -> halves(values, false);
                default -> halves(values, true);
            };
        }));
    }

    /** llama.cpp's name for {@code hf} and the tensor's role and layer. */
    record Name(String gguf, String role, int layer) { }

    static Name name(String hf, ModelConfig config) {
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
            String role = switch (module) {
                case "input_layernorm" -> "attn_norm";
                case "post_attention_layernorm" -> "ffn_norm";
                case "self_attn.q_proj" -> "attn_q";
                case "self_attn.k_proj" -> "attn_k";
                case "self_attn.v_proj" -> "attn_v";
                case "self_attn.o_proj" -> "attn_output";
                case "self_attn.q_norm" -> "attn_q_norm";
                case "self_attn.k_norm" -> "attn_k_norm";
                case "mlp.gate_proj" -> "ffn_gate";
                case "mlp.up_proj" -> "ffn_up";
                case "mlp.down_proj" -> "ffn_down";
                default -> null;
            };
            if (role != null && (kind.equals("weight") || kind.equals("bias"))) {
                return new Name("blk." + index + "." + role + "." + kind, role, index);
            }
        }
        throw new UserInputException("tensor " + hf + " has no name in llama.cpp's " + architecture(config.architecture())
                + " layout; it cannot be written to GGUF");
    }

    /**
     * The tensor's values; with {@code heads > 0} its rows (a q or k projection, or its bias) reordered per head from
     * rotate-half (the first half of a head's rows, then the second) to interleaved pairs.
     */
    private static float[] values(WritableTensor tensor, int heads) {
        float[] values = new HostTensor(tensor.name(), tensor.dtype(), tensor.shape(), tensor.bytes()).toFloatArray();
        if (heads == 0) {
            return values;
        }
        long[] shape = tensor.shape();
        int rows = (int) shape[0];
        int columns = shape.length == 1 ? 1 : (int) shape[1];
        int headDim = rows / heads;
        int half = headDim / 2;
        float[] out = new float[values.length];
        for (int head = 0; head < heads; head++) {
            for (int i = 0; i < half; i++) {
                for (int j = 0; j < 2; j++) {
                    int to = head * headDim + 2 * i + j;
                    int from = head * headDim + j * half + i;
                    System.arraycopy(values, from * columns, out, to * columns, columns);
                }
            }
        }
        return out;
    }

    private static byte[] f32(float[] values) {
        ByteBuffer out = ByteBuffer.allocate(4 * values.length).order(ByteOrder.LITTLE_ENDIAN);
        out.asFloatBuffer().put(values);
        return out.array();
    }

    private static byte[] halves(float[] values, boolean bf16) {
        ByteBuffer out = ByteBuffer.allocate(2 * values.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float value : values) {
            out.putShort(bf16 ? HalfFloats.floatToBf16(value) : HalfFloats.floatToF16(value));
        }
        return out.array();
    }
}
