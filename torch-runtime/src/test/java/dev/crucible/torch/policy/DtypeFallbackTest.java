package dev.crucible.torch.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.DType;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class DtypeFallbackTest {

    /** A placed model on a fake device: which dtype it is in, whether its logits are finite, whether it was closed. */
    private static final class FakeModel implements AutoCloseable {
        final DType dtype;
        final boolean finite;
        boolean closed;

        FakeModel(DType dtype, boolean finite) {
            this.dtype = dtype;
            this.finite = finite;
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    /** Places fake models, recording the order, with the dtypes in {@code overflowing} giving non-finite logits. */
    private static final class FakeDevice {
        final Set<DType> overflowing;
        final List<FakeModel> placed = new ArrayList<>();
        final List<String> log = new ArrayList<>();

        FakeDevice(Set<DType> overflowing) {
            this.overflowing = overflowing;
        }

        FakeModel choose(List<DType> candidates) {
            return DtypeFallback.choose(candidates, dtype -> {
                placed.forEach(m -> assertTrue(m.closed, "a rejected model is closed before the next is placed"));
                FakeModel model = new FakeModel(dtype, !overflowing.contains(dtype));
                placed.add(model);
                return model;
            }, model -> model.finite, log::add);
        }
    }

    @Test
    void orderIsTheCheckpointsDtypeThenBf16ThenFp16ThenFp32() {
        assertEquals(List.of(DType.BF16, DType.F16, DType.F32), DtypeFallback.candidates(DType.BF16, true));
        assertEquals(List.of(DType.F16, DType.BF16, DType.F32), DtypeFallback.candidates(DType.F16, true));
        assertEquals(List.of(DType.F32, DType.BF16, DType.F16), DtypeFallback.candidates(DType.F32, true));
    }

    @Test
    void bf16IsLeftOutWhereTheDeviceDoesNotComputeIt() {
        assertEquals(List.of(DType.F16, DType.F32), DtypeFallback.candidates(DType.BF16, false));
        assertEquals(List.of(DType.F16, DType.F32), DtypeFallback.candidates(DType.F16, false));
    }

    @Test
    void theFirstCandidateWithFiniteLogitsIsKeptAndTheRejectedAreClosed() {
        FakeDevice device = new FakeDevice(Set.of(DType.F16));
        FakeModel kept = device.choose(DtypeFallback.candidates(DType.F16, false));
        assertEquals(DType.F32, kept.dtype);
        assertFalse(kept.closed);
        assertEquals(List.of(DType.F16, DType.F32), device.placed.stream().map(m -> m.dtype).toList());
        assertTrue(device.placed.getFirst().closed);
        assertEquals(List.of("the model's first token is not finite in float16; trying float32"), device.log);
    }

    @Test
    void aFiniteFirstCandidateIsPlacedOnce() {
        FakeDevice device = new FakeDevice(Set.of());
        assertEquals(DType.BF16, device.choose(DtypeFallback.candidates(DType.BF16, true)).dtype);
        assertEquals(1, device.placed.size());
        assertTrue(device.log.isEmpty());
    }

    @Test
    void nonFiniteInEveryDtypeIsTheCheckpointsFault() {
        FakeDevice device = new FakeDevice(Set.of(DType.BF16, DType.F16, DType.F32));
        UserInputException e = assertThrows(UserInputException.class,
                () -> device.choose(DtypeFallback.candidates(DType.BF16, true)));
        assertEquals("the model's first token is not finite in any dtype tried (bfloat16, float16, float32): the"
                + " checkpoint's weights hold inf or nan", e.getMessage());
        assertTrue(device.placed.stream().allMatch(m -> m.closed));
    }

    @Test
    void finiteMeansNoInfinityAndNoNan() {
        assertTrue(DtypeFallback.allFinite(new float[] {0, -1e30f, 65504}));
        assertFalse(DtypeFallback.allFinite(new float[] {0, Float.POSITIVE_INFINITY}));
        assertFalse(DtypeFallback.allFinite(new float[] {Float.NaN}));
    }
}
