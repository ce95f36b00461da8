package dev.crucible.runner.units;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import java.util.List;
import org.junit.jupiter.api.Test;

class ByteSizeTest {
    private static final long GIB = 1L << 30;

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

    /** Moved from MethodChoiceTest when CRUCIBLE_DEVICE_MEMORY stopped having a parser of its own. */
    @Test
    void memoryOverridesParse() {
        assertEquals(16 * GIB, ByteSize.parse("16GiB", "CRUCIBLE_DEVICE_MEMORY"));
        assertEquals(24_000_000_000L, ByteSize.parse("24 GB", "CRUCIBLE_DEVICE_MEMORY"));
        assertEquals(512L << 20, ByteSize.parse("512MiB", "CRUCIBLE_DEVICE_MEMORY"));
        assertEquals(1234, ByteSize.parse("1234", "CRUCIBLE_DEVICE_MEMORY"));
        assertThrows(UserInputException.class, () -> ByteSize.parse("lots", "CRUCIBLE_DEVICE_MEMORY"));
    }

    /**
     * The whole-number forms that merge's --max-shard-size and CRUCIBLE_DEVICE_MEMORY read with parsers of their
     * own, and abliterate's did not: a bare B, units in any case, spaces between number and unit.
     */
    @Test
    void readsEveryWholeNumberFormTheOtherParsersRead() {
        assertEquals(64, ByteSize.parse("64B", "x"));
        assertEquals(64, ByteSize.parse("64 b", "x"), "a bare b is bytes: there is no unit for it to be bits of");
        assertEquals(5_000_000_000L, ByteSize.parse("5 GB", "x"));
        assertEquals(5_000_000_000L, ByteSize.parse(" 5gB ", "x"));
        assertEquals(3_000L, ByteSize.parse("3KB", "x"));
        assertEquals(7L << 10, ByteSize.parse("7kib", "x"));
        assertEquals(2L << 30, ByteSize.parse("2 GIB", "x"));
        assertEquals(1L << 40, ByteSize.parse("1TiB", "x"), "and terabytes, which they did not read");
    }

    /**
     * Where the old parsers disagreed, transformers decides (its max_shard_size is what the option is named after):
     * a fraction, which merge and CRUCIBLE_DEVICE_MEMORY took, is refused with the whole-number spelling to use, and
     * a lower-case b after a decimal unit is bits, which they read as bytes.
     */
    @Test
    void whereTheOldParsersDisagreedTransformersDecides() {
        for (String fraction : List.of("1.5GB", "0.5 GiB", ".5MB", "2.0")) {
            UserInputException e = assertThrows(UserInputException.class, () -> ByteSize.parse(fraction, "--max-shard-size"));
            assertEquals("--max-shard-size must be a whole number of bytes or of a unit, e.g. 1500MB rather than 1.5GB, got '"
                    + fraction + "'", e.getMessage());
        }
        assertEquals(5_000_000_000L / 8, ByteSize.parse("5gb", "x"));
        assertEquals(16_000_000_000L / 8, ByteSize.parse("16 gb", "x"));
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
