package dev.crucible.torch.train;

import java.util.Objects;

/**
 * One trainable float32 tensor with its AdamW moments, all owned by the training session.
 *
 * @param name   the checkpoint name (full training) or {@code <module>.lora_A.weight} / {@code lora_B}
 * @param decays whether weight decay applies (matrices yes; norm weights and biases no)
 */
record Parameter(String name, org.bytedeco.pytorch.Tensor value, org.bytedeco.pytorch.Tensor firstMoment,
                 org.bytedeco.pytorch.Tensor secondMoment, boolean decays) {
    Parameter {
        Objects.requireNonNull(name, "name is null");
        Objects.requireNonNull(value, "value is null");
        Objects.requireNonNull(firstMoment, "firstMoment is null");
        Objects.requireNonNull(secondMoment, "secondMoment is null");
    }
}
