package dev.crucible.torch;

import dev.crucible.api.backend.Ceilings;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DecodeResult;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.ForwardResult;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.ShapePolicy;
import dev.crucible.api.model.ShardRequest;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.train.TrainingMethod;
import dev.crucible.api.train.TrainingRequest;
import dev.crucible.api.train.TrainingSession;
import dev.crucible.torch.train.TorchTrainingSession;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The compute half of a libtorch backend: placement, forward, greedy decode and merge of the one model definition,
 * on the device its {@link TorchEnvironment} names. The cpu, cuda and mps plugins extend it and add what differs
 * (detection, environment, dtype policy, cache clearing, batch size):
 *
 * <pre>{@code
 * public final class CpuBackend extends TorchBackend {
 *     public TorchEnvironment setupEnvironment(SetupRequest request) {
 *         return new TorchEnvironment(request.device(), "cpu", request.threads());
 *     }
 *     ...spiVersion(), id(), priority(), detect(), chooseDtype(), emptyCache()
 * }
 * }</pre>
 */
public abstract class TorchBackend implements HardwareBackend<TorchEnvironment, TorchModel> {

    /** Prompts per batch when a request leaves it to the backend. */
    protected int defaultBatchSize(TorchModel model) {
        return 8;
    }

    @Override
    public TorchModel shard(TorchEnvironment environment, ShardRequest request) {
        environment.activate();
        int workers = batchWorkers(environment, request.config());
        // With batch workers each batch runs on a thread of its own, every op inside it on that thread alone.
        OptionalInt opThreads = workers > 1 ? OptionalInt.of(1) : environment.threads();
        opThreads.ifPresent(TorchRuntime::setThreads);
        HostKernels kernels = hostKernels(environment, opThreads.orElse(0), request.dtype());
        try {
            return TorchModel.place(request, environment.torchDevice(), kernels, shapePolicy(), workers, opThreads);
        } catch (RuntimeException | Error e) {
            if (kernels != null) {
                kernels.close();
            }
            throw e;
        }
    }

    /**
     * The shapes this backend's steps run in: libtorch runs each op as it comes, so exact lengths (the least work)
     * unless a backend says otherwise.
     */
    protected ShapePolicy shapePolicy() {
        return ShapePolicy.EXACT;
    }

    /**
     * How many batches of a request for this model run at once, each on a thread of its own with every op inside it
     * single-threaded; 1, the default, runs batches one after another with the threads working inside each op.
     */
    protected int batchWorkers(TorchEnvironment environment, ModelConfig config) {
        return 1;
    }

    /**
     * Kernels of this backend's own that run in place of libtorch's where they take a shape (see
     * {@link HostKernels}); null, the default, for libtorch's alone. Called when a model is placed; the model owns
     * and closes them.
     *
     * @param threadsPerCall threads one kernel call may use (0: the environment's); with batch workers it is 1 and
     *                       calls come from several threads at once
     * @param dtype          the dtype the model computes in (kernels may prepare for it)
     */
    protected HostKernels hostKernels(TorchEnvironment environment, int threadsPerCall, DType dtype) {
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
    public Ceilings measureCeilings(TorchModel model, Duration budget) {
        model.threadsPerOp().ifPresent(TorchRuntime::setThreads);
        try (TorchOps ops = new TorchOps(model.ops().deviceName(), true)) {
            return new CeilingProbe(ops.device(), ceilingMatrixSize(), ceilingStreamBytes())
                    .measure(model.dtype(), budget);
        }
    }

    @Override
    public Map<String, String> runtimeDetails(TorchEnvironment environment) {
        environment.activate();
        Map<String, String> details = new LinkedHashMap<>();
        details.put("device", environment.torchDevice());
        details.putAll(TorchRuntime.describe());
        return details;
    }

    @Override
    public ForwardResult forward(TorchModel model, ForwardRequest request) {
        return model.runner().forward(request, batchSize(model, request.batchSize()));
    }

    @Override
    public DecodeResult decode(TorchModel model, DecodeRequest request) {
        return model.runner().decode(request, batchSize(model, request.batchSize()));
    }

    /** LoRA, QLoRA (NF4 blocks dequantized by libtorch ops, so on every libtorch device) and full training. */
    @Override
    public Optional<String> trainingUnsupported(TrainingMethod method) {
        return Optional.empty();
    }

    @Override
    public TrainingSession startTraining(TorchEnvironment environment, TrainingRequest request) {
        environment.activate();
        environment.threads().ifPresent(TorchRuntime::setThreads);
        return TorchTrainingSession.start(request, environment.torchDevice());
    }

    private int batchSize(TorchModel model, int requested) {
        return requested > 0 ? requested : Math.max(1, defaultBatchSize(model));
    }
}
