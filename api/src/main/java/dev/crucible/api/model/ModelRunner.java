package dev.crucible.api.model;

import dev.crucible.api.UserInputException;
import dev.crucible.api.model.layout.Attention;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorOps;
import dev.crucible.api.tensor.TensorScope;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;
import java.util.stream.IntStream;
import java.util.stream.LongStream;

/**
 * Forward passes and batched greedy decoding of the {@link Transformer} over any {@link TensorOps}: left padding,
 * rotary positions that skip the padding, a preallocated KV cache, per-row stop tokens. Backends supply the ops
 * and a batch size; the stepping logic lives here once.
 *
 * <p>Per generated token the host sends the previous ids and positions (a few integers per row) and reads back
 * the argmax ids; logits stay on the device except the first step's, which callers need. Every step runs in its
 * own {@link TensorScope}, so memory is flat however long the generation.
 *
 * <p>Each prefill, each decode step and each forward pass is one {@link TensorOps#step}: the per-layer state
 * ({@link DecodeState}) goes in and comes out, and everything the host does (reading ids back, stop tokens, the
 * listener) happens between steps. The backend's {@link ShapePolicy} decides the shapes: an eager backend takes
 * exact lengths; a compiling one gets a padded prompt bucket and one fixed cache window, so that a decode request
 * is two programs, one prefill and one decode step. On an eager backend the rows that stopped leave a batch's later
 * steps ({@link ShapePolicy#dropsFinishedRows()}): short answers (an abliteration trial's refusals) no longer ride
 * along to the longest one; and the tokens every prompt of a batch begins with (a chat template's system turn) are
 * computed once for the batch ({@link #sharedPrefix}), not once per row.
 *
 * <p>A backend may let several batches run at once ({@code batchWorkers}): for a small model on a CPU, where one
 * batch's ops are too small to split across cores, whole batches on separate cores are what scales. The ops and
 * kernels must then take calls from several threads. Not otherwise thread-safe: one request at a time.
 */
public final class ModelRunner implements AutoCloseable {
    /**
     * Fewer shared leading tokens than this are computed with every row ({@link #sharedPrefix}): a beginning-of-text
     * token alone is not worth a pass of its own and the cache copies.
     */
    static final int SHARED_PREFIX_MIN = 8;

    private final TensorOps ops;
    private final PlacedModel model;
    private final Transformer transformer;
    private final ShapePolicy shapes;
    private final int batchWorkers;
    /** Whether every layer's state is attention's keys and values (what a shared prefix can be spread from). */
    private final boolean attentionOnly;
    private ExecutorService workers;

    /** @param shapes the shapes the backend wants its steps in */
    public ModelRunner(TensorOps ops, PlacedModel model, ShapePolicy shapes) {
        this(ops, model, shapes, 1);
    }

    /** @param batchWorkers batches that may run at once, each on its own thread (1: one after another, here) */
    public ModelRunner(TensorOps ops, PlacedModel model, ShapePolicy shapes, int batchWorkers) {
        if (batchWorkers < 1) {
            throw new IllegalArgumentException("batchWorkers must be at least 1, got " + batchWorkers);
        }
        this.ops = ops;
        this.model = model;
        this.transformer = model.transformer();
        this.shapes = java.util.Objects.requireNonNull(shapes, "shapes is null");
        this.batchWorkers = batchWorkers;
        this.attentionOnly = transformer.weights().layout().layers().stream()
                .allMatch(layer -> layer.statefulBlock() instanceof Attention);
    }

    public Transformer transformer() {
        return transformer;
    }

    /** Runs each prompt once; residuals, final norm and logits at its last token. */
    public ForwardResult forward(ForwardRequest request, int batchSize) {
        List<int[]> prompts = request.prompts();
        requireFits(prompts, 0);
        List<int[]> chunks = chunksByLength(prompts, batchSize);
        prepareFor(shapes.promptSlots(longest(prompts)));
        List<List<Activations>> perChunk = eachChunk(chunks, true,
                chunk -> forwardBatch(Arrays.stream(chunk).mapToObj(prompts::get).toList()));
        return new ForwardResult(inRequestOrder(prompts.size(), chunks, perChunk));
    }

    /** Greedy continuation of every prompt. */
    public DecodeResult decode(DecodeRequest request, int batchSize) {
        List<int[]> prompts = request.prompts();
        requireFits(prompts, request.maxNewTokens());
        List<int[]> chunks = chunksByLength(prompts, batchSize);
        prepareFor(prompts.isEmpty() ? 0
                : shapes.cacheSlots(shapes.promptSlots(longest(prompts)), request.maxNewTokens()));
        // A listener sees the steps in order, so streamed requests run one batch at a time.
        List<List<Generation>> perChunk = eachChunk(chunks, request.listener() == TokenListener.NONE,
                chunk -> decodeBatch(Arrays.stream(chunk).mapToObj(prompts::get).toList(), chunk, request));
        return new DecodeResult(inRequestOrder(prompts.size(), chunks, perChunk));
    }

    /**
     * {@code body} for every chunk: on the calling thread, or on {@link #batchWorkers} threads at once when there are
     * several chunks and {@code concurrent} allows. Each chunk's arithmetic is the same either way (its own tensors,
     * KV cache and scopes; the weights and rotary tables are only read), so results do not depend on the workers.
     */
    private <T> List<List<T>> eachChunk(List<int[]> chunks, boolean concurrent, Function<int[], List<T>> body) {
        if (batchWorkers == 1 || chunks.size() == 1 || !concurrent) {
            return chunks.stream().map(body).toList();
        }
        List<Future<List<T>>> futures = new ArrayList<>();
        ExecutorService pool = workers();
        for (int[] chunk : chunks) {
            futures.add(pool.submit(() -> body.apply(chunk)));
        }
        List<List<T>> results = new ArrayList<>();
        RuntimeException failure = null;
        for (Future<List<T>> future : futures) {
            try {
                results.add(future.get());
            } catch (ExecutionException e) {
                if (failure == null) {
                    failure = e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
                }
                if (e.getCause() instanceof Error error) {
                    throw error;
                }
            } catch (InterruptedException e) {
                futures.forEach(f -> f.cancel(true));
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while batches ran", e);
            }
        }
        if (failure != null) {
            throw failure;
        }
        return results;
    }

    private synchronized ExecutorService workers() {
        if (workers == null) {
            workers = Executors.newFixedThreadPool(batchWorkers, task -> Thread.ofPlatform().daemon()
                    .name("crucible-batch-worker").unstarted(task));
        }
        return workers;
    }

    private static <T> List<T> inRequestOrder(int size, List<int[]> chunks, List<List<T>> perChunk) {
        List<T> results = new ArrayList<>(java.util.Collections.nCopies(size, null));
        for (int c = 0; c < chunks.size(); c++) {
            int[] chunk = chunks.get(c);
            for (int i = 0; i < chunk.length; i++) {
                results.set(chunk[i], perChunk.get(c).get(i));
            }
        }
        return results;
    }

    /**
     * Refuses, before anything is allocated, a request whose sequences do not fit the model's context: the cache,
     * the rotary tables and the {@code [T, S]} attention masks are sized from these lengths, so an unchecked prompt
     * of a million tokens would ask the allocator for a terabyte. Callers that know where a prompt came from check
     * first and say so; this is the line no caller can get past.
     */
    private void requireFits(List<int[]> prompts, int maxNewTokens) {
        ModelConfig config = transformer.config();
        long context = config.contextLength();
        for (int i = 0; i < prompts.size(); i++) {
            int promptTokens = prompts.get(i).length;
            long length = (long) promptTokens + maxNewTokens;
            if (length > context) {
                String size = maxNewTokens == 0 ? String.format(Locale.ROOT, "is %,d tokens", promptTokens)
                        : String.format(Locale.ROOT, "needs %,d tokens (%,d of prompt, %,d to generate)", length,
                        promptTokens, maxNewTokens);
                throw new UserInputException("prompt " + (i + 1) + " of the request " + size + ", more than "
                        + config.describeContext());
            }
        }
    }

    /**
     * Prepares, once per request and before any batch runs, what the longest batch needs: the batches then only
     * read the rotary tables, so batches on worker threads never grow them under each other.
     *
     * @param slots the most slots a batch takes (padding included), which the rotary tables must cover
     */
    private void prepareFor(int slots) {
        model.ensureTables(slots);
    }

    private static int longest(List<int[]> prompts) {
        return prompts.stream().mapToInt(p -> p.length).max().orElse(0);
    }

    private List<Activations> forwardBatch(List<int[]> prompts) {
        ModelConfig config = transformer.config();
        PaddedBatch batch = PaddedBatch.leftPad(prompts, DecodeRequest.defaultPadToken(config),
                shapes.promptSlots(longest(prompts)));
        int rows = batch.rows();
        int hidden = config.hiddenSize();
        int boundaries = config.numLayers() + 1;
        int shared = sharedPrefix(prompts);
        float[] states;
        float[] logits;
        // With a shared prefix the pass runs over a cache that holds it and computes the slots after it only.
        try (DecodeState cache = shared == 0 ? null : spreadPrefix(prompts.getFirst(), shared, batch, batch.length());
             TensorScope scope = ops.openScope()) {
            long last = batch.length() - 1L - shared;
            Step whole = shared == 0 ? batch.wholeBatch(ops, model.cosTable(), model.sinTable(), false)
                    : step(batch, shared, ops.constant(LongStream.range(shared, batch.length()).toArray(),
                            batch.length() - shared), ops.constant(range(batch.length()), batch.length()),
                            ops.constant(batch.padding(), rows));
            List<LayerState> like = cache == null ? null : cache.states();
            List<Tensor> inputs = new ArrayList<>(whole.tensors());
            if (cache != null) {
                inputs.addAll(cache.tensors());
            }
            int stepInputs = whole.tensors().size();
            // The logits are made where the head is; on a model split over devices every captured residual goes
            // there too (one [B, 1, H] row each), so the host still reads it all at once.
            TensorOps head = ops.forHead();
            List<Tensor> read = ops.step("forward", inputs, in -> {
                List<Tensor> captured = new ArrayList<>();
                ResidualHook hook = new ResidualHook() {
                    @Override
                    public void residual(int boundary, Tensor residual) {
                        TensorOps at = boundary == 0 ? ops : ops.forLayer(boundary - 1);
                        captured.add(head.transfer(at.slice(residual, 1, last, last + 1)));
                    }

                    @Override
                    public void finalNorm(Tensor normed) {
                        captured.add(normed);
                    }
                };
                Step step = whole.with(in.subList(0, stepInputs));
                List<Tensor> results = new ArrayList<>();
                Tensor output;
                List<LayerState> after = List.of();
                if (like == null) {
                    output = transformer.forward(ops, step, hook);
                } else {
                    Transformer.Output stepped = transformer.forward(ops, step,
                            DecodeState.unflatten(like, in.subList(stepInputs, in.size())), hook);
                    output = stepped.logits();
                    after = stepped.states();
                }
                results.add(head.cast(head.concat(captured, 1), DType.F32));
                results.add(head.cast(output, DType.F32));
                results.addAll(DecodeState.flatten(after));
                return results;
            });
            if (cache != null) {
                cache.adopt(DecodeState.unflatten(like, read.subList(2, read.size())));
            }
            // One host read per batch: [B, L+2, H] states, then [B, V] logits.
            states = ops.readFloats(read.get(0));
            logits = ops.readFloats(read.get(1));
        }
        int vocab = config.vocabSize();
        List<Activations> out = new ArrayList<>(rows);
        for (int row = 0; row < rows; row++) {
            float[][] residuals = new float[boundaries][];
            int base = row * (boundaries + 1) * hidden;
            for (int boundary = 0; boundary < boundaries; boundary++) {
                int from = base + boundary * hidden;
                residuals[boundary] = Arrays.copyOfRange(states, from, from + hidden);
            }
            int normFrom = base + boundaries * hidden;
            out.add(new Activations(residuals, Arrays.copyOfRange(states, normFrom, normFrom + hidden),
                    Arrays.copyOfRange(logits, row * vocab, (row + 1) * vocab)));
        }
        return out;
    }

    /** @param promptIndexes each row's index in the request, as the listener names prompts */
    private List<Generation> decodeBatch(List<int[]> prompts, int[] promptIndexes, DecodeRequest request) {
        ModelConfig config = transformer.config();
        PaddedBatch batch = PaddedBatch.leftPad(prompts, request.padToken(), shapes.promptSlots(longest(prompts)));
        int rows = batch.rows();
        int promptLength = batch.length();
        int maxNew = request.maxNewTokens();
        int capacity = shapes.cacheSlots(promptLength, maxNew);
        Set<Long> stops = new HashSet<>();
        request.stopTokens().forEach(token -> stops.add(token.longValue()));

        List<List<Integer>> generated = new ArrayList<>();
        boolean[] stopped = new boolean[rows];
        boolean[] ended = new boolean[rows];
        for (int row = 0; row < rows; row++) {
            generated.add(new ArrayList<>());
        }
        float[] firstLogits;
        long[] next;
        int shared = sharedPrefix(prompts);
        try (DecodeState state = shared > 0 ? spreadPrefix(prompts.getFirst(), shared, batch, capacity)
                : DecodeState.allocate(ops, transformer.weights().layout(), rows, capacity, transformer.computeDtype());
             BatchConstants constants = new BatchConstants(capacity, batch)) {
            try (TensorScope scope = ops.openScope()) {
                Step prefill = step(batch, shared, constants.slots(shared, promptLength),
                        constants.slots(0, shapes.attendWholeCache() ? capacity : promptLength), constants.padding);
                List<Tensor> out = runStep("prefill", prefill, state, rows, true);
                firstLogits = ops.readFloats(out.get(0));
                next = ops.readLongs(out.get(1));
            }
            // The rows the steps still compute, as indexes into the batch: all of them until rows stop and are dropped.
            int[] live = IntStream.range(0, rows).toArray();
            int active = record(next, live, generated, stopped, ended, stops, promptIndexes, request);
            for (int produced = 1; produced < maxNew && active > 0; produced++) {
                if (shapes.dropsFinishedRows() && active <= live.length * 3 / 4) {
                    // A row that ended would be computed to the end of the batch for nothing. Dropping rows copies the
                    // cache, so it waits until a quarter of them stopped: at most a few copies per batch.
                    int[] kept = new int[active];
                    long[] keptNext = new long[active];
                    int[] keptLive = new int[active];
                    for (int i = 0, k = 0; i < live.length; i++) {
                        if (!ended[live[i]]) {
                            kept[k] = i;
                            keptNext[k] = next[i];
                            keptLive[k++] = live[i];
                        }
                    }
                    state.keepRows(kept);
                    next = keptNext;
                    live = keptLive;
                    constants.keepRows(batch, live);
                }
                int slot = promptLength + produced - 1;
                try (TensorScope scope = ops.openScope()) {
                    Step step = new Step(
                            ops.constant(next, live.length, 1),
                            ops.constant(batch.positions(slot, live), live.length, 1),
                            constants.slots(slot, slot + 1),
                            constants.slots(0, shapes.attendWholeCache() ? capacity : slot + 1),
                            constants.padding,
                            model.cosTable(), model.sinTable(), false);
                    next = ops.readLongs(runStep("decode", step, state, live.length, false).getFirst());
                }
                active = record(next, live, generated, stopped, ended, stops, promptIndexes, request);
            }
        }
        int vocab = config.vocabSize();
        List<Generation> out = new ArrayList<>(rows);
        for (int row = 0; row < rows; row++) {
            int[] tokens = generated.get(row).stream().mapToInt(Integer::intValue).toArray();
            out.add(new Generation(tokens, stopped[row], Arrays.copyOfRange(firstLogits, row * vocab, (row + 1) * vocab)));
        }
        return out;
    }

    /**
     * One step over {@code state} as a program: the logits' argmax per row, with the first step's float32 logits
     * before it when {@code withLogits}; the new state is adopted before this returns.
     */
    private List<Tensor> runStep(String key, Step step, DecodeState state, int rows, boolean withLogits) {
        List<LayerState> like = state.states();
        List<Tensor> inputs = new ArrayList<>(step.tensors());
        inputs.addAll(state.tensors());
        int stepInputs = step.tensors().size();
        TensorOps head = ops.forHead(); // where the logits are made and the ids chosen
        List<Tensor> outputs = ops.step(key, inputs, in -> {
            Transformer.Output output = transformer.forward(ops, step.with(in),
                    DecodeState.unflatten(like, in.subList(stepInputs, in.size())), ResidualHook.NONE);
            Tensor logits = head.reshape(output.logits(), rows, -1);
            List<Tensor> results = new ArrayList<>();
            if (withLogits) {
                results.add(head.cast(logits, DType.F32));
            }
            results.add(head.argmax(logits, -1));
            results.addAll(DecodeState.flatten(output.states()));
            return results;
        });
        int read = withLogits ? 2 : 1;
        state.adopt(DecodeState.unflatten(like, outputs.subList(read, outputs.size())));
        return outputs.subList(0, read);
    }

    /**
     * Appends each still-running row's token and tells the listener; returns how many rows still run. {@code next}
     * holds a token for each row of {@code live} (batch row indexes). A row ends on a stop token ({@code stopped})
     * or when the request's stop condition settles it ({@code ended} alone).
     */
    private static int record(long[] next, int[] live, List<List<Integer>> generated, boolean[] stopped,
                              boolean[] ended, Set<Long> stops, int[] promptIndexes, DecodeRequest request) {
        int active = 0;
        int reported = 0;
        int[] prompts = new int[next.length];
        int[] tokens = new int[next.length];
        StopCondition settled = request.settled();
        for (int i = 0; i < next.length; i++) {
            int row = live[i];
            if (ended[row]) {
                continue;
            }
            List<Integer> rowTokens = generated.get(row);
            rowTokens.add((int) next[i]);
            prompts[reported] = promptIndexes[row];
            tokens[reported++] = (int) next[i];
            if (stops.contains(next[i])) {
                stopped[row] = true;
                ended[row] = true;
            } else if (settled != StopCondition.NONE && rowTokens.size() < request.maxNewTokens()
                    && settled.settled(promptIndexes[row], rowTokens.stream().mapToInt(Integer::intValue).toArray())) {
                // (A row at the length limit ends anyway: not asked.)
                ended[row] = true;
            } else {
                active++;
            }
        }
        if (request.listener() != TokenListener.NONE) {
            request.listener().onTokens(Arrays.copyOf(prompts, reported), Arrays.copyOf(tokens, reported));
        }
        return active;
    }

    /** The step that feeds a padded batch's slots {@code from..length-1} (all of them from 0). */
    private Step step(PaddedBatch batch, int from, Tensor querySlots, Tensor keySlots, Tensor padding) {
        int count = batch.length() - from;
        return new Step(
                ops.constant(batch.tokens(from), batch.rows(), count),
                ops.constant(batch.positions(from, count), batch.rows(), count),
                querySlots, keySlots, padding, model.cosTable(), model.sinTable(), false);
    }

    /**
     * How many leading tokens every prompt of a batch shares, to be computed once for the batch ({@link
     * #spreadPrefix}), or 0. The prompts of an abliteration or an evaluation all start with the chat template's system
     * turn (about a third of each demo-model prompt), which every row used to compute again. Each row keeps at least
     * one token of its own, so the pass still ends on every row's last token. Not for a compiling backend (a program
     * per prefix length, {@link ShapePolicy#sharesPromptPrefixes}) nor for state other than attention's: a convolution
     * window would have to end at each row's own last prefix slot.
     */
    private int sharedPrefix(List<int[]> prompts) {
        if (!shapes.sharesPromptPrefixes() || prompts.size() < 2 || !attentionOnly) {
            return 0;
        }
        int[] first = prompts.getFirst();
        int limit = prompts.stream().mapToInt(p -> p.length).min().orElseThrow() - 1;
        int shared = 0;
        while (shared < limit && sameAt(prompts, first[shared], shared)) {
            shared++;
        }
        return shared >= SHARED_PREFIX_MIN ? shared : 0;
    }

    private static boolean sameAt(List<int[]> prompts, int token, int at) {
        for (int[] prompt : prompts) {
            if (prompt[at] != token) {
                return false;
            }
        }
        return true;
    }

    /**
     * The state of a left-padded batch whose rows begin with the first {@code shared} tokens of {@code prompt}: those
     * computed once, as a batch of one, then placed after each row's padding in a cache of {@code capacity} slots.
     * A row's prefix sits at its own slots, positions 0.. as everywhere, so the steps after it are what they are
     * without sharing.
     */
    private DecodeState spreadPrefix(int[] prompt, int shared, PaddedBatch batch, long capacity) {
        try (DecodeState prefix = DecodeState.allocate(ops, transformer.weights().layout(), 1, shared,
                transformer.computeDtype())) {
            try (TensorScope scope = ops.openScope()) {
                long[] slots = range(shared);
                Tensor slotTensor = ops.constant(slots, shared);
                Step step = new Step(ops.constant(Arrays.stream(prompt, 0, shared).asLongStream().toArray(), 1, shared),
                        ops.constant(slots, 1, shared), slotTensor, slotTensor, ops.constant(new long[] {0}, 1),
                        model.cosTable(), model.sinTable(), false);
                runStep("prefix", step, prefix, 1, false);
            }
            return DecodeState.spread(ops, prefix, batch.padding(), capacity);
        }
    }

    /**
     * Index sets of prompts to run together: longest first, so each batch holds similar lengths and pads little.
     */
    static List<int[]> chunksByLength(List<int[]> prompts, int batchSize) {
        if (batchSize < 1) {
            throw new IllegalArgumentException("batchSize must be at least 1, got " + batchSize);
        }
        int[] order = IntStream.range(0, prompts.size()).boxed()
                .sorted(Comparator.comparingInt((Integer i) -> prompts.get(i).length).reversed())
                .mapToInt(Integer::intValue).toArray();
        List<int[]> chunks = new ArrayList<>();
        for (int from = 0; from < order.length; from += batchSize) {
            chunks.add(Arrays.copyOfRange(order, from, Math.min(order.length, from + batchSize)));
        }
        return chunks;
    }

    private static long[] range(long count) {
        return LongStream.range(0, count).toArray();
    }

    /**
     * What every step of one decode batch shares, placed once: the slot numbers {@code 0..capacity-1} (steps take
     * slices) and each row's padding.
     */
    private final class BatchConstants implements AutoCloseable {
        private final Tensor slots;
        private Tensor padding;

        BatchConstants(long capacity, PaddedBatch batch) {
            try (TensorScope scope = ops.openScope()) {
                slots = ops.retain(ops.constant(range(capacity), capacity));
                padding = ops.retain(ops.constant(batch.padding(), batch.rows()));
            }
        }

        /** Keeps the padding of the batch's rows {@code live} only, in that order. */
        void keepRows(PaddedBatch batch, int[] live) {
            long[] all = batch.padding();
            try (TensorScope scope = ops.openScope()) {
                Tensor kept = ops.retain(ops.constant(Arrays.stream(live).mapToLong(row -> all[row]).toArray(),
                        live.length));
                ops.release(padding);
                padding = kept;
            }
        }

        Tensor slots(long from, long to) {
            return from == 0 && to == slots.size(0) ? slots : ops.slice(slots, 0, from, to);
        }

        @Override
        public void close() {
            ops.release(slots);
            ops.release(padding);
        }
    }

    @Override
    public void close() {
        if (workers != null) {
            workers.shutdownNow();
        }
    }
}
