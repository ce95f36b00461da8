package dev.crucible.runner.abliterate.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import java.util.List;
import org.junit.jupiter.api.Test;

class ByteSizeTest {

    @Test
    void parsesSizesTheWayTransformersDoes() {
        assertEquals(5_000_000_000L, ByteSize.parse("5GB", "x"));
        assertEquals(5L << 30, ByteSize.parse("5GiB", "x"));
        assertEquals(500_000_000L, ByteSize.parse("500MB", "x"));
        assertEquals(200L << 10, ByteSize.parse("200KiB", "x"));
        assertEquals(3L << 20, ByteSize.parse("3mib", "x"), "units ignore case");
        assertEquals(5_000_000_000L / 8, ByteSize.parse("5Gb", "x"), "a lower-case b means bits");
        assertEquals(2_000_000_000_000L, ByteSize.parse("2TB", "x"));
        assertEquals(1234, ByteSize.parse(" 1234 ", "x"));
    }

    @Test
    void rejectsWhatIsNoSize() {
        for (String bad : List.of("", "GB", "5 XB", "-5GB", "0", "1.5GB", "99999999999999999999GB", "20000000TB")) {
            UserInputException e = assertThrows(UserInputException.class, () -> ByteSize.parse(bad, "max_shard_size"),
                    bad);
            assertTrue(e.getMessage().startsWith("max_shard_size"), e.getMessage());
        }
    }

    @Test
    void formatsTheShortestExactForm() {
        assertEquals("5GB", ByteSize.format(5_000_000_000L));
        assertEquals("2GiB", ByteSize.format(2L << 30));
        assertEquals("1KiB", ByteSize.format(1024));
        assertEquals("1234", ByteSize.format(1234));
        for (long bytes : List.of(5_000_000_000L, 2L << 30, 1234L, 3L << 20, 750_000L)) {
            assertEquals(bytes, ByteSize.parse(ByteSize.format(bytes), "x"));
        }
    }
}
