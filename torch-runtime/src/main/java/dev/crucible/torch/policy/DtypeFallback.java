package dev.crucible.torch.policy;

import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.DType;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * {@code --dtype auto} on a GPU: the checkpoint's own dtype, then bfloat16 where the device computes it, then
 * float16, then float32, each placed and checked with a one-token generation; the first whose logits are all finite
 * is kept. Half precision overflows on some checkpoints (float16's range ends at 65504, and activations of models
 * trained in bfloat16 pass it), which a one-token check finds before a whole run produces nonsense.
 */
public final class DtypeFallback {

    private DtypeFallback() {
    }

    /**
     * The order candidates are tried in: {@code first} (the backend's choice for the checkpoint), then bfloat16,
     * float16 and float32, each once, bfloat16 left out where {@code bf16Native} is false.
     */
    public static List<DType> candidates(DType first, boolean bf16Native) {
        Set<DType> order = new LinkedHashSet<>();
        order.add(first);
        order.add(DType.BF16);
        order.add(DType.F16);
        order.add(DType.F32);
        if (!bf16Native) {
            order.remove(DType.BF16);
        }
        return List.copyOf(order);
    }

    /**
     * Places the model in each candidate until one passes {@code finite}; models that fail are closed before the next
     * is placed (two copies never share the device). {@code log} hears one line per rejected candidate.
     *
     * @param place  places the model in a dtype (may throw, e.g. out of memory: that ends the search)
     * @param finite whether the placed model's one-token logits are all finite
     */
    public static <M extends AutoCloseable> M choose(List<DType> candidates, Function<DType, M> place,
                                                     Predicate<M> finite, Consumer<String> log) {
        if (candidates.isEmpty()) {
            throw new IllegalArgumentException("no dtype to try");
        }
        List<DType> rejected = new ArrayList<>();
        for (DType dtype : candidates) {
            M model = place.apply(dtype);
            boolean ok;
            try {
                ok = finite.test(model);
            } catch (RuntimeException | Error e) {
                closeQuietly(model, e);
                throw e;
            }
            if (ok) {
                return model;
            }
            close(model);
            rejected.add(dtype);
            int next = candidates.indexOf(dtype) + 1;
            log.accept("the model's first token is not finite in " + dtype.userName()
                    + (next < candidates.size() ? "; trying " + candidates.get(next).userName() : ""));
        }
        throw new UserInputException("the model's first token is not finite in any dtype tried ("
                + rejected.stream().map(DType::userName).collect(Collectors.joining(", "))
                + "): the checkpoint's weights hold inf or nan");
    }

    /** Whether every value is finite (no inf, no nan). */
    public static boolean allFinite(float[] values) {
        for (float value : values) {
            if (!Float.isFinite(value)) {
                return false;
            }
        }
        return true;
    }

    private static void close(AutoCloseable model) {
        try {
            model.close();
        } catch (Exception e) {
            throw new IllegalStateException("closing a rejected model failed", e);
        }
    }

    private static void closeQuietly(AutoCloseable model, Throwable failure) {
        try {
            model.close();
        } catch (Exception e) {
            failure.addSuppressed(e);
        }
    }
}
