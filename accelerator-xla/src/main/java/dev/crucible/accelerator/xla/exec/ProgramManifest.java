package dev.crucible.accelerator.xla.exec;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * What a program takes and returns, in order, as one device sees it (under SPMD, each device's slice), and which
 * arguments it donates: {@code donations} maps an argument index to the result that reuses its memory (the
 * program's {@code tf.aliasing_output}). A donated argument is consumed by every execution, so a KV cache passed in
 * and out stays on the device without a copy.
 */
public record ProgramManifest(List<TensorSpec> arguments, List<TensorSpec> results, Map<Integer, Integer> donations) {
    public ProgramManifest {
        arguments = List.copyOf(arguments);
        results = List.copyOf(results);
        donations = Map.copyOf(new TreeMap<>(donations));
        for (var donation : donations.entrySet()) {
            int argument = donation.getKey();
            int result = donation.getValue();
            Objects.checkIndex(argument, arguments.size());
            Objects.checkIndex(result, results.size());
            TensorSpec in = arguments.get(argument);
            TensorSpec out = results.get(result);
            if (!out.matches(in.dtype(), in.shape())) {
                throw new IllegalArgumentException("argument " + in + " is donated to result " + out
                        + " of another type or shape");
            }
        }
    }

    public ProgramManifest(List<TensorSpec> arguments, List<TensorSpec> results) {
        this(arguments, results, Map.of());
    }

    /** Checks one device's argument list against the manifest, naming the first mismatch. */
    void checkArguments(String program, List<? extends DeviceArray> list) {
        if (list.size() != arguments.size()) {
            throw new IllegalArgumentException(program + " takes " + arguments.size() + " arguments, got " + list.size());
        }
        for (int i = 0; i < list.size(); i++) {
            DeviceArray array = list.get(i);
            TensorSpec spec = arguments.get(i);
            if (!spec.matches(array.dtype(), array.shape())) {
                throw new IllegalArgumentException(program + " argument " + i + " is " + spec + ", got "
                        + array.dtype() + Arrays.toString(array.shape()));
            }
        }
    }
}
