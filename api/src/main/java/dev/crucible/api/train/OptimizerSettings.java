package dev.crucible.api.train;

/**
 * AdamW as {@code torch.optim.AdamW} defines it (decoupled weight decay, bias-corrected moments), with global
 * gradient-norm clipping before each step as {@code torch.nn.utils.clip_grad_norm_} does it.
 *
 * @param weightDecay  decoupled decay, applied to matrices only (biases and norm weights are not decayed, as
 *                     transformers' Trainer groups them)
 * @param maxGradNorm  clip the global L2 norm of all gradients to this; 0 or less turns clipping off
 */
public record OptimizerSettings(double beta1, double beta2, double epsilon, double weightDecay, double maxGradNorm) {
    public OptimizerSettings {
        if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1)) {
            throw new IllegalArgumentException("betas must be in [0, 1), got " + beta1 + ", " + beta2);
        }
        if (!(epsilon > 0)) {
            throw new IllegalArgumentException("epsilon must be positive, got " + epsilon);
        }
        if (!(weightDecay >= 0)) {
            throw new IllegalArgumentException("weight decay must be >= 0, got " + weightDecay);
        }
    }

    /** transformers' Trainer defaults: betas 0.9/0.999, eps 1e-8, no weight decay, clip at 1.0. */
    public static OptimizerSettings defaults() {
        return new OptimizerSettings(0.9, 0.999, 1e-8, 0.0, 1.0);
    }

    public OptimizerSettings withWeightDecay(double decay) {
        return new OptimizerSettings(beta1, beta2, epsilon, decay, maxGradNorm);
    }

    public OptimizerSettings withMaxGradNorm(double norm) {
        return new OptimizerSettings(beta1, beta2, epsilon, weightDecay, norm);
    }
}
