package dev.crucible.runner.abliterate;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.io.SafetensorsFile;
import dev.crucible.api.io.SafetensorsWriter;
import dev.crucible.api.io.WritableTensor;
import dev.crucible.api.scoring.PromptSet;
import dev.crucible.api.tensor.DType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * What every trial of a study needs besides the model and the journal, computed once and kept in
 * {@code <study>/prepared.safetensors} beside the journal: the response prefix, the refusal directions and the
 * base model's outputs on the test prompts (first-token log-probabilities and the responses scorers read). A later
 * run on the study (adding trials, exporting one) skips the residual pass and the base model's generation.
 *
 * <p>The values are kept under two keys. The {@linkplain Inputs inputs} are what the study is about: the model's
 * files and the prompt sets, by content. A study whose inputs changed cannot be continued (its trials were scored
 * on something else), and {@link Inputs#difference} says what changed. The computation is everything else that
 * changes the numbers (the backend, dtype, threads, batch size, the settings that shape the directions, this
 * version of Crucible): when it differs the values are computed again, so a run on the cache gives the same bytes a
 * fresh run would.
 *
 * <p>The file is written to a temporary sibling and renamed, so it is whole or absent; one that cannot be read is
 * treated as absent.
 */
public final class StudyCache {
    public static final String FILE_NAME = "prepared.safetensors";
    private static final String FORMAT = "crucible-study-cache-1";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String DIRECTIONS = "directions";

    /**
     * What the study is made from.
     *
     * @param model      the model folder, absolute
     * @param modelFiles its files' stamps, by name
     * @param prompts    a content hash per prompt set (texts and system prompt), by config key ({@code bad_prompts} ...)
     */
    public record Inputs(String model, Map<String, ModelFingerprint.FileStamp> modelFiles, Map<String, String> prompts) {
        public Inputs {
            Objects.requireNonNull(model, "model is null");
            modelFiles = Map.copyOf(modelFiles);
            prompts = Map.copyOf(prompts);
        }

        /**
         * The inputs of a study on the model in {@code modelDir} with {@code prompts}; model files whose size and
         * modification time match {@code earlier} stamps are not read again.
         */
        public static Inputs of(Path modelDir, Abliterator.Prompts prompts, Map<String, ModelFingerprint.FileStamp> earlier) {
            Map<String, String> sets = new LinkedHashMap<>();
            sets.put("bad_prompts", promptsHash(prompts.harmfulTrain()));
            sets.put("good_prompts", promptsHash(prompts.harmlessTrain()));
            sets.put("bad_test_prompts", promptsHash(prompts.harmfulTest()));
            sets.put("good_test_prompts", promptsHash(prompts.harmlessTest()));
            return new Inputs(modelDir.toAbsolutePath().normalize().toString(), ModelFingerprint.of(modelDir, earlier), sets);
        }

        /** The first way {@code now} differs from these inputs, for a one-line refusal; empty when they are the same. */
        public Optional<String> difference(Inputs now) {
            if (!model.equals(now.model)) {
                return Optional.of("the model " + model + " (this run: " + now.model + ")");
            }
            for (String name : new TreeSet<>(union(modelFiles.keySet(), now.modelFiles.keySet()))) {
                ModelFingerprint.FileStamp before = modelFiles.get(name);
                ModelFingerprint.FileStamp after = now.modelFiles.get(name);
                if (before == null) {
                    return Optional.of("other model files (" + name + " is new in " + model + ")");
                }
                if (after == null) {
                    return Optional.of("other model files (" + name + " is gone from " + model + ")");
                }
                if (!before.sha256().equals(after.sha256())) {
                    return Optional.of("other model files (" + name + " changed: SHA-256 " + shortHash(before.sha256())
                            + "..., now " + shortHash(after.sha256()) + "...)");
                }
            }
            for (String set : new TreeSet<>(union(prompts.keySet(), now.prompts.keySet()))) {
                if (!Objects.equals(prompts.get(set), now.prompts.get(set))) {
                    return Optional.of("other prompts (the " + set + " set changed)");
                }
            }
            return Optional.empty();
        }

        private static TreeSet<String> union(Set<String> a, Set<String> b) {
            TreeSet<String> all = new TreeSet<>(a);
            all.addAll(b);
            return all;
        }

        private static String shortHash(String sha256) {
            return sha256.substring(0, Math.min(12, sha256.length()));
        }
    }

    /** The cache's full key: values computed under another key are computed again. */
    public record Key(Inputs inputs, Map<String, Object> computation) {
        public Key {
            Objects.requireNonNull(inputs, "inputs is null");
            computation = Collections.unmodifiableMap(new LinkedHashMap<>(computation));
        }
    }

    /** What the trials need: the base model's outputs are those computed so far, by prompt set. */
    public record Prepared(String responsePrefix, RefusalDirections directions, Map<PromptSet, List<String>> baseResponses,
                           Map<PromptSet, float[][]> baseLogProbs) {
        public Prepared {
            Objects.requireNonNull(responsePrefix, "responsePrefix is null");
            Objects.requireNonNull(directions, "directions is null");
            baseResponses = copy(baseResponses);
            baseLogProbs = copy(baseLogProbs);
        }

        private static <V> Map<PromptSet, V> copy(Map<PromptSet, V> map) {
            Map<PromptSet, V> out = new EnumMap<>(PromptSet.class);
            out.putAll(map);
            return Collections.unmodifiableMap(out);
        }
    }

    private record Stored(Inputs inputs, Map<String, Object> computation, Prepared prepared) { }

    private final Path file;
    private final Optional<Stored> stored;

    private StudyCache(Path file, Optional<Stored> stored) {
        this.file = file;
        this.stored = stored;
    }

    /** The cache of the study in {@code studyDir}: what its file holds, or nothing when it is absent or unreadable. */
    public static StudyCache in(Path studyDir) {
        Path file = studyDir.resolve(FILE_NAME);
        return new StudyCache(file, Files.isRegularFile(file) ? read(file) : Optional.empty());
    }

    public Path file() {
        return file;
    }

    /** The model file stamps of the stored inputs (so unchanged files are not hashed again), or none. */
    public Map<String, ModelFingerprint.FileStamp> earlierModelFiles() {
        return stored.map(s -> s.inputs().modelFiles()).orElse(Map.of());
    }

    /** The inputs the stored values were computed from, if there are any. */
    public Optional<Inputs> storedInputs() {
        return stored.map(Stored::inputs);
    }

    /** The stored values when they were computed under {@code key}. */
    public Optional<Prepared> lookup(Key key) {
        return stored.filter(s -> s.inputs().difference(key.inputs()).isEmpty() && s.computation().equals(normalized(key.computation())))
                .map(Stored::prepared);
    }

    /** Replaces the file with {@code prepared}, computed under {@code key}. */
    public void save(Key key, Prepared prepared) {
        float[][] directions = prepared.directions().directions();
        List<WritableTensor> tensors = new ArrayList<>();
        tensors.add(WritableTensor.ofFloats(DIRECTIONS, DType.F32, new long[] {directions.length, directions[0].length}, flatten(directions)));
        prepared.baseLogProbs().forEach((set, rows) -> tensors.add(WritableTensor.ofFloats(logProbsName(set), DType.F32,
                new long[] {rows.length, rows.length == 0 ? 0 : rows[0].length}, flatten(rows))));
        Map<String, String> metadata = new LinkedHashMap<>();
        metadata.put("format", FORMAT);
        metadata.put("inputs", json(key.inputs()));
        metadata.put("computation", json(key.computation()));
        metadata.put("response_prefix", prepared.responsePrefix());
        Map<String, List<String>> responses = new LinkedHashMap<>();
        prepared.baseResponses().forEach((set, texts) -> responses.put(setName(set), texts));
        metadata.put("base_responses", json(responses));
        SafetensorsWriter.write(file, tensors, metadata);
    }

    /** A content hash of one prompt set as the model sees it: its system prompt and its texts, in order. */
    static String promptsHash(Abliterator.PromptGroup group) {
        Optional<String> systemPrompt = group.systemPrompt();
        List<String> texts = group.texts();
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            // Lengths before contents, so no two different sets hash alike however their texts are cut.
            update(digest, systemPrompt.isPresent() ? "system:" + systemPrompt.get() : "no system prompt");
            for (String text : texts) {
                update(digest, text);
            }
            return HexFormat.of().formatHex(digest.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void update(MessageDigest digest, String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        digest.update(Integer.toString(bytes.length).getBytes(StandardCharsets.US_ASCII));
        digest.update((byte) ':');
        digest.update(bytes);
    }

    private static Optional<Stored> read(Path file) {
        try (SafetensorsFile st = SafetensorsFile.open(file)) {
            Map<String, String> metadata = st.metadata();
            if (!FORMAT.equals(metadata.get("format"))) {
                return Optional.empty();
            }
            Inputs inputs = JSON.readValue(metadata.get("inputs"), Inputs.class);
            Map<String, Object> computation = JSON.readValue(metadata.get("computation"), new TypeReference<LinkedHashMap<String, Object>>() { });
            Map<String, List<String>> responsesByName = JSON.readValue(metadata.get("base_responses"),
                    new TypeReference<LinkedHashMap<String, List<String>>>() { });
            Map<PromptSet, List<String>> responses = new EnumMap<>(PromptSet.class);
            Map<PromptSet, float[][]> logProbs = new EnumMap<>(PromptSet.class);
            for (PromptSet set : PromptSet.values()) {
                Optional.ofNullable(responsesByName.get(setName(set))).ifPresent(texts -> responses.put(set, List.copyOf(texts)));
                if (st.contains(logProbsName(set))) {
                    logProbs.put(set, rows(st.tensor(logProbsName(set))));
                }
            }
            Prepared prepared = new Prepared(Objects.requireNonNull(metadata.get("response_prefix")),
                    new RefusalDirections(rows(st.tensor(DIRECTIONS))), responses, logProbs);
            return Optional.of(new Stored(inputs, computation, prepared));
        } catch (RuntimeException | JsonProcessingException e) {
            // A damaged or foreign file is no worse than none: the values are computed again and the file replaced.
            return Optional.empty();
        }
    }

    private static float[][] rows(HostTensor tensor) {
        long[] shape = tensor.shape();
        if (shape.length != 2 || tensor.dtype() != DType.F32) {
            throw new IllegalArgumentException("not a float32 matrix: " + tensor);
        }
        float[] flat = tensor.toFloatArray();
        float[][] out = new float[(int) shape[0]][];
        for (int r = 0; r < out.length; r++) {
            out[r] = Arrays.copyOfRange(flat, (int) (r * shape[1]), (int) ((r + 1) * shape[1]));
        }
        return out;
    }

    private static float[] flatten(float[][] rows) {
        int cols = rows.length == 0 ? 0 : rows[0].length;
        float[] out = new float[Math.multiplyExact(rows.length, cols)];
        for (int r = 0; r < rows.length; r++) {
            System.arraycopy(rows[r], 0, out, r * cols, cols);
        }
        return out;
    }

    private static String logProbsName(PromptSet set) {
        return "base." + setName(set) + ".first_token_log_probs";
    }

    private static String setName(PromptSet set) {
        return set.name().toLowerCase(Locale.ROOT);
    }

    /** The computation key as it reads back from JSON, so a stored key and a fresh one compare equal. */
    private static Map<String, Object> normalized(Map<String, Object> computation) {
        try {
            return JSON.readValue(json(computation), new TypeReference<LinkedHashMap<String, Object>>() { });
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String json(Object value) {
        try {
            return JSON.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
