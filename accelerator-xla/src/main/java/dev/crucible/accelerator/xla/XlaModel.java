package dev.crucible.accelerator.xla;

import dev.crucible.accelerator.xla.exec.OutOfDeviceMemoryException;
import dev.crucible.accelerator.xla.lower.BatchPlanner;
import dev.crucible.accelerator.xla.lower.Buckets;
import dev.crucible.accelerator.xla.lower.Sharding;
import dev.crucible.accelerator.xla.lower.XlaOps;
import dev.crucible.accelerator.xla.lower.XlaPlacement;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DecodeResult;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.ForwardResult;
import dev.crucible.api.model.ModelRunner;
import dev.crucible.api.model.PlacedModel;
import dev.crucible.api.model.ShardRequest;
import dev.crucible.api.model.StopCondition;
import dev.crucible.api.model.TokenListener;
import dev.crucible.accelerator.xla.lower.Layout;
import dev.crucible.api.backend.Ceilings;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorScope;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.List;
import java.util.function.BiFunction;
import java.util.stream.IntStream;

/**
 * A model placed on the devices of an XLA runtime: the backend-neutral {@link PlacedModel} over {@link XlaOps} and the
 * {@link ModelRunner} that steps it at the shapes of {@link Buckets} (prompt and cache lengths bucketed, every decode
 * step over the whole fixed KV window, every batch of a request the same rows), so a request compiles a handful of
 * programs. Batches are sized from the devices' memory; a batch that still runs out of it is halved and the request
 * run again, and the size that worked is said on stderr.
 */
public final class XlaModel implements DeviceModel {
    private final XlaOps ops;
    private final PlacedModel placed;
    private final ModelRunner runner;
    private final PrintStream notes;
    /** The largest batch known not to fit, or 0: later requests start below it. */
    private int tooLarge;
    private boolean closed;

    private XlaModel(XlaOps ops, PlacedModel placed, PrintStream notes) {
        this.ops = ops;
        this.placed = placed;
        this.runner = new ModelRunner(ops, placed, Buckets.SHAPES);
        this.notes = notes;
    }

    /** Places {@code request}'s checkpoint on {@code environment}'s devices, split as it decides for this model. */
    static XlaModel place(XlaEnvironment environment, ShardRequest request, PrintStream notes) {
        Sharding sharding = environment.sharding(request.config(), request.dtype());
        XlaOps ops = new XlaOps(environment.executor(), sharding, environment.programs());
        try {
            PlacedModel placed = PlacedModel.place(request.config(), request.checkpoint(),
                    new XlaPlacement(ops, request.dtype(), request.quantization()));
            return new XlaModel(ops, placed, notes);
        } catch (RuntimeException | Error e) {
            ops.close();
            throw e;
        }
    }

    @Override
    public PlacedModel placed() {
        return placed;
    }

    @Override
    public List<String> quantizedKernels() {
        return placed.quantizedFormats().stream()
                .map(format -> format.describe() + ": " + XlaOps.describeKernels(format, placed.dtype())).toList();
    }

    /** The ops this model is traced with (its programs, their compiles, its executor). */
    public XlaOps ops() {
        return ops;
    }

    ForwardResult forward(ForwardRequest request) {
        List<int[]> prompts = request.prompts();
        return new ForwardResult(withFittingBatches(request.batchSize(), prompts, 0, true,
                (filled, rows) -> runner.forward(new ForwardRequest(filled, rows), rows).prompts()));
    }

    DecodeResult decode(DecodeRequest request) {
        List<int[]> prompts = request.prompts();
        // Tokens a listener saw cannot be taken back, so a streamed request is not run twice.
        boolean retry = request.listener() == TokenListener.NONE;
        TokenListener listener = request.listener() == TokenListener.NONE ? TokenListener.NONE
                : realRowsOnly(request.listener(), prompts.size());
        // The copies that fill the last batch end at once: their results are dropped.
        StopCondition settled = request.settled() == StopCondition.NONE ? StopCondition.NONE
                : (prompt, tokens) -> prompt >= prompts.size() || request.settled().settled(prompt, tokens);
        return new DecodeResult(withFittingBatches(request.batchSize(), prompts, request.maxNewTokens(), retry,
                (filled, rows) -> runner.decode(new DecodeRequest(filled, request.maxNewTokens(), request.stopTokens(),
                        request.padToken(), rows, listener, settled), rows).generations()));
    }

    /** {@code listener} told only of the request's own prompts, not of the copies that fill the last batch. */
    private static TokenListener realRowsOnly(TokenListener listener, int prompts) {
        return (indexes, tokens) -> {
            int[] real = IntStream.range(0, indexes.length).filter(i -> indexes[i] < prompts).toArray();
            if (real.length > 0) {
                listener.onTokens(IntStream.of(real).map(i -> indexes[i]).toArray(),
                        IntStream.of(real).map(i -> tokens[i]).toArray());
            }
        };
    }

    /**
     * Runs {@code prompts} in batches of equal rows (at most the size asked for or planned, halved while a batch runs
     * out of device memory): {@code run} gets the prompts filled to whole batches and the rows, and returns one
     * result per filled prompt, of which the request's own come back.
     */
    private <T> List<T> withFittingBatches(int requested, List<int[]> prompts, int newTokens, boolean retry,
                                           BiFunction<List<int[]>, Integer, List<T>> run) {
        if (prompts.isEmpty()) {
            return List.of();
        }
        int batch = requested > 0 ? requested : plannedBatch(prompts, newTokens);
        while (true) {
            try {
                int rows = Buckets.rows(prompts.size(), batch);
                List<T> result = List.copyOf(run.apply(Buckets.filled(prompts, rows), rows)
                        .subList(0, prompts.size()));
                if (tooLarge > 0 && batch < tooLarge) {
                    notes.println("xla: batches of " + batch + " prompts fit in device memory");
                }
                return result;
            } catch (OutOfDeviceMemoryException e) {
                if (!retry || batch == 1) {
                    throw e;
                }
                tooLarge = tooLarge == 0 ? batch : Math.min(tooLarge, batch);
                notes.println("xla: batches of " + batch + " prompts ran out of device memory; trying " + batch / 2);
                batch /= 2;
            }
        }
    }

    private int plannedBatch(List<int[]> prompts, int newTokens) {
        int longest = prompts.stream().mapToInt(p -> p.length).max().orElse(1);
        int planned = BatchPlanner.promptsPerBatch(placed.config(), placed.dtype(), ops.sharding().partitions(),
                ops.executor().deviceMemory(0), longest, newTokens, prompts.size());
        return tooLarge > 0 ? Math.min(planned, Math.max(1, tooLarge / 2)) : planned;
    }

    /**
     * This device's ceilings as the model's programs run: a square matrix product in the model's dtype, and a
     * matrix-vector product over a matrix far larger than any cache (what a decode step does with every weight: it
     * reads each element once for two operations, so memory bounds it). Sizes double until
     * one run takes a noticeable share of the budget; each is then run for about half of it. Under SPMD the arrays are
     * whole on every device, so the rates are one device's.
     */
    Ceilings measureCeilings(Duration budget) {
        double half = budget.toNanos() / 2.0;
        DType dtype = placed.dtype();
        long side = 256;
        Rate matmul;
        while (true) {
            long n = side;
            matmul = rate(half, () -> {
                Tensor a = random(dtype, 1, n, n);
                Tensor b = random(dtype, 2, n, n);
                return () -> ops.readLongs(ops.argmax(ops.matmul(a, b), -1));
            });
            if (matmul.secondsPerRun() * 1e9 > half / 8 || side >= 8192) {
                break;
            }
            side *= 2;
        }
        long rows = 1024;
        long columns = 4096;
        long deviceBytes = ops.executor().deviceMemory(0).orElse(Long.MAX_VALUE);
        Rate read;
        while (true) {
            long r = rows;
            read = rate(half, () -> {
                // Made on the device from one row, so the matrix is a program's output, not a constant to fold.
                Tensor big = ops.add(ops.zeros(dtype, r, columns), random(dtype, 3, 1, columns));
                Tensor vector = random(dtype, 4, 1, columns);
                ops.readLongs(ops.argmax(ops.slice(big, 0, 0, 1), -1));
                return () -> ops.readLongs(ops.argmax(ops.linear(vector, big, null), -1));
            });
            long bytes = rows * columns * dtype.byteSize();
            if (read.secondsPerRun() * 1e9 > half / 8 || 2 * bytes > deviceBytes / 4 || bytes >= 4L << 30) {
                break;
            }
            rows *= 2;
        }
        double flops = 2.0 * side * side * side;
        double bytes = (double) rows * columns * dtype.byteSize();
        String method = String.format(java.util.Locale.ROOT, "matmul %d² %s ×%d; matrix-vector over %.0f MiB ×%d, on %s",
                side, dtype.userName(), matmul.runs(), bytes / (1 << 20), read.runs(), ops.executor().platform());
        return new Ceilings(dtype, flops / matmul.secondsPerRun() / 1e9, bytes / read.secondsPerRun() / 1e9, method);
    }

    private record Rate(int runs, double secondsPerRun) { }

    /**
     * Runs what {@code setUp} returns once untimed (the compile), then for about {@code nanos}; each run in a scope of
     * its own, so its outputs are freed before the next.
     */
    private Rate rate(double nanos, java.util.function.Supplier<Runnable> setUp) {
        try (TensorScope scope = ops.openScope()) {
            Runnable run = setUp.get();
            Runnable scoped = () -> {
                try (TensorScope step = ops.openScope()) {
                    run.run();
                }
            };
            scoped.run();
            int runs = 0;
            long start = System.nanoTime();
            long now;
            do {
                scoped.run();
                runs++;
                now = System.nanoTime();
            } while (now - start < nanos && runs < 1000);
            return new Rate(runs, (now - start) / 1e9 / runs);
        }
    }

    private Tensor random(DType dtype, long seed, long rows, long columns) {
        java.util.Random random = new java.util.Random(seed);
        float[] values = new float[Math.toIntExact(rows * columns)];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) random.nextGaussian();
        }
        try (Arena arena = Arena.ofConfined()) {
            return ops.place(HostTensor.fromFloats("ceiling", DType.F32, new long[] {rows, columns}, values, arena),
                    dtype, Layout.REPLICATED);
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        runner.close();
        placed.close();
        ops.close();
    }
}
