package dev.crucible.torch.train;

import dev.crucible.api.train.OptimizerSettings;
import java.util.List;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.javacpp.PointerScope;

/**
 * AdamW over float32 parameters, with the arithmetic of {@code torch.optim.AdamW} (single-tensor path) and the
 * global-norm clipping of {@code torch.nn.utils.clip_grad_norm_}:
 * <pre>
 *   g   = g · min(1, maxNorm / (‖all g‖₂ + 1e-6))
 *   p   = p · (1 − lr·λ)                        (decoupled weight decay; matrices only)
 *   m   = m + (1 − β₁)(g − m)                   (torch's lerp form of β₁m + (1 − β₁)g)
 *   v   = β₂v + (1 − β₂)g²
 *   p   = p − (lr / (1 − β₁ᵗ)) · m / (√v / √(1 − β₂ᵗ) + ε)
 * </pre>
 * Moments live on the parameters' device; gradients are cleared after each step.
 */
final class AdamW {

    private final OptimizerSettings settings;
    private final List<Parameter> parameters;
    private long steps;

    AdamW(OptimizerSettings settings, List<Parameter> parameters) {
        this.settings = settings;
        this.parameters = List.copyOf(parameters);
    }

    long steps() {
        return steps;
    }

    void restoreSteps(long completed) {
        steps = completed;
    }

    /** One update; returns the global gradient norm before clipping (0 when nothing has a gradient). */
    double step(double learningRate) {
        try (PointerScope scope = new PointerScope()) {
            new NoGradGuard();
            double sumOfSquares = 0;
            for (Parameter parameter : parameters) {
                org.bytedeco.pytorch.Tensor grad = parameter.value().grad();
                if (grad.defined()) {
                    double norm = grad.norm().item_double();
                    sumOfSquares += norm * norm;
                }
            }
            double totalNorm = Math.sqrt(sumOfSquares);
            double clip = settings.maxGradNorm() > 0 ? settings.maxGradNorm() / (totalNorm + 1e-6) : 1.0;

            steps++;
            double bias1 = 1 - Math.pow(settings.beta1(), steps);
            double bias2 = 1 - Math.pow(settings.beta2(), steps);
            double stepSize = learningRate / bias1;
            Scalar biasRoot = new Scalar(Math.sqrt(bias2));
            for (Parameter parameter : parameters) {
                org.bytedeco.pytorch.Tensor value = parameter.value();
                org.bytedeco.pytorch.Tensor grad = value.grad();
                if (!grad.defined()) {
                    continue;
                }
                if (clip < 1.0) {
                    grad.mul_(new Scalar(clip));
                }
                if (settings.weightDecay() > 0 && parameter.decays()) {
                    value.mul_(new Scalar(1 - learningRate * settings.weightDecay()));
                }
                parameter.firstMoment().lerp_(grad, new Scalar(1 - settings.beta1()));
                parameter.secondMoment().mul_(new Scalar(settings.beta2()))
                        .addcmul_(grad, grad, new Scalar(1 - settings.beta2()));
                org.bytedeco.pytorch.Tensor denominator = parameter.secondMoment().sqrt().div(biasRoot)
                        .add_(new Scalar(settings.epsilon()));
                value.addcdiv_(parameter.firstMoment(), denominator, new Scalar(-stepSize));
                grad.zero_();
            }
            return totalNorm;
        }
    }

    /** Clears gradients without stepping (a batch that was abandoned). */
    void zeroGrad() {
        try (PointerScope scope = new PointerScope()) {
            for (Parameter parameter : parameters) {
                org.bytedeco.pytorch.Tensor grad = parameter.value().grad();
                if (grad.defined()) {
                    grad.zero_();
                }
            }
        }
    }
}
