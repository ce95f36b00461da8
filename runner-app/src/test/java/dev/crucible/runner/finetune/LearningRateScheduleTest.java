package dev.crucible.runner.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.crucible.api.UserInputException;
import org.junit.jupiter.api.Test;

class LearningRateScheduleTest {

    /** transformers' get_cosine_schedule_with_warmup(warmup=3, total=13) at lr 1e-3, computed by hand. */
    @Test
    void linearWarmupThenCosineToZero() {
        LearningRateSchedule schedule = LearningRateSchedule.of(1e-3, 0.2, 13);
        assertEquals(3, schedule.warmupSteps(), "ceil(0.2 * 13)");
        assertEquals(0.0, schedule.at(0), "the first step of a warm-up has rate 0, as in transformers");
        assertEquals(1e-3 / 3, schedule.at(1), 1e-15);
        assertEquals(2e-3 / 3, schedule.at(2), 1e-15);
        assertEquals(1e-3, schedule.at(3), 1e-15, "peak when warm-up ends");
        assertEquals(1e-3 * 0.5 * (1 + Math.cos(Math.PI * 5 / 10)), schedule.at(8), 1e-15, "half way down");
        assertEquals(1e-3 * 0.5 * (1 + Math.cos(Math.PI * 9 / 10)), schedule.at(12), 1e-15);
        for (int step = 4; step < 13; step++) {
            assertEquals(true, schedule.at(step) < schedule.at(step - 1), "decays monotonically");
        }
    }

    @Test
    void noWarmupStartsAtThePeak() {
        LearningRateSchedule schedule = LearningRateSchedule.of(2e-4, 0, 100);
        assertEquals(0, schedule.warmupSteps());
        assertEquals(2e-4, schedule.at(0));
        assertEquals(0.0, LearningRateSchedule.of(1, 0.03, 1).at(0), "a one-step run is all warm-up, as in transformers");
    }

    @Test
    void badSettingsAreUserErrors() {
        assertThrows(UserInputException.class, () -> LearningRateSchedule.of(0, 0.1, 10));
        assertThrows(UserInputException.class, () -> LearningRateSchedule.of(1e-4, 1.5, 10));
    }
}
