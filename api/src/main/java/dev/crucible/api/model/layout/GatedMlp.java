package dev.crucible.api.model.layout;

import java.util.List;
import java.util.Objects;

/**
 * The gated MLP: {@code down(act(gate(x)) · up(x))}, SiLU (SwiGLU) or the tanh-approximated GELU (GeGLU, Gemma),
 * with gate and up as two projections or as one fused projection whose output is split (views, no copies of the
 * weight).
 *
 * @param gate   null when fused
 * @param up     null when fused
 * @param gateUp null unless gate and up are one projection, gate rows first (Phi-3's {@code gate_up_proj})
 */
public record GatedMlp(Linear gate, Linear up, Linear down, Linear gateUp, Activation activation) implements Block {

    /** The gate's activation, as config.json's {@code hidden_act}/{@code hidden_activation} names it. */
    public enum Activation {
        /** {@code silu} (or {@code swish}). */
        SILU("silu"),
        /** {@code gelu_pytorch_tanh}: GELU in its tanh approximation. */
        GELU_TANH("gelu_pytorch_tanh");

        private final String configName;

        Activation(String configName) {
            this.configName = configName;
        }

        /** Its name in config.json. */
        public String configName() {
            return configName;
        }
    }

    public GatedMlp {
        Objects.requireNonNull(down, "down is null");
        Objects.requireNonNull(activation, "activation is null");
        if ((gateUp == null) == (gate == null || up == null) || (gate == null) != (up == null)) {
            throw new IllegalArgumentException("a gated MLP has gate and up, or gate_up, not both");
        }
    }

    /** SwiGLU with gate and up as two projections. */
    public GatedMlp(Linear gate, Linear up, Linear down) {
        this(Objects.requireNonNull(gate, "gate is null"), Objects.requireNonNull(up, "up is null"), down, null,
                Activation.SILU);
    }

    /** Gate and up as one projection, gate rows first. */
    public static GatedMlp fused(Linear gateUp, Linear down, Activation activation) {
        return new GatedMlp(null, null, down, Objects.requireNonNull(gateUp, "gateUp is null"), activation);
    }

    /** The inner width: what the gate and up projections each produce. */
    public long intermediate() {
        return down.in();
    }

    @Override
    public List<Linear> linears() {
        return gateUp != null ? List.of(gateUp, down) : List.of(gate, up, down);
    }

    @Override
    public boolean stateful() {
        return false;
    }
}
