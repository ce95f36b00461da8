package dev.crucible.torch;

import dev.crucible.api.backend.Ceilings;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.DType;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DecodeResult;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.ForwardResult;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.MergedWeights;
import dev.crucible.api.model.ShardRequest;
import dev.crucible.api.train.TrainingMethod;
import dev.crucible.api.train.TrainingRequest;
import dev.crucible.api.train.TrainingSession;
import dev.crucible.torch.train.TorchTrainingSession;
import java.util.Optional;
import java.time.Duration;
import java.util.OptionalInt;

/**
 * The compute half of a libtorch backend: placement, forward, greedy decode and merge of the one model definition,
 * for whichever device {@link #torchDevice()} names. The cpu, cuda and mps plugins extend it and add what differs
 * (detection, environment, dtype policy, cache clearing, batch size):
 *
 * <pre>{@code
 * public final class CpuBackend extends TorchBackend {
 *     protected String torchDevice() { return "cpu"; }
 *     public void setupEnvironment(SetupRequest request) { request.threads().ifPresent(this::useThreads); }
 *     ...id(), priority(), detect(), chooseDtype(), emptyCache()
 * }
 * }</pre>
 */
public abstract class TorchBackend implements HardwareBackend {

    private volatile OptionalInt threads = OptionalInt.empty();
    /** Threads inside each op of the placed model: {@link #threads}, or 1 when its batches run side by side. */
    private volatile OptionalInt opThreads = OptionalInt.empty();

    /** The libtorch device models are placed on: {@code cpu}, {@code cuda:1}, {@code mps}. */
    protected abstract String torchDevice();

    /** Prompts per batch when a request leaves it to the backend. */
    protected int defaultBatchSize(DeviceModel model) {
        return 8;
    }

    /** Intra-op CPU threads ({@code at::set_num_threads}), applied when libtorch is first used here. */
    protected final void useThreads(int count) {
        if (count < 1) {
            throw new IllegalArgumentException("threads must be at least 1, got " + count);
        }
        threads = OptionalInt.of(count);
    }

    @Override
    public DeviceModel shard(ShardRequest request) {
        TorchRuntime.load();
        int workers = batchWorkers(request.config());
        // With batch workers each batch runs on a thread of its own, every op inside it on that thread alone.
        opThreads = workers > 1 ? OptionalInt.of(1) : threads;
        applyThreads();
        return TorchModel.place(request, torchDevice(), hostKernels(opThreads.orElse(0), request.dtype()), workers);
    }

    /** libtorch's intra-op threads as the placed model uses them (ceilings and reports then match its ops). */
    private void applyThreads() {
        (opThreads.isPresent() ? opThreads : threads).ifPresent(TorchRuntime::setThreads);
    }

    /**
     * How many batches of a request for this model run at once, each on a thread of its own with every op inside it
     * single-threaded; 1, the default, runs batches one after another with the threads working inside each op.
     */
    protected int batchWorkers(ModelConfig config) {
        return 1;
    }

    /**
     * Kernels of this backend's own that run in place of libtorch's where they take a shape (see
     * {@link HostKernels}); null, the default, for libtorch's alone. Called when a model is placed.
     *
     * @param threadsPerCall threads one kernel call may use (0: the backend's default); with batch workers it is 1
     *                       and calls come from several threads at once
     * @param dtype          the dtype the model computes in (kernels may prepare for it)
     */
    protected HostKernels hostKernels(int threadsPerCall, DType dtype) {
        return null;
    }

    /**
     * Matrix side and streaming-buffer size for {@link #measureCeilings}: 2048² and 1 GiB, compute-bound and far
     * past any CPU cache; a GPU backend may want larger matrices.
     */
    protected int ceilingMatrixSize() {
        return 2048;
    }

    protected long ceilingStreamBytes() {
        return 1L << 30;
    }

    @Override
    public Ceilings measureCeilings(DType dtype, Duration budget) {
        TorchRuntime.load();
        applyThreads();
        try (TorchOps ops = new TorchOps(torchDevice(), true)) {
            return new CeilingProbe(ops.device(), ceilingMatrixSize(), ceilingStreamBytes()).measure(dtype, budget);
        }
    }

    @Override
    public java.util.Map<String, String> runtimeDetails() {
        TorchRuntime.load();
        applyThreads();
        java.util.Map<String, String> details = new java.util.LinkedHashMap<>();
        details.put("device", torchDevice());
        details.putAll(TorchRuntime.describe());
        return details;
    }

    @Override
    public ForwardResult forward(DeviceModel model, ForwardRequest request) {
        return torchModel(model).runner().forward(request, batchSize(model, request.batchSize()));
    }

    @Override
    public DecodeResult decode(DeviceModel model, DecodeRequest request) {
        return torchModel(model).runner().decode(request, batchSize(model, request.batchSize()));
    }

    @Override
    public MergedWeights merge(DeviceModel model, Checkpoint base) {
        return torchModel(model).placed().merge(base);
    }

    /** LoRA, QLoRA (NF4 blocks dequantized by libtorch ops, so on every libtorch device) and full training. */
    @Override
    public Optional<String> trainingUnsupported(TrainingMethod method) {
        return Optional.empty();
    }

    @Override
    public TrainingSession startTraining(TrainingRequest request) {
        TorchRuntime.load();
        threads.ifPresent(TorchRuntime::setThreads);
        return TorchTrainingSession.start(request, torchDevice());
    }

    private int batchSize(DeviceModel model, int requested) {
        return requested > 0 ? requested : Math.max(1, defaultBatchSize(model));
    }

    private TorchModel torchModel(DeviceModel model) {
        if (model instanceof TorchModel torchModel) {
            return torchModel;
        }
        throw new IllegalArgumentException("the " + id() + " backend was given a model placed by another backend: "
                + model.getClass().getName());
    }
}
