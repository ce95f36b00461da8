package dev.crucible.accelerator.xla.lower;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.accelerator.xla.exec.CompileOnlyExecutor;
import dev.crucible.accelerator.xla.exec.TensorSpec;
import dev.crucible.accelerator.xla.testing.GoldenFixture;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.api.tensor.DType;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The programs of a quantized model, as the lowering writes them: projection weights are s8 or u8 arguments (no
 * dense copy of them), and the program converts them. int8 per-channel converts the codes into the
 * {@code dot_general} and scales its output; int4 gathers the codes' levels from the codebook by the u8 bytes.
 */
class QuantizedLoweringTest {
    private static final String Q_PROJ = "model.layers.0.self_attn.q_proj.weight";

    static LoweredProgram decodeStep(String method) {
        GoldenFixture fixture = GoldenFixture.load("tiny-qwen3");
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory())) {
            List<LoweredProgram> programs = ModelLowering.lower(fixture.config(), checkpoint, DType.BF16,
                    QuantizationConfig.parse(method, null, null, null, false), Sharding.SINGLE,
                    new ModelLowering.Shape(2, 8, 4), new CompileOnlyExecutor("none", 1, program -> Optional.empty()));
            return programs.stream().filter(p -> p.name().equals("decode_step")).findFirst().orElseThrow();
        }
    }

    /** The {@code %argN} of the argument named {@code name}, checked to be of {@code dtype} and {@code shape}. */
    private static String argument(LoweredProgram program, String name, DType dtype, long... shape) {
        List<TensorSpec> arguments = program.arguments();
        for (int i = 0; i < arguments.size(); i++) {
            TensorSpec spec = arguments.get(i);
            if (spec.name().equals(name)) {
                assertEquals(dtype, spec.dtype(), name);
                assertEquals(Arrays.toString(shape), Arrays.toString(spec.shape()), name);
                return "%arg" + i;
            }
        }
        throw new AssertionError("no argument " + name + " among " + arguments);
    }

    /** The value the one line {@code pattern} matches defines (its {@code %N}). */
    private static String defined(String text, String pattern) {
        Matcher matcher = Pattern.compile("(%\\d+) = " + pattern).matcher(text);
        assertTrue(matcher.find(), "no line " + pattern + " in\n" + text);
        String value = matcher.group(1);
        assertFalse(matcher.find(), "two lines " + pattern);
        return value;
    }

    @Test
    void int8PerChannelConvertsTheS8CodesIntoTheDotGeneralAndScalesItsOutput() {
        LoweredProgram step = decodeStep("int8");
        String text = step.program().stablehlo();
        String codes = argument(step, Q_PROJ + ".qdata", DType.I8, 128, 64);
        String scales = argument(step, Q_PROJ + ".scales", DType.F32, 128, 1);
        assertTrue(step.arguments().stream().noneMatch(a -> a.name().equals(Q_PROJ)), "no dense copy of the weight");
        assertTrue(text.contains(codes + ": tensor<128x64xi8>"), "an s8 parameter");
        String converted = defined(text, Pattern.quote("stablehlo.convert " + codes
                + " : (tensor<128x64xi8>) -> tensor<128x64xbf16>"));
        String product = defined(text, "stablehlo.dot_general %\\d+, " + Pattern.quote(converted)
                + ", contracting_dims = \\[2\\] x \\[1\\] : \\(tensor<2x1x64xbf16>, tensor<128x64xbf16>\\) -> "
                + Pattern.quote("tensor<2x1x128xf32>"));
        String perChannel = defined(text, Pattern.quote("stablehlo.reshape " + scales
                + " : (tensor<128x1xf32>) -> tensor<128xf32>"));
        String spread = defined(text, Pattern.quote("stablehlo.broadcast_in_dim " + perChannel
                + ", dims = [2] : (tensor<128xf32>) -> tensor<2x1x128xf32>"));
        defined(text, Pattern.quote("stablehlo.multiply " + product + ", " + spread + " : tensor<2x1x128xf32>"));
        long s8 = step.arguments().stream().filter(a -> a.dtype() == DType.I8).count();
        assertEquals(3 * 7, s8, "every projection of the three layers is an s8 argument");
    }

    @Test
    void int4GathersTheLevelsOfTheU8CodesFromTheCodebook() {
        LoweredProgram step = decodeStep("int4");
        String text = step.program().stablehlo();
        String codes = argument(step, Q_PROJ + ".qdata", DType.U8, 128, 32);
        String codebook = argument(step, "int4_codebook", DType.F32, 256, 2);
        assertTrue(text.contains(codes + ": tensor<128x32xui8>"), "a u8 parameter");
        String indices = defined(text, Pattern.quote("stablehlo.convert " + codes
                + " : (tensor<128x32xui8>) -> tensor<128x32xi32>"));
        defined(text, Pattern.quote("\"stablehlo.gather\"(" + codebook + ", " + indices + ")") + ".*"
                + Pattern.quote("(tensor<256x2xf32>, tensor<128x32xi32>) -> tensor<128x32x2xf32>"));
        assertFalse(text.contains("tensor<128x32xi64>"), "no weight-sized i64 array");
        assertEquals(3 * 7, step.arguments().stream().filter(a -> a.dtype() == DType.U8).count());
    }

    @Test
    void aDenseModelHasNoIntegerWeights() {
        LoweredProgram step = decodeStep("none");
        argument(step, Q_PROJ, DType.BF16, 128, 64);
        assertTrue(step.arguments().stream().noneMatch(a -> a.dtype() == DType.I8 || a.dtype() == DType.U8));
    }
}
