package dev.crucible.api.train;

import dev.crucible.api.tensor.HostTensor;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A training session's resumable state on the host: optimizer steps taken and, per trainable parameter, its value
 * and AdamW's first and second moments, named {@code param/NAME}, {@code exp_avg/NAME} and
 * {@code exp_avg_sq/NAME}.
 */
public record TrainerState(long completedSteps, Map<String, HostTensor> tensors) {

    public static final String PARAMETER = "param/";
    public static final String FIRST_MOMENT = "exp_avg/";
    public static final String SECOND_MOMENT = "exp_avg_sq/";

    public TrainerState {
        if (completedSteps < 0) {
            throw new IllegalArgumentException("completedSteps must be >= 0, got " + completedSteps);
        }
        tensors = Collections.unmodifiableMap(new LinkedHashMap<>(tensors));
    }
}
