package dev.crucible.runner.prompts;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import java.util.List;
import java.util.Optional;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class SplitSliceTest {

    private static final List<Integer> TEN = IntStream.range(0, 10).boxed().toList();

    @Test
    void slicesFollowPythonSemantics() {
        assertEquals(List.of(0, 1, 2, 3), SplitSlice.parse("train[:4]").apply(TEN));
        assertEquals(List.of(3, 4), SplitSlice.parse("test[3:5]").apply(TEN));
        assertEquals(List.of(7, 8, 9), SplitSlice.parse("train[-3:]").apply(TEN));
        assertEquals(List.of(0, 1, 2, 3, 4, 5, 6), SplitSlice.parse("[:-3]").apply(TEN));
        assertEquals(List.of(8), SplitSlice.parse("[-2:-1]").apply(TEN));
        assertEquals(TEN, SplitSlice.parse("[:400]").apply(TEN), "stop past the end is clamped");
        assertEquals(TEN, SplitSlice.parse("[-400:]").apply(TEN), "start before the beginning is clamped");
        assertEquals(List.of(), SplitSlice.parse("[5:2]").apply(TEN));
        assertEquals(List.of(), SplitSlice.parse("[20:]").apply(TEN));
        assertEquals(TEN, SplitSlice.parse("train").apply(TEN));
        assertEquals(TEN, SplitSlice.parse("[:]").apply(TEN));
    }

    @Test
    void parsesSplitNameAndBounds() {
        SplitSlice slice = SplitSlice.parse(" test[100:200] ");
        assertEquals(Optional.of("test"), slice.split());
        assertEquals(100, slice.start().getAsInt());
        assertEquals(200, slice.stop().getAsInt());
        assertEquals("test[100:200]", slice.toString());
        assertEquals("[:400]", SplitSlice.parse("[:400]").toString());
        assertEquals(Optional.empty(), SplitSlice.parse("").split());
        assertTrue(SplitSlice.parse("train[-50:]").hasSlice());
    }

    @Test
    void rejectsWhatIsNotASlice() {
        for (String bad : List.of("train[4]", "train[::2]", "train[a:b]", "train[:4", "train]", "tr ain[:4]",
                "train[:99999999999]")) {
            assertThrows(UserInputException.class, () -> SplitSlice.parse(bad), bad);
        }
    }
}
