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
import dev.crucible.torch.policy.BatchSizeSearch;
import dev.crucible.torch.policy.DtypeFallback;
import dev.crucible.torch.train.TorchTrainingSession;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.function.IntConsumer;

/**
 * The compute half of a libtorch backend: placement, forward, greedy decode and merge of the one model definition,
 * on the device its {@link TorchEnvironment} names. The cpu, cuda and mps plugins extend it and add what differs
 * (detection, environment, dtype policy, cache clearing, batch size). Two policies a GPU wants are built here and
 * switched on by a plugin: a dtype fallback for {@code --dtype auto} ({@link #dtypeCandidates}) and a measured batch
 * size for batch size 0 ({@link #batchSizeSearchCap}).
 *
 * <pre>{@code
 * public final class CpuBackend extends TorchBackend<TorchEnvironment> {
 *     public TorchEnvironment setupEnvironment(SetupRequest request) {
 *         return new TorchEnvironment(request.device(), "cpu", request.threads());
 *     }
 *     ...spiVersion(), id(), priority(), detect(), chooseDtype(), emptyCache()
 * }
 * }</pre>
 */
public abstract class TorchBackend<E extends TorchEnvironment> implements HardwareBackend<E, TorchModel> {

    /** Prompts per batch when a request leaves it to the backend. */
    protected int defaultBatchSize(TorchModel model) {
        return 8;
    }

    @Override
    public TorchModel shard(E environment, ShardRequest request) {
        environment.activate();
        List<DType> candidates = request.autoDtype() ? dtypeCandidates(environment, request.dtype())
                : List.of(request.dtype());
        if (candidates.size() == 1) {
            return place(environment, request.withDtype(candidates.getFirst()));
        }
        return DtypeFallback.choose(candidates, dtype -> place(environment, request.withDtype(dtype)),
                TorchBackend::firstTokenFinite, this::report);
    }

    /**
     * The dtypes {@code --dtype auto} may end in, tried in order with a one-token check each
     * ({@link DtypeFallback}); {@code chosen} is {@link #chooseDtype}'s answer. The default is {@code chosen} alone,
     * unchecked.
     */
    protected List<DType> dtypeCandidates(E environment, DType chosen) {
        return List.of(chosen);
    }

    /**
     * Called before a model is placed in {@code request.dtype()}, once per dtype tried, before anything is read or
     * copied: a backend refuses here, with one line, a model its devices cannot hold, or returns how to split it by
     * layers over several devices ({@link LayerSplit}). Empty, the default, places it whole on the environment's
     * device.
     */
    protected Optional<LayerSplit> layerSplit(E environment, ShardRequest request) {
        return Optional.empty();
    }

    private TorchModel place(E environment, ShardRequest request) {
        Optional<LayerSplit> split = layerSplit(environment, request);
        int workers = batchWorkers(environment, request.config());
        // With batch workers each batch runs on a thread of its own, every op inside it on that thread alone.
        OptionalInt opThreads = workers > 1 ? OptionalInt.of(1) : environment.threads();
        opThreads.ifPresent(TorchRuntime::setThreads);
        HostKernels kernels = hostKernels(environment, opThreads.orElse(0), request.dtype());
        try {
            TorchModel model = split.isPresent()
                    ? TorchModel.place(request, split.get(), kernels, shapePolicy(), workers, opThreads)
                    : TorchModel.place(request, environment.torchDevice(), kernels, shapePolicy(), workers, opThreads);
            if (foldsAdapters(request.config())) {
                model.placed().foldAdapters();
            }
            return model;
        } catch (RuntimeException | Error e) {
            if (kernels != null) {
                kernels.close();
            }
            throw e;
        }
    }

    /** A few tokens through the model: whether the logits that choose the first generated token are all finite. */
    static boolean firstTokenFinite(TorchModel model) {
        int vocab = model.config().vocabSize();
        int[] prompt = new int[Math.min(8, vocab)];
        for (int i = 0; i < prompt.length; i++) {
            prompt[i] = i;
        }
        model.config().bosTokenId().ifPresent(bos -> prompt[0] = bos);
        DecodeRequest probe = new DecodeRequest(List.of(prompt), 1, Set.of(), 0, 1);
        return DtypeFallback.allFinite(model.runner().decode(probe, 1).generations().getFirst().firstStepLogits());
    }

    /** Prints one line of this backend's policy decisions for the user (stderr, prefixed with the backend's id). */
    protected void report(String line) {
        System.err.println(id() + ": " + line);
    }

    /**
     * The shapes this backend's steps run in: libtorch runs each op as it comes, so exact lengths (the least work)
     * unless a backend says otherwise.
     */
    protected ShapePolicy shapePolicy() {
        return ShapePolicy.EXACT;
    }

    /**
     * Whether inference adapters (an abliteration trial's edits) are folded into copies of this model's float32
     * weights ({@link dev.crucible.api.model.PlacedModel#foldAdapters}): fewer ops per step for a copy of each edited
     * weight. No, the default.
     */
    protected boolean foldsAdapters(ModelConfig config) {
        return false;
    }

    /**
     * How many batches of a request for this model run at once, each on a thread of its own with every op inside it
     * single-threaded; 1, the default, runs batches one after another with the threads working inside each op.
     */
    protected int batchWorkers(E environment, ModelConfig config) {
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
    protected HostKernels hostKernels(E environment, int threadsPerCall, DType dtype) {
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
    public Map<String, String> runtimeDetails(E environment) {
        environment.activate();
        Map<String, String> details = new LinkedHashMap<>();
        details.put("device", environment.torchDevice());
        details.putAll(TorchRuntime.describe());
        return details;
    }

    @Override
    public ForwardResult forward(TorchModel model, ForwardRequest request) {
        int size = request.batchSize() > 0 ? request.batchSize()
                : autoBatchSize(model, "residual pass", request.prompts().size(), batch ->
                        model.runner().forward(new ForwardRequest(cycle(request.prompts(), batch), batch), batch));
        return model.runner().forward(request, size);
    }

    @Override
    public DecodeResult decode(TorchModel model, DecodeRequest request) {
        int size = request.batchSize() > 0 ? request.batchSize()
                : autoBatchSize(model, "generation", request.prompts().size(), batch -> {
                    DecodeRequest trial = new DecodeRequest(cycle(request.prompts(), batch), request.maxNewTokens(),
                            request.stopTokens(), request.padToken(), batch);
                    model.runner().decode(trial, batch);
                });
        return model.runner().decode(request, size);
    }

    /**
     * The largest batch size the batch-size search tries for batch size 0 ({@link BatchSizeSearch}); empty, the
     * default, for no search ({@link #defaultBatchSize} then).
     */
    protected OptionalInt batchSizeSearchCap(TorchModel model) {
        return OptionalInt.empty();
    }

    /** Whether {@code failure} is the device running out of memory (libtorch's message says so on every device). */
    protected boolean isOutOfMemory(RuntimeException failure) {
        String message = failure.getMessage();
        return message != null && message.toLowerCase(Locale.ROOT).contains("out of memory");
    }

    /** Returns what a failed batch left in the device allocator's cache; the default does nothing. */
    protected void releaseCachedMemory(TorchModel model) {
    }

    /**
     * The batch size for a request that leaves it to the backend: without a search the default, with one the size
     * the search measured for this model and pass, searched on the first such request (over at most as many prompts
     * as it has, rounded up to a power of two) and again only for a request with more prompts than that searched.
     *
     * @param runBatch runs one batch of the given size
     */
    private int autoBatchSize(TorchModel model, String pass, int prompts, IntConsumer runBatch) {
        OptionalInt cap = batchSizeSearchCap(model);
        if (cap.isEmpty()) {
            return Math.max(1, defaultBatchSize(model));
        }
        int limit = Math.min(cap.getAsInt(), prompts <= 1 ? 1 : Integer.highestOneBit(prompts - 1) * 2);
        TorchModel.BatchSizeChoice known = model.batchSizeChoice(pass);
        if (known != null && (known.settled() || known.searchedUpTo() >= limit)) {
            return known.batchSize();
        }
        if (limit == 1) {
            return 1;
        }
        runBatch.accept(1); // warm-up: the device's first batch pays for library and allocator set-up
        BatchSizeSearch.Result result = BatchSizeSearch.search(limit, size -> {
            long start = System.nanoTime();
            runBatch.accept(size);
            return (System.nanoTime() - start) / 1e9;
        }, this::isOutOfMemory, () -> releaseCachedMemory(model));
        boolean settled = result.trials().getLast().outOfMemory() || limit == cap.getAsInt();
        model.rememberBatchSize(pass, new TorchModel.BatchSizeChoice(result.chosen(), limit, settled));
        report("batch size for the " + pass + " (" + (settled ? "kept for this model" : "searched up to " + limit)
                + "):\n" + result.table());
        return result.chosen();
    }

    /** {@code count} prompts taken from {@code prompts} in turn (repeated when there are fewer). */
    private static List<int[]> cycle(List<int[]> prompts, int count) {
        List<int[]> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            out.add(prompts.get(i % prompts.size()));
        }
        return out;
    }

    /** LoRA, QLoRA (NF4 blocks dequantized by libtorch ops, so on every libtorch device) and full training. */
    @Override
    public Optional<String> trainingUnsupported(TrainingMethod method) {
        return Optional.empty();
    }

    @Override
    public TrainingSession startTraining(E environment, TrainingRequest request) {
        environment.activate();
        environment.threads().ifPresent(TorchRuntime::setThreads);
        return TorchTrainingSession.start(request, environment.torchDevice());
    }

}
