package dev.crucible.runner.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.train.TrainingMethod;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class MethodChoiceTest {
    private static final long GIB = 1L << 30;
    private static final Function<TrainingMethod, Optional<String>> EVERYTHING = method -> Optional.empty();
    private static final Function<TrainingMethod, Optional<String>> NO_QLORA = method -> method == TrainingMethod.QLORA
            ? Optional.of("4-bit kernels are CUDA-only on this backend") : Optional.empty();

    @Test
    void autoIsLoraWhileBf16WeightsFitAndQloraWhenTheyDoNot() {
        MethodChoice fits = MethodChoice.choose(Optional.empty(), 8 * GIB, OptionalLong.of(16 * GIB), "tpu:0", EVERYTHING);
        assertEquals(TrainingMethod.LORA, fits.method());
        assertEquals("the frozen weights (8.0 GiB in bf16) fit in 16.0 GiB of tpu:0", fits.reason());
        MethodChoice tight = MethodChoice.choose(Optional.empty(), 14 * GIB, OptionalLong.of(16 * GIB), "cuda:0", EVERYTHING);
        assertEquals(TrainingMethod.QLORA, tight.method(), "14 GiB leave too little of 16 for activations");
        assertTrue(tight.reason().startsWith("the frozen weights (14.0 GiB in bf16) do not fit in 16.0 GiB of cuda:0; "
                + "a 4-bit NF4 base needs about 3.7 GiB"), tight.reason());
    }

    @Test
    void unknownMemoryMeansLora() {
        MethodChoice choice = MethodChoice.choose(Optional.empty(), GIB, OptionalLong.empty(), "xpu:0", EVERYTHING);
        assertEquals(TrainingMethod.LORA, choice.method());
        assertTrue(choice.reason().contains("unknown"));
    }

    @Test
    void aMethodTheBackendCannotRunExitsWithItsReason() {
        UserInputException forced = assertThrows(UserInputException.class, () -> MethodChoice.choose(
                Optional.of(TrainingMethod.QLORA), GIB, OptionalLong.of(16 * GIB), "tpu:0", NO_QLORA));
        assertEquals("--method qlora cannot run on tpu:0: 4-bit kernels are CUDA-only on this backend",
                forced.getMessage());
        UserInputException tooBig = assertThrows(UserInputException.class, () -> MethodChoice.choose(
                Optional.empty(), 30 * GIB, OptionalLong.of(16 * GIB), "tpu:0", NO_QLORA));
        assertTrue(tooBig.getMessage().contains("do not fit") && tooBig.getMessage().contains("CUDA-only"));
        assertEquals(TrainingMethod.FULL, MethodChoice.choose(Optional.of(TrainingMethod.FULL), 30 * GIB,
                OptionalLong.of(GIB), "cpu:0", NO_QLORA).method(), "an explicit method is not second-guessed");
    }
}
