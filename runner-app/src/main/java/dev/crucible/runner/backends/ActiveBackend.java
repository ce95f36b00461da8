package dev.crucible.runner.backends;

import dev.crucible.api.backend.BackendEnvironment;
import dev.crucible.api.backend.Ceilings;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
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
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The chosen backend with the environment its set-up returned: the one place the runner holds a backend's
 * environment and model types, captured once, so everything after set-up hands each method exactly what that
 * backend made (no casts, no order to remember).
 */
public final class ActiveBackend<E extends BackendEnvironment, M extends DeviceModel> {

    private final HardwareBackend<E, M> backend;
    private final Probe probe;
    private final E environment;

    private ActiveBackend(HardwareBackend<E, M> backend, Probe probe, E environment) {
        this.backend = backend;
        this.probe = probe;
        this.environment = Objects.requireNonNull(environment, () -> "the " + backend.id()
                + " backend's setupEnvironment returned nothing");
    }

    /** Sets up {@code chosen} for {@code device}: before any device access or native runtime. */
    public static ActiveBackend<?, ?> setUp(ProbedBackend chosen, DeviceRequest device, OptionalInt threads) {
        return setUp(chosen.backend(), new SetupRequest(device, chosen.probe(), threads));
    }

    private static <E extends BackendEnvironment, M extends DeviceModel> ActiveBackend<E, M> setUp(
            HardwareBackend<E, M> backend, SetupRequest request) {
        return new ActiveBackend<>(backend, request.probe(), backend.setupEnvironment(request));
    }

    public String id() {
        return backend.id();
    }

    public Probe probe() {
        return probe;
    }

    public DType chooseDtype(DType checkpointDtype) {
        return backend.chooseDtype(checkpointDtype);
    }

    public Optional<String> trainingUnsupported(TrainingMethod method) {
        return backend.trainingUnsupported(method);
    }

    public TrainingSession startTraining(TrainingRequest request) {
        return backend.startTraining(environment, request);
    }

    public Map<String, String> runtimeDetails() {
        return backend.runtimeDetails(environment);
    }

    public String emptyCache() {
        return backend.emptyCache(environment);
    }

    /** Places a checkpoint on this backend; the result runs on it. */
    public LoadedModel shard(ShardRequest request) {
        return new Loaded(backend.shard(environment, request));
    }

    /** A model this backend placed, with the backend's compute methods bound to it. */
    public interface LoadedModel extends AutoCloseable {

        DeviceModel model();

        ForwardResult forward(ForwardRequest request);

        DecodeResult decode(DecodeRequest request);

        /** Adapters merged into the base weights of {@code base}, the checkpoint the model was placed from. */
        MergedWeights merge(Checkpoint base);

        /** This machine's ceilings as the model's ops run. */
        Ceilings measureCeilings(Duration budget);

        @Override
        void close();
    }

    private final class Loaded implements LoadedModel {
        private final M model;

        Loaded(M model) {
            this.model = Objects.requireNonNull(model, () -> "the " + backend.id() + " backend's shard returned nothing");
        }

        @Override
        public DeviceModel model() {
            return model;
        }

        @Override
        public ForwardResult forward(ForwardRequest request) {
            return backend.forward(model, request);
        }

        @Override
        public DecodeResult decode(DecodeRequest request) {
            return backend.decode(model, request);
        }

        @Override
        public MergedWeights merge(Checkpoint base) {
            return backend.merge(model, base);
        }

        @Override
        public Ceilings measureCeilings(Duration budget) {
            return backend.measureCeilings(model, budget);
        }

        @Override
        public void close() {
            model.close();
        }
    }
}
