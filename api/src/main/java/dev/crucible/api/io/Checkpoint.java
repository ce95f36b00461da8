package dev.crucible.api.io;

import dev.crucible.api.tensor.Shapes;

import dev.crucible.api.tensor.HostTensor;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.crucible.api.UserInputException;
import dev.crucible.api.quant.CompressedTensors;
import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.api.quant.QuantizedHostTensor;
import dev.crucible.api.quant.WeightCodec;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.WeightFormat;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SequencedSet;
import java.util.stream.Stream;

/**
 * The weights of a Hugging Face model folder: {@code model.safetensors}, or the shards named by
 * {@code model.safetensors.index.json}. Every file is mapped once, into one arena that {@link #close()} frees.
 *
 * <p>Pickle checkpoints ({@code pytorch_model.bin} and friends) are refused without being opened: unpickling
 * runs arbitrary code from the file.
 */
public final class Checkpoint implements AutoCloseable {

    public static final String SINGLE_FILE = "model.safetensors";
    public static final String INDEX_FILE = "model.safetensors.index.json";

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final List<String> PICKLE_SUFFIXES =
            List.of(".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle", ".bin.index.json");

    private final Path directory;
    private final Arena arena;
    private final List<SafetensorsFile> files;
    private final Map<String, SafetensorsFile> fileByTensor;
    private final QuantizationConfig storedQuantization;
    /** The quantized weights ({@code M.weight}) of a compressed-tensors folder, by name, in their format. */
    private final Map<String, WeightFormat.Int> quantized;
    /** Every tensor name as the model sees it: a quantized weight once, under {@code M.weight}. */
    private final SequencedSet<String> names;

    private Checkpoint(Path directory, Arena arena, List<SafetensorsFile> files,
                       Map<String, SafetensorsFile> fileByTensor, QuantizationConfig storedQuantization) {
        this.directory = directory;
        this.arena = arena;
        this.files = List.copyOf(files);
        this.fileByTensor = Collections.unmodifiableMap(fileByTensor);
        this.storedQuantization = storedQuantization;
        Map<String, WeightFormat.Int> quantized = new LinkedHashMap<>();
        SequencedSet<String> names = new LinkedHashSet<>();
        WeightFormat.Int format = storedQuantization.enabled() ? (WeightFormat.Int) storedQuantization.format() : null;
        for (String name : fileByTensor.keySet()) {
            String module = format == null ? null : compressionModule(name);
            if (module != null && fileByTensor.containsKey(module + ".weight_scale")) {
                quantized.put(module + ".weight", format);
                names.add(module + ".weight");
            } else {
                names.add(name);
            }
        }
        this.quantized = Collections.unmodifiableMap(quantized);
        this.names = Collections.unmodifiableSequencedSet(names);
    }

    /** {@code M} when {@code name} is {@code M.weight} or one of the tensors compressed-tensors stores beside it. */
    private static String compressionModule(String name) {
        if (name.endsWith(".weight")) {
            return CompressedTensors.module(name);
        }
        for (String parameter : CompressedTensors.PARAMETERS) {
            if (name.endsWith("." + parameter)) {
                return name.substring(0, name.length() - parameter.length() - 1);
            }
        }
        return null;
    }

    /**
     * Opens the weights in {@code modelDir}; a single {@code .safetensors} file is accepted too.
     *
     * @throws UserInputException when the folder is missing, holds only pickle files, or a file is invalid
     */
    public static Checkpoint open(Path modelDir) {
        Objects.requireNonNull(modelDir, "modelDir is null");
        if (Files.isRegularFile(modelDir) && modelDir.getFileName().toString().endsWith(".safetensors")) {
            return openFiles(modelDir.toAbsolutePath().getParent(), List.of(modelDir), null, QuantizationConfig.NONE);
        }
        if (!Files.isDirectory(modelDir)) {
            throw new UserInputException("model folder " + modelDir + " does not exist");
        }
        QuantizationConfig stored = storedQuantization(modelDir);
        Path index = modelDir.resolve(INDEX_FILE);
        if (Files.isRegularFile(index)) {
            return openSharded(modelDir, index, stored);
        }
        Path single = modelDir.resolve(SINGLE_FILE);
        if (Files.isRegularFile(single)) {
            return openFiles(modelDir, List.of(single), null, stored);
        }
        throw noSafetensors(modelDir);
    }

    /**
     * How config.json says the weights are stored: quantized in the compressed-tensors layout, or not at all. A
     * config.json that is missing or not JSON says nothing here (reading the config reports it).
     */
    private static QuantizationConfig storedQuantization(Path modelDir) {
        Path config = modelDir.resolve("config.json");
        if (!Files.isRegularFile(config)) {
            return QuantizationConfig.NONE;
        }
        JsonNode root;
        try {
            root = JSON.readTree(config.toFile());
        } catch (IOException e) {
            return QuantizationConfig.NONE;
        }
        return CompressedTensors.read(root, config.toString()).orElse(QuantizationConfig.NONE);
    }

    private static Checkpoint openSharded(Path modelDir, Path index, QuantizationConfig stored) {
        Map<String, String> shardByTensor = readWeightMap(index);
        Map<String, Path> shardPaths = new LinkedHashMap<>();
        for (String shard : shardByTensor.values()) {
            shardPaths.computeIfAbsent(shard, name -> shardPath(modelDir, index, name));
        }
        return openFiles(modelDir, List.copyOf(shardPaths.values()), shardByTensor, stored);
    }

    private static Map<String, String> readWeightMap(Path index) {
        JsonNode root;
        try {
            root = JSON.readTree(index.toFile());
        } catch (JsonProcessingException e) {
            throw new UserInputException(index + ": not valid JSON (" + e.getOriginalMessage().lines().findFirst()
                    .orElse("") + ")");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + index, e);
        }
        JsonNode weightMap = root == null ? null : root.get("weight_map");
        if (weightMap == null || !weightMap.isObject()) {
            throw new UserInputException(index + ": has no weight_map object");
        }
        Map<String, String> shardByTensor = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> entry : weightMap.properties()) {
            if (!entry.getValue().isTextual()) {
                throw new UserInputException(index + ": weight_map entry " + SafetensorsHeader.quote(entry.getKey())
                        + " is not a file name");
            }
            shardByTensor.put(entry.getKey(), entry.getValue().textValue());
        }
        return shardByTensor;
    }

    /** A shard must be a file inside the folder: an index must not point the loader elsewhere on disk. */
    private static Path shardPath(Path modelDir, Path index, String name) {
        Path base = modelDir.toAbsolutePath().normalize();
        Path shard = base.resolve(name).normalize();
        if (Path.of(name).isAbsolute() || !shard.startsWith(base) || shard.equals(base)) {
            throw new UserInputException(index + ": shard " + SafetensorsHeader.quote(name)
                    + " is not a file inside " + modelDir);
        }
        if (!Files.isRegularFile(shard)) {
            throw new UserInputException(index + ": lists shard " + SafetensorsHeader.quote(name)
                    + ", which is missing from " + modelDir + " (incomplete download?)");
        }
        return shard;
    }

    /** Opens {@code paths} into one arena; {@code shardByTensor} null means every tensor of every file. */
    private static Checkpoint openFiles(Path directory, List<Path> paths, Map<String, String> shardByTensor,
                                        QuantizationConfig stored) {
        Arena arena = Arena.ofShared();
        try {
            Map<Path, SafetensorsFile> opened = new LinkedHashMap<>();
            for (Path path : paths) {
                opened.put(path, SafetensorsFile.open(path, arena));
            }
            Map<String, SafetensorsFile> fileByTensor = new LinkedHashMap<>();
            if (shardByTensor == null) {
                for (SafetensorsFile file : opened.values()) {
                    for (String name : file.tensors().keySet()) {
                        fileByTensor.putIfAbsent(name, file);
                    }
                }
            } else {
                Path base = directory.toAbsolutePath().normalize();
                for (Map.Entry<String, String> entry : shardByTensor.entrySet()) {
                    SafetensorsFile file = opened.get(base.resolve(entry.getValue()).normalize());
                    if (!file.contains(entry.getKey())) {
                        throw new UserInputException(directory.resolve(INDEX_FILE) + ": says tensor "
                                + SafetensorsHeader.quote(entry.getKey()) + " is in " + entry.getValue()
                                + ", which has no such tensor");
                    }
                    fileByTensor.put(entry.getKey(), file);
                }
            }
            return new Checkpoint(directory, arena, new ArrayList<>(opened.values()), fileByTensor, stored);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    private static UserInputException noSafetensors(Path modelDir) {
        List<String> pickles;
        try (Stream<Path> entries = Files.list(modelDir)) {
            pickles = entries.map(p -> p.getFileName().toString())
                    .filter(Checkpoint::looksLikePickle)
                    .sorted()
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + modelDir, e);
        }
        if (!pickles.isEmpty()) {
            return new UserInputException(modelDir + " holds a pickle checkpoint (" + pickles.getFirst()
                    + "), which Crucible never unpickles because loading it can run arbitrary code; convert it to"
                    + " safetensors first, e.g. in Python: AutoModelForCausalLM.from_pretrained(dir)"
                    + ".save_pretrained(out_dir, safe_serialization=True)");
        }
        return new UserInputException(modelDir + " has neither " + SINGLE_FILE + " nor " + INDEX_FILE
                + "; point at a Hugging Face model folder with safetensors weights");
    }

    static boolean looksLikePickle(String fileName) {
        String lower = fileName.toLowerCase(Locale.ROOT);
        return PICKLE_SUFFIXES.stream().anyMatch(lower::endsWith);
    }

    public Path directory() {
        return directory;
    }

    /** The safetensors files this checkpoint mapped, each once. */
    public List<Path> files() {
        return files.stream().map(SafetensorsFile::path).toList();
    }

    /**
     * Every tensor name, in header order (or {@code weight_map} order for a sharded checkpoint); a quantized weight
     * of a compressed-tensors folder once, as {@code M.weight}, where its first stored part is.
     */
    public SequencedSet<String> names() {
        return names;
    }

    public boolean contains(String name) {
        return names.contains(name);
    }

    /**
     * The header entry of {@code name}; a user error when the checkpoint has no such tensor. For a quantized weight,
     * the dense tensor it stands for: its shape, in its scales' dtype (the model's), and the bytes that would take.
     */
    public TensorInfo info(String name) {
        WeightFormat.Int format = quantized.get(name);
        if (format == null) {
            return fileOf(name).tensors().get(name);
        }
        DType dtype = stored(CompressedTensors.module(name) + ".weight_scale").dtype();
        long[] shape = CompressedTensors.shape(name, format, this::stored);
        return new TensorInfo(name, dtype, shape, 0, Shapes.elementCount(shape) * dtype.byteSize());
    }

    /**
     * A read-only view of {@code name}; valid until {@link #close()}. A quantized weight is dequantized onto the Java
     * heap, in its scales' dtype (the model's): what an edit, a merge or a full-precision export starts from.
     */
    public HostTensor tensor(String name) {
        return quantized(name).map(parts -> HostTensor.ofFloats(name, info(name).dtype(), parts.shape(),
                WeightCodec.of(parts.format()).decode(parts))).orElseGet(() -> fileOf(name).tensor(name));
    }

    /** The parts of {@code name} when the folder stores it quantized (compressed-tensors), copied onto the heap. */
    public Optional<QuantizedHostTensor> quantized(String name) {
        WeightFormat.Int format = quantized.get(name);
        return format == null ? Optional.empty()
                : Optional.of(CompressedTensors.parts(name, format, this::stored));
    }

    /**
     * How config.json says the projection weights are stored: {@link QuantizationConfig#NONE} unless the folder is
     * compressed-tensors (what {@code runner quantize} writes).
     */
    public QuantizationConfig storedQuantization() {
        return storedQuantization;
    }

    /** A tensor as the files store it, or null. */
    private HostTensor stored(String name) {
        SafetensorsFile file = fileByTensor.get(name);
        return file == null ? null : file.tensor(name);
    }

    private SafetensorsFile fileOf(String name) {
        SafetensorsFile file = names.contains(name) ? fileByTensor.get(name) : null;
        if (file == null) {
            throw new UserInputException("checkpoint " + directory + " has no tensor "
                    + SafetensorsHeader.quote(name));
        }
        return file;
    }

    /** Unmaps every file; tensors handed out before become unusable. */
    @Override
    public void close() {
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }

    @Override
    public String toString() {
        return "Checkpoint[" + directory + ", " + names.size() + " tensors in " + files.size() + " files]";
    }
}
