package dev.crucible.torch;

import dev.crucible.torch.policy.LayerPlan;
import java.util.List;
import java.util.Objects;

/**
 * A {@link LayerPlan} over named libtorch devices: plan device i is {@code devices.get(i)}.
 *
 * @param devices libtorch device strings, e.g. {@code cuda:0}, {@code cuda:1}; at least as many as the plan uses
 * @param plan    where the embedding, each layer and the head go
 */
public record LayerSplit(List<String> devices, LayerPlan plan) {

    public LayerSplit {
        devices = List.copyOf(devices);
        Objects.requireNonNull(plan, "plan is null");
        if (plan.devicesUsed() > devices.size()) {
            throw new IllegalArgumentException("the plan uses " + plan.devicesUsed() + " devices, " + devices.size()
                    + " are named");
        }
        if (plan.embeddingDevice() != 0) {
            throw new IllegalArgumentException("the embedding goes on the plan's first device");
        }
    }
}
