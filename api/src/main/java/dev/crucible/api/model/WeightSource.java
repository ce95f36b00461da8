package dev.crucible.api.model;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.layout.Parameter;
import dev.crucible.api.tensor.QuantizedTensor;
import dev.crucible.api.tensor.Tensor;
import java.util.function.Function;

/** Where {@link TransformerWeights#bind} gets its tensors: a backend places checkpoint tensors on its device. */
public interface WeightSource {

    boolean contains(String name);

    /** The shape of {@code name} as stored, without placing it. */
    long[] shape(String name);

    /** {@code parameter} placed where the backend computes, in its compute dtype. */
    Tensor load(Parameter parameter);

    /**
     * The projection weight {@code parameter} placed quantized, or null when it is placed dense by {@link #load}
     * (the default).
     */
    default QuantizedTensor loadQuantized(Parameter parameter) {
        return null;
    }

    /**
     * {@link #loadQuantized(Parameter)} with the values of the stored tensor {@code valuesFrom}: a tied output head,
     * quantized as {@code parameter} (its name decides the format) from the embedding it shares.
     */
    default QuantizedTensor loadQuantized(Parameter parameter, String valuesFrom) {
        return valuesFrom.equals(parameter.name()) ? loadQuantized(parameter) : null;
    }

    /** The tensors of {@code checkpoint}, by name and stored shape, each placed dense by {@code place} when it is loaded. */
    static WeightSource of(Checkpoint checkpoint, Function<String, Tensor> place) {
        return new WeightSource() {
            @Override
            public boolean contains(String name) {
                return checkpoint.contains(name);
            }

            @Override
            public long[] shape(String name) {
                return checkpoint.info(name).shape();
            }

            @Override
            public Tensor load(Parameter parameter) {
                return place.apply(parameter.name());
            }
        };
    }
}
