package dev.crucible.accelerator.xla;

import dev.crucible.accelerator.xla.exec.OutOfDeviceMemoryException;
import dev.crucible.accelerator.xla.lower.BatchPlanner;
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
import dev.crucible.api.model.TokenListener;
import java.io.PrintStream;
import java.util.List;
import java.util.function.IntFunction;

/**
 * A model placed on the devices of an XLA runtime: the backend-neutral {@link PlacedModel} over {@link XlaOps} and the
 * {@link ModelRunner} that steps it with static shapes (every decode step attends over the whole fixed KV window, so
 * the step compiles once). Batches are sized from the devices' memory; a batch that still runs out of it is halved
 * and the request run again, and the size that worked is said on stderr.
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
        this.runner = new ModelRunner(ops, placed, true);
        this.notes = notes;
    }

    /** Places {@code request}'s checkpoint on {@code environment}'s devices, split as it decides for this model. */
    static XlaModel place(XlaEnvironment environment, ShardRequest request, PrintStream notes) {
        Sharding sharding = environment.sharding(request.config(), request.dtype());
        XlaOps ops = new XlaOps(environment.executor(), sharding);
        try {
            PlacedModel placed = PlacedModel.place(request.config(), request.checkpoint(),
                    new XlaPlacement(ops, request.dtype()));
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

    /** The ops this model is traced with (its programs, their compiles, its executor). */
    public XlaOps ops() {
        return ops;
    }

    ForwardResult forward(ForwardRequest request) {
        List<int[]> prompts = request.prompts();
        return withFittingBatches(request.batchSize(), prompts, 0, true,
                batch -> runner.forward(request, batch));
    }

    DecodeResult decode(DecodeRequest request) {
        List<int[]> prompts = request.prompts();
        // Tokens a listener saw cannot be taken back, so a streamed request is not run twice.
        boolean retry = request.listener() == TokenListener.NONE;
        return withFittingBatches(request.batchSize(), prompts, request.maxNewTokens(), retry,
                batch -> runner.decode(request, batch));
    }

    private <T> T withFittingBatches(int requested, List<int[]> prompts, int newTokens, boolean retry,
                                     IntFunction<T> run) {
        int batch = requested > 0 ? requested : plannedBatch(prompts, newTokens);
        while (true) {
            try {
                T result = run.apply(batch);
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
