package dev.crucible.runner.export.gguf;

import dev.crucible.api.UserInputException;
import dev.crucible.api.io.AtomicFiles;
import dev.crucible.api.tensor.HalfFloats;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.Shapes;
import dev.crucible.api.io.OutputLocation;
import dev.crucible.api.io.WritableTensor;
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
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * A GGUF file that llama.cpp loads with nothing beside it: the architecture's hyperparameters under its keys, the
 * tokenizer ({@link GgufTokenizer}), and every tensor under llama.cpp's name for it (token_embd, blk.N.attn_q, ...,
 * output; {@link GgufArchitecture} has the families' facts), matrices in the type {@code type} asks for (encoded by
 * {@link GgufCodec}, llama.cpp's reference quantizers byte for byte), vectors and MoE routers in F32. For families
 * whose llama.cpp rope rotates adjacent pairs (Llama, Mistral, Mixtral, Granite, SmolLM3) the q and k rows of each
 * head are reordered from Hugging Face's rotate-half layout, as llama.cpp's converter does; the others keep theirs.
 * The experts of a mixture are stacked into one 3-D {@code ffn_*_exps} tensor per projection. A tied output head is
 * not stored (llama.cpp reuses token_embd) unless the family's loader requires it. The file is written beside
 * {@code out} and renamed into place.
 *
 * @param type    the matrices' type
 * @param written told the file's bytes and the types it used, once it is in place
 */
public record GgufWriter(GgufType type, Written written) implements ModelWriter {

    /** What a write stored. */
    public interface Written {
        void report(long bytes, String types);
    }

    public GgufWriter {
        Objects.requireNonNull(type, "type is null");
        Objects.requireNonNull(written, "written is null");
    }

    @Override
    public void write(ExportedModel model, Path out, boolean force) {
        ModelConfig config = model.config();
        GgufArchitecture arch = GgufArchitecture.of(config);
        ExportWeights weights = model.requireWeights("a GGUF file");
        OutputLocation.checkNewFile(out, force, model.files().weightBytes());
        GgufFile file = new GgufFile();
        hyperparameters(file, model, arch);
        GgufTokenizer.write(file, model.files().folder(), config);
        Map<String, Integer> types = new TreeMap<>();
        try (ExportWeights.Opened opened = weights.open()) {
            Map<GgufArchitecture.Name, WritableTensor[]> experts = new LinkedHashMap<>();
            boolean head = false;
            for (WritableTensor tensor : opened.tensors()) {
                GgufArchitecture.ExpertPart part = arch.expertPart(tensor.name());
                if (part != null) {
                    experts.computeIfAbsent(part.stacked(), k -> new WritableTensor[config.experts().count()])
                            [part.expert()] = tensor;
                    continue;
                }
                head |= tensor.name().equals("lm_head.weight");
                add(file, tensor, arch, types);
            }
            experts.forEach((name, parts) -> addStacked(file, name, parts, arch, types));
            if (config.tieWordEmbeddings() && arch.storesTiedHead() && !head) {
                WritableTensor embedding = opened.tensors().stream()
                        .filter(t -> t.name().equals("model.embed_tokens.weight")).findFirst().orElseThrow();
                addMatrix(file, new GgufArchitecture.Name("output.weight", "output", -1), embedding.shape(),
                        () -> values(embedding, 0), arch, types);
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

    private void hyperparameters(GgufFile file, ExportedModel model, GgufArchitecture arch) {
        file.put("general.architecture", new GgufFile.Value.Str(arch.name()));
        Path name = model.files().folder().toAbsolutePath().normalize().getFileName();
        file.put("general.name", new GgufFile.Value.Str(name == null ? "model" : name.toString()));
        file.put("general.file_type", new GgufFile.Value.U32(type.fileType()));
        file.put("general.quantization_version", new GgufFile.Value.U32(2));
        arch.hyperparameters(file);
    }

    private void add(GgufFile file, WritableTensor tensor, GgufArchitecture arch, Map<String, Integer> types) {
        String hf = tensor.name();
        ModelConfig config = arch.config();
        GgufArchitecture.Name name = arch.name(hf);
        if (name == null || (hf.equals("lm_head.weight") && config.tieWordEmbeddings() && !arch.storesTiedHead())) {
            return;
        }
        long[] shape = tensor.shape();
        int heads = name.role().equals("attn_q") ? config.numHeads()
                : name.role().equals("attn_k") ? config.numKvHeads() : 0;
        int permuteHeads = arch.interleavedRope() ? heads : 0;
        Supplier<float[]> values = () -> arch.transform(name, values(tensor, permuteHeads));
        if (shape.length == 1 || name.role().equals("ffn_gate_inp")) {
            // llama-quantize keeps the router in F32 too: its scores pick the experts.
            file.add(new GgufFile.Tensor(name.gguf(), reversed(shape), GgufType.GGML_F32, 4 * Shapes.elementCount(shape),
                    () -> f32(values.get())));
            types.merge("F32", 1, Integer::sum);
            return;
        }
        if (shape.length != 2) {
            throw new UserInputException("tensor " + hf + " has " + shape.length + " dimensions; GGUF export takes "
                    + "vectors and matrices");
        }
        addMatrix(file, name, shape, values, arch, types);
    }

    /** A layer's experts' projections as one tensor [experts, out, in] (ggml's {in, out, experts}), expert by expert. */
    private void addStacked(GgufFile file, GgufArchitecture.Name name, WritableTensor[] parts, GgufArchitecture arch,
                            Map<String, Integer> types) {
        for (int expert = 0; expert < parts.length; expert++) {
            if (parts[expert] == null) {
                throw new UserInputException("the checkpoint has no expert " + expert + " for " + name.gguf()
                        + "; it cannot be written to GGUF");
            }
        }
        long[] shape = parts[0].shape();
        long[] stacked = {parts.length, shape[0], shape[1]};
        addMatrix(file, name, stacked, () -> {
            int size = (int) Shapes.elementCount(shape);
            float[] all = new float[size * parts.length];
            for (int expert = 0; expert < parts.length; expert++) {
                System.arraycopy(values(parts[expert], 0), 0, all, expert * size, size);
            }
            return all;
        }, arch, types);
    }

    private void addMatrix(GgufFile file, GgufArchitecture.Name name, long[] shape, Supplier<float[]> values,
                           GgufArchitecture arch, Map<String, Integer> types) {
        ModelConfig config = arch.config();
        // A tied head is token_embd itself, so llama.cpp's quantizer gives token_embd the head's type.
        String role = name.role().equals("token_embd") && config.tieWordEmbeddings() && !arch.storesTiedHead()
                ? "output" : name.role();
        GgufType.TensorType tensorType = type.matrixType(role, name.layer(), config.numLayers(),
                shape[shape.length - 1]);
        types.merge(tensorType.describe(), 1, Integer::sum);
        file.add(new GgufFile.Tensor(name.gguf(), reversed(shape), tensorType.ggmlType(),
                tensorType.bytes(Shapes.elementCount(shape)), () -> {
                    float[] data = values.get();
                    if (tensorType.block() != null) {
                        return new GgufCodec(tensorType.block()).encode(data);
                    }
                    return switch (tensorType.ggmlType()) {
                        case GgufType.GGML_F32 -> f32(data);
                        case GgufType.GGML_F16 -> halves(data, false);
                        default -> halves(data, true);
                    };
                }));
    }

    /** ggml's dimension order: innermost first. */
    private static long[] reversed(long[] shape) {
        long[] dims = new long[shape.length];
        for (int i = 0; i < shape.length; i++) {
            dims[i] = shape[shape.length - 1 - i];
        }
        return dims;
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
