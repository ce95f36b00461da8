package dev.crucible.api.backend;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DecodeResult;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.ForwardResult;
import dev.crucible.api.model.MergedWeights;
import dev.crucible.api.model.ShardRequest;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.train.TrainingMethod;
import dev.crucible.api.train.TrainingRequest;
import dev.crucible.api.train.TrainingSession;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * One kind of accelerator. Everything hardware-specific lives behind this interface: detection, environment
 * set-up, placement, execution, merge materialization, cache clearing and dtype policy. The runner and the
 * experiments only ever talk to this interface; they never ask which device they run on.
 *
 * <p>Implementations are found by {@link java.util.ServiceLoader} on the classpath and in PF4J plugin jars;
 * the same jar works both ways. A backend must have a public no-argument constructor that does no work, and keeps
 * no state of its own: what {@link #setupEnvironment} decides is an {@code E} it returns, and what {@link #shard}
 * places is an {@code M}, which the same backend's compute methods take as they are (the runner captures both
 * types once, as DJL's engine provider and engine or Trino's connector factory and connector do).
 *
 * <p>The compute methods ({@link #shard}, {@link #forward}, {@link #decode}) run the one model definition
 * ({@link dev.crucible.api.model.Transformer}); a backend whose compute is not built yet inherits defaults that
 * say so when called rather than pretending.
 *
 * @param <E> what set-up chose for this process
 * @param <M> the backend's placed model
 */
public interface HardwareBackend<E extends BackendEnvironment, M extends DeviceModel> {

    /**
     * The version of this interface and the types it hands out. It changes whenever a backend compiled against an
     * older one could fail here; the runner refuses a plugin that reports another.
     */
    int SPI_VERSION = 1;

    /**
     * The SPI version this backend was compiled against: implement it as {@code return SPI_VERSION;}, which the
     * compiler copies into the plugin's own class, so the jar keeps saying which api it was built for.
     */
    int spiVersion();

    /** Stable id used by {@code --device} and {@code CRUCIBLE_DEVICE_PRIORITY}: cpu, cuda, xla, mps, xpu. */
    String id();

    /** Rank in {@code --device auto}; higher wins. Defaults: xla 50, cuda 40, xpu 30, mps 20, cpu 10. */
    int priority();

    /**
     * Cheap and safe: never loads a native runtime, never throws (a throw is reported as unavailable), returns
     * within a few seconds (a slow probe is reported as unavailable).
     */
    Probe detect();

    /**
     * Whether {@code name}, which is not this backend's {@link #id()}, selects it. The xla backend answers to
     * {@code tpu} only when its probe found a TPU.
     */
    default boolean answersTo(String name, Probe probe) {
        return false;
    }

    /**
     * Decides, before any device access and before the native runtime is loaded, what this process runs with: the
     * native build, thread counts, environment switches that must precede client creation. A request the backend
     * cannot serve (a device index it lacks, a bad thread count) is the user's mistake.
     */
    E setupEnvironment(SetupRequest request);

    /**
     * The compute dtype for {@code --dtype auto}, given the checkpoint's dtype: a backend keeps a half-precision
     * checkpoint in half precision only where the hardware computes it natively, and otherwise widens to F32.
     */
    DType chooseDtype(DType checkpointDtype);

    /** Frees cached device memory; returns one line saying what it did (a no-op says so). */
    String emptyCache(E environment);

    /**
     * Places a loaded checkpoint on this backend's devices in {@code request.dtype()} (one copy per tensor, taken
     * while the checkpoint is open). The returned model owns the copies and frees them on close.
     */
    default M shard(E environment, ShardRequest request) {
        throw notImplemented("shard");
    }

    /**
     * For each prompt, at its last token: the residual stream after the embeddings and after every layer
     * ({@code numLayers + 1} float32 vectors), the final norm's output, and the raw float32 logits that choose
     * the first generated token.
     */
    default ForwardResult forward(M model, ForwardRequest request) {
        throw notImplemented("forward");
    }

    /**
     * Batched greedy generation: prompts left-padded, each row stopping on its own at a stop token, at most
     * {@code maxNewTokens} each; also returns each prompt's first-step logits.
     */
    default DecodeResult decode(M model, DecodeRequest request) {
        throw notImplemented("decode");
    }

    /**
     * The model's adapters merged into their base weights ({@code W + scale·B·A}), materialized on the host with
     * {@code base}'s names, shapes and dtypes. {@code base} is the checkpoint the model was sharded from, still
     * open: merging starts from its exact stored values, whatever dtype the device computes in. The default is the
     * placed model's own merge, the same on every backend.
     */
    default MergedWeights merge(M model, Checkpoint base) {
        return model.placed().merge(base);
    }

    /**
     * Empty when {@link #startTraining} can train with {@code method} here; otherwise one sentence saying why not,
     * which the runner prints as it exits (e.g. why a 4-bit base cannot be trained on this hardware).
     */
    default Optional<String> trainingUnsupported(TrainingMethod method) {
        return Optional.of("the " + id() + " backend cannot fine-tune models yet");
    }

    /**
     * Places {@code request.checkpoint()} for training with {@code request.method()} and returns the session that
     * runs forward, backward and optimizer steps on the device. Called only when {@link #trainingUnsupported} is
     * empty for the method.
     */
    default TrainingSession startTraining(E environment, TrainingRequest request) {
        throw notImplemented("fine-tune");
    }

    /**
     * Measures this machine's ceilings with the runtime {@code model} runs on, as its ops run (its dtype, its
     * threads): a large square matrix product and a streaming read of memory much larger than any cache, each for
     * about half of {@code budget}. Call it between model runs, so that both see the same machine.
     */
    default Ceilings measureCeilings(M model, Duration budget) {
        throw new UnsupportedOperationException("the " + id() + " backend cannot measure its ceilings yet");
    }

    /**
     * Loads this backend's native runtime (never part of {@link #detect()}) and describes it for
     * {@code runner doctor}: build, version, threads. Called only for a backend that is available.
     */
    default Map<String, String> runtimeDetails(E environment) {
        return Map.of();
    }

    private UnsupportedOperationException notImplemented(String method) {
        return new UnsupportedOperationException("the " + id() + " backend cannot " + method + " models yet");
    }
}
