package dev.crucible.runner.model;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.crucible.api.UserInputException;
import dev.crucible.api.io.SafetensorsWriter;
import dev.crucible.api.io.StagedFolder;
import dev.crucible.api.io.WritableTensor;
import dev.crucible.api.model.Architecture;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.ModelCost;
import dev.crucible.api.model.layout.Parameter;
import dev.crucible.api.model.layout.Role;
import dev.crucible.api.tensor.DType;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Writes a random-initialized Hugging Face model folder of any size: config.json, generation_config.json,
 * model.safetensors (sharded when large), and the character-level (or, with merges, byte-pair) tokenizer of
 * {@link CharTokenizerFiles}.
 * Tests and benchmarks use it to get a model shaped like a real one without downloading anything.
 *
 * <p>Each tensor's values come from its own generator seeded by (seed, tensor name), so the bytes depend only
 * on the seed and the shape, never on the order tensors are made in.
 */
public final class ModelInitializer {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final long MAX_SHARD_BYTES = 2L << 30;
    /** Headers, config and tokenizer files. */
    private static final long SMALL_FILES_BYTES = 64 << 10;

    /** The shape and numerics of the model to make. */
    public record Spec(Architecture architecture, int hiddenSize, int numLayers, int numHeads, int numKvHeads,
                       int headDim, int intermediateSize, int vocabSize, boolean tieWordEmbeddings, DType dtype,
                       long seed, int maxPositionEmbeddings, double ropeTheta, double initStd) {
        public Spec {
            if (hiddenSize <= 0 || numLayers <= 0 || numHeads <= 0 || numKvHeads <= 0 || headDim <= 0 || intermediateSize <= 0) {
                throw new UserInputException("model sizes must be positive");
            }
            if (numHeads % numKvHeads != 0) {
                throw new UserInputException("--heads " + numHeads + " must be a multiple of --kv-heads " + numKvHeads);
            }
            if (headDim % 2 != 0) {
                throw new UserInputException("--head-dim must be even (rotary embeddings rotate pairs), got " + headDim);
            }
            int minimumVocab = CharTokenizerFiles.vocabulary().size();
            if (vocabSize < minimumVocab) {
                throw new UserInputException("--vocab must be at least " + minimumVocab + " (the tokenizer's size), got " + vocabSize);
            }
            if (!dtype.isFloatingPoint()) {
                throw new UserInputException("--dtype must be float32, bfloat16 or float16");
            }
        }
    }

    private ModelInitializer() {
    }

    /** Writes the folder completely beside {@code out}, then moves it into place; refuses an existing one unless {@code force}. */
    public static void write(Spec spec, Path out, boolean force) {
        write(spec, List.of(), out, force);
    }

    /** The same with a byte-pair tokenizer made of these merges ({@link CharTokenizerFiles#tokenizerJson(List)}). */
    public static void write(Spec spec, List<CharTokenizerFiles.Merge> merges, Path out, boolean force) {
        int tokenizerSize = CharTokenizerFiles.vocabulary(merges).size();
        if (spec.vocabSize() < tokenizerSize) {
            throw new UserInputException("--vocab must be at least " + tokenizerSize + " (the tokenizer's size), got "
                    + spec.vocabSize());
        }
        long bytes = parameterCount(spec) * spec.dtype().byteSize() + SMALL_FILES_BYTES;
        StagedFolder.write(out, force, bytes, dir -> {
            SafetensorsWriter.writeModel(dir, tensors(spec), Map.of("format", "pt"), MAX_SHARD_BYTES);
            writeJson(dir.resolve("config.json"), config(spec));
            writeJson(dir.resolve("generation_config.json"), generationConfig());
            writeJson(dir.resolve("tokenizer.json"), CharTokenizerFiles.tokenizerJson(merges));
            writeJson(dir.resolve("tokenizer_config.json"), CharTokenizerFiles.tokenizerConfig());
        });
    }

    private static void writeJson(Path file, Object tree) throws IOException {
        JSON.writeValue(file.toFile(), tree);
    }

    /** The Hugging Face config.json of the spec. */
    static Map<String, Object> config(Spec spec) {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("architectures", List.of(spec.architecture().className()));
        c.put("model_type", spec.architecture().modelType());
        c.put("hidden_size", spec.hiddenSize());
        c.put("intermediate_size", spec.intermediateSize());
        c.put("num_hidden_layers", spec.numLayers());
        c.put("num_attention_heads", spec.numHeads());
        c.put("num_key_value_heads", spec.numKvHeads());
        c.put("head_dim", spec.headDim());
        c.put("vocab_size", spec.vocabSize());
        c.put("max_position_embeddings", spec.maxPositionEmbeddings());
        c.put("hidden_act", spec.architecture().activation().configName());
        c.put("rms_norm_eps", 1e-6);
        c.put("rope_theta", spec.ropeTheta());
        c.put("rope_scaling", null);
        c.put("attention_bias", false);
        c.put("attention_dropout", 0.0);
        c.put("tie_word_embeddings", spec.tieWordEmbeddings());
        c.put("torch_dtype", spec.dtype().userName());
        c.put("bos_token_id", CharTokenizerFiles.idOf(CharTokenizerFiles.BOS));
        c.put("eos_token_id", CharTokenizerFiles.idOf(CharTokenizerFiles.IM_END));
        c.put("initializer_range", spec.initStd());
        c.put("use_cache", true);
        return c;
    }

    private static Map<String, Object> generationConfig() {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("bos_token_id", CharTokenizerFiles.idOf(CharTokenizerFiles.BOS));
        c.put("eos_token_id", List.of(CharTokenizerFiles.idOf(CharTokenizerFiles.IM_END), CharTokenizerFiles.idOf(CharTokenizerFiles.EOS)));
        c.put("do_sample", false);
        return c;
    }

    /** Every tensor of the spec's layout under transformers' names: norms start at one, everything else random. */
    static List<WritableTensor> tensors(Spec s) {
        List<WritableTensor> out = new ArrayList<>();
        for (Parameter parameter : writeOrder(specConfig(s).layout().parameters())) {
            boolean norm = parameter.role() == Role.NORM || parameter.role() == Role.QUERY_NORM
                    || parameter.role() == Role.KEY_NORM;
            out.add(norm ? ones(s, parameter) : random(s, parameter));
        }
        return out;
    }

    /**
     * The layout's order, except that the biases of q, k and v follow the three weights together: the order this
     * writer has always used, which the bytes of every folder it writes (the demo model's among them) depend on.
     */
    static List<Parameter> writeOrder(List<Parameter> parameters) {
        List<Parameter> ordered = new ArrayList<>();
        List<Parameter> inputBiases = new ArrayList<>();
        for (Parameter parameter : parameters) {
            boolean input = parameter.role() == Role.ATTENTION_QUERY || parameter.role() == Role.ATTENTION_KEY
                    || parameter.role() == Role.ATTENTION_VALUE;
            if (input && parameter.bias()) {
                inputBiases.add(parameter);
                continue;
            }
            if (!input) {
                ordered.addAll(inputBiases);
                inputBiases.clear();
            }
            ordered.add(parameter);
        }
        ordered.addAll(inputBiases);
        return ordered;
    }

    /** Parameters the folder will hold (tied heads counted once), counted from the config.json it will carry. */
    public static long parameterCount(Spec s) {
        return ModelCost.of(specConfig(s), s.dtype()).parameters();
    }

    /** The config.json the folder will carry, parsed as every command reads it. */
    private static ModelConfig specConfig(Spec s) {
        try {
            return ModelConfig.parse(JSON.writeValueAsString(config(s)), "the spec's config.json");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static WritableTensor random(Spec s, Parameter parameter) {
        String name = parameter.name();
        float[] values = new float[Math.toIntExact(parameter.elementCount())];
        SplittableRandom random = new SplittableRandom(s.seed() * 0x9E3779B97F4A7C15L ^ name.hashCode());
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (random.nextGaussian() * s.initStd());
        }
        return WritableTensor.ofFloats(name, s.dtype(), parameter.shape(), values);
    }

    private static WritableTensor ones(Spec s, Parameter parameter) {
        float[] values = new float[Math.toIntExact(parameter.elementCount())];
        java.util.Arrays.fill(values, 1f);
        return WritableTensor.ofFloats(parameter.name(), s.dtype(), parameter.shape(), values);
    }
}
