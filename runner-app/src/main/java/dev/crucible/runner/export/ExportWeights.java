package dev.crucible.runner.export;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.io.WritableTensor;
import dev.crucible.api.model.LoraFactors;
import dev.crucible.api.model.MergedWeights;
import dev.crucible.api.model.layout.ModelLayout;
import dev.crucible.runner.session.ModelSession;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The tensors a model leaves with: every tensor of the base checkpoint, in its order, under its name, shape and
 * stored dtype, the changed ones in place of the base's and every other one the base's bytes. A writer opens them
 * only once its target is checked; what it opens owns the host memory the values take until it is closed.
 */
@FunctionalInterface
public interface ExportWeights {
    Opened open();

    /** The tensors, valid until {@link #close()} runs {@code release}. */
    record Opened(List<WritableTensor> tensors, Runnable release) implements AutoCloseable {
        @Override
        public void close() {
            release.run();
        }
    }

    /** The session's model with its adapters as they are, merged by its backend ({@code W + scale·B·A}, rounded once). */
    static ExportWeights merged(ModelSession session) {
        return () -> {
            MergedWeights merged = session.merge();
            try {
                Checkpoint base = session.checkpoint();
                List<WritableTensor> tensors = new ArrayList<>();
                for (String name : base.names()) {
                    HostTensor replaced = merged.tensors().get(name);
                    tensors.add(WritableTensor.of(replaced != null ? replaced : base.tensor(name)));
                }
                return new Opened(tensors, merged::close);
            } catch (RuntimeException | Error e) {
                merged.close();
                throw e;
            }
        };
    }

    /** The session's model with {@code adapters} in place of any it had, merged: they are set when the weights are opened. */
    static ExportWeights merging(ModelSession session, Map<String, LoraFactors> adapters) {
        return () -> {
            session.model().zeroAdapters();
            adapters.forEach(session.model()::setAdapter);
            return merged(session).open();
        };
    }

    /**
     * The base's tensors with trained float32 values in place of those of the same name, rounded to each one's
     * stored dtype; a head stored although {@code layout} ties it to the embedding takes the trained embedding.
     */
    static ExportWeights replacing(Checkpoint base, ModelLayout layout, Map<String, HostTensor> trained) {
        return () -> {
            List<WritableTensor> tensors = new ArrayList<>();
            for (String name : base.names()) {
                HostTensor stored = base.tensor(name);
                HostTensor value = trained.get(name);
                if (value == null && layout.tiedHead() && name.equals(layout.outputHead().name())) {
                    value = trained.get(layout.embedding().name());
                }
                tensors.add(value == null ? WritableTensor.of(stored)
                        : WritableTensor.ofFloats(name, stored.dtype(), stored.shape(), value.toFloatArray()));
            }
            return new Opened(tensors, () -> { });
        };
    }
}
