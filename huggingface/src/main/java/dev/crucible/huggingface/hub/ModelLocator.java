package dev.crucible.huggingface.hub;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.crucible.api.UserInputException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Turns what the user typed after {@code --model} into a model folder:
 * <ol>
 *   <li>an existing local directory is used as it is;</li>
 *   <li>otherwise {@code org/name[@revision]} is looked up in the Hugging Face cache ({@link HubEnvironment}):
 *       {@code refs/<revision>} (default {@code main}) gives the commit, {@code snapshots/<commit>/} is the
 *       folder; a revision that is a commit hash is used directly;</li>
 *   <li>otherwise, unless {@code HF_HUB_OFFLINE} is set, it is downloaded into that cache.</li>
 * </ol>
 * A cached snapshot counts as present when it has {@code config.json} and its safetensors weights; a partial one
 * (say, only the config fetched by another tool) is completed online and used as it is offline.
 */
public final class ModelLocator {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final HubEnvironment environment;
    private final Path home;
    private final HubCache cache;
    private final DownloadProgress progress;

    public ModelLocator(HubEnvironment environment, Path home, DownloadProgress progress) {
        this.environment = Objects.requireNonNull(environment, "environment is null");
        this.home = Objects.requireNonNull(home, "home is null");
        this.cache = new HubCache(environment.cacheDir());
        this.progress = Objects.requireNonNull(progress, "progress is null");
    }

    /** A locator reading {@code env} (HF_HUB_CACHE, HF_HOME, HF_ENDPOINT, HF_HUB_OFFLINE, HF_TOKEN, ...). */
    public static ModelLocator of(Map<String, String> env, Path home, DownloadProgress progress) {
        return new ModelLocator(HubEnvironment.from(env, home), home, progress);
    }

    /** A locator reading the process environment. */
    public static ModelLocator fromSystem(DownloadProgress progress) {
        Path home = Path.of(System.getProperty("user.home"));
        return of(System.getenv(), home, progress);
    }

    public HubEnvironment environment() {
        return environment;
    }

    /**
     * The model folder for {@code spec}.
     *
     * @throws UserInputException when it is not a folder or model id, is not cached while offline, or the Hub
     *                            refuses it (gated, private, missing)
     */
    public Path resolve(String spec) {
        return locate(spec).folder();
    }

    /**
     * A model folder and where it came from: a local folder, or a Hub model through the cache.
     *
     * @param hubModel the Hub id and revision when the folder is a cache snapshot, empty for a local folder
     */
    public record Located(Path folder, Optional<ModelSpec> hubModel) {
        public Located {
            Objects.requireNonNull(folder, "folder is null");
            Objects.requireNonNull(hubModel, "hubModel is null");
        }

        /**
         * How files written for this model name it ({@code base_model_name_or_path} of a PEFT adapter): the Hub id
         * for a Hub model, else the folder's absolute path, since a relative path means a Hub id to transformers and
         * PEFT, which would then go to the network (and would break as soon as the working directory changes).
         */
        public String reference() {
            return hubModel.map(ModelSpec::repoId).orElseGet(() -> folder.toAbsolutePath().normalize().toString());
        }

        /** The Hub revision the user asked for, when it is not the default branch (PEFT's {@code revision}). */
        public Optional<String> revision() {
            return hubModel.map(ModelSpec::revision).filter(r -> !r.equals(ModelSpec.DEFAULT_REVISION));
        }
    }

    /** {@link #resolve} that also says whether the folder is local or a Hub model's snapshot. */
    public Located locate(String spec) {
        Objects.requireNonNull(spec, "spec is null");
        Path local = localPath(spec);
        if (Files.isDirectory(local)) {
            return new Located(local, Optional.empty());
        }
        if (looksLikePath(spec)) {
            throw new UserInputException("model folder " + local + " does not exist");
        }
        ModelSpec model = ModelSpec.parse(spec);
        Optional<Path> cached = cache.find(model);
        if (cached.isPresent() && (environment.offline() || isComplete(cached.get()))) {
            return new Located(cached.get(), Optional.of(model));
        }
        if (environment.offline()) {
            throw new UserInputException("model " + model + " is not in the Hugging Face cache ("
                    + cache.repoFolder(model.repoId()) + " has no snapshot for it) and HF_HUB_OFFLINE is set;"
                    + " unset HF_HUB_OFFLINE to download it, or pass a local folder");
        }
        return new Located(new HubDownloader(environment, cache, progress).download(model), Optional.of(model));
    }

    private Path localPath(String spec) {
        if (spec.equals("~")) {
            return home;
        }
        return spec.startsWith("~/") ? home.resolve(spec.substring(2)) : Path.of(spec);
    }

    /** Model ids never start like paths do, so these are folders the user expected to exist. */
    private static boolean looksLikePath(String spec) {
        return spec.startsWith("/") || spec.startsWith("./") || spec.startsWith("../") || spec.startsWith("~")
                || spec.equals(".") || spec.equals("..") || spec.contains("\\");
    }

    /** config.json plus the weights: model.safetensors, or the index and every shard it names. */
    static boolean isComplete(Path snapshot) {
        if (!Files.isRegularFile(snapshot.resolve("config.json"))) {
            return false;
        }
        Path index = snapshot.resolve(HubDownloader.WEIGHTS_INDEX);
        if (Files.isRegularFile(index)) {
            try {
                JsonNode weightMap = JSON.readTree(index.toFile()).path("weight_map");
                try (Stream<String> shards = weightMap.valueStream().map(v -> v.asText(""))) {
                    return shards.distinct().allMatch(shard -> HubDownloader.safeFileName(shard)
                            && Files.isRegularFile(snapshot.resolve(shard)));
                }
            } catch (IOException e) {
                return false;
            }
        }
        if (Files.isRegularFile(snapshot.resolve(HubDownloader.SINGLE_WEIGHTS))) {
            return true;
        }
        try (Stream<Path> files = Files.list(snapshot)) {
            return files.anyMatch(f -> f.getFileName().toString().endsWith(".safetensors") && Files.isRegularFile(f));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + snapshot, e);
        }
    }
}
