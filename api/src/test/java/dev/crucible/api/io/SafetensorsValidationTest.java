package dev.crucible.api.io;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every malformed header is one clear line naming the file, never a crash, an OOM or a wrong read. */
class SafetensorsValidationTest {

    @TempDir
    Path dir;

    private static final String X_OK = "\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";

    @Test
    void fileShorterThanEightBytes() throws IOException {
        Path file = dir.resolve("short.safetensors");
        Files.write(file, new byte[] {1, 2, 3});
        assertRejected(file, "fewer than the 8-byte header length");
    }

    @Test
    void headerLongerThanTheFile() throws IOException {
        Path file = dir.resolve("trunc.safetensors");
        Files.write(file, concat(lengthPrefix(1000), "{}".getBytes()));
        assertRejected(file, "larger than the file");
    }

    @Test
    void absurdHeaderLengthIsRejectedBeforeAnyAllocation() throws IOException {
        Path huge = dir.resolve("huge.safetensors");
        Files.write(huge, concat(lengthPrefix(200_000_000L), "{}".getBytes()));
        assertRejected(huge, "exceeds the 100000000-byte limit");
        Path negative = dir.resolve("neg.safetensors");
        Files.write(negative, concat(lengthPrefix(-1L), "{}".getBytes()));
        assertRejected(negative, "18446744073709551615");
    }

    @Test
    void headerThatIsNotJson() {
        assertRejected(write("{\"x\":", new byte[0]), "not valid JSON");
        assertRejected(write("{} trailing", new byte[0]), "not valid JSON");
    }

    @Test
    void headerThatIsNotAnObject() {
        assertRejected(write("[1,2]", new byte[0]), "not a JSON object");
    }

    @Test
    void headerThatIsNotUtf8() {
        Path file = TestFiles.write(dir.resolve("latin1.safetensors"),
                new byte[] {'{', '"', (byte) 0xE9, '"', ':', '1', '}'}, new byte[0]);
        assertRejected(file, "not valid UTF-8");
    }

    @Test
    void duplicateTensorNames() {
        assertRejected(write("{" + X_OK + "," + X_OK + "}", new byte[8]), "not valid JSON");
    }

    @Test
    void unknownDtype() {
        assertRejected(write("{\"x\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", new byte[8]),
                "dtype 'F64', which Crucible does not read");
        assertRejected(write("{\"x\":{\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]}}", new byte[8]),
                "dtype 'f32'");
    }

    @Test
    void negativeDimension() {
        assertRejected(write("{\"x\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", new byte[8]),
                "negative shape entry -2");
    }

    @Test
    void nonIntegerOrMissingFields() {
        assertRejected(write("{\"x\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", new byte[8]),
                "not a 64-bit integer");
        assertRejected(write("{\"x\":{\"dtype\":\"F32\",\"shape\":[2]}}", new byte[8]), "no data_offsets array");
        assertRejected(write("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", new byte[8]),
                "expected 2");
        assertRejected(write("{\"x\":[]}", new byte[8]), "not a JSON object with dtype");
    }

    @Test
    void startAfterEnd() {
        assertRejected(write("{\"x\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", new byte[8]),
                "start after end");
    }

    @Test
    void offsetsOutsideTheDataSection() {
        assertRejected(write("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", new byte[8]),
                "outside the data section of 8 bytes");
    }

    @Test
    void overlappingTensors() {
        assertRejected(write("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                + "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", new byte[12]),
                "'x' and 'y' overlap");
    }

    @Test
    void byteLengthDifferentFromShapeTimesDtype() {
        assertRejected(write("{\"x\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,8]}}", new byte[8]),
                "BF16[2] (4 bytes) but its data_offsets [0, 8] span 8 bytes");
    }

    @Test
    void shapeWhoseSizeOverflows() {
        assertRejected(write("{\"x\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
                + "\"data_offsets\":[0,8]}}", new byte[8]), "overflows");
    }

    /** The reference implementation requires the tensors to tile the data section; so do we. */
    @Test
    void holesBetweenOrAfterTensors() {
        assertRejected(write("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                + "\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", new byte[12]),
                "data bytes [4, 8) before tensor 'y' belong to no tensor");
        assertRejected(write("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", new byte[12]),
                "data bytes [4, 12) at the end belong to no tensor");
    }

    @Test
    void metadataMustBeStrings() {
        assertRejected(write("{\"__metadata__\":{\"epoch\":3}," + X_OK + "}", new byte[8]),
                "__metadata__ value for 'epoch' is not a string");
        assertRejected(write("{\"__metadata__\":[]," + X_OK + "}", new byte[8]), "__metadata__ is not");
    }

    @Test
    void namesFromTheFileStayOnOneLine() {
        assertRejected(write("{\"a\\nb\":{\"dtype\":\"Q9\",\"shape\":[1],\"data_offsets\":[0,8]}}", new byte[8]),
                "tensor 'a b'");
    }

    private Path write(String header, byte[] data) {
        return TestFiles.write(dir.resolve("t" + System.nanoTime() + ".safetensors"), header, data);
    }

    private static void assertRejected(Path file, String expected) {
        UserInputException e = assertThrows(UserInputException.class, () -> SafetensorsFile.open(file).close());
        String message = e.getMessage();
        assertTrue(message.startsWith(file.toString() + ": invalid safetensors file: "), message);
        assertTrue(message.contains(expected), "expected '" + expected + "' in: " + message);
        assertFalse(message.contains("\n") || message.contains("\r"), message);
    }

    private static byte[] lengthPrefix(long length) {
        return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(length).array();
    }

    private static byte[] concat(byte[] a, byte[] b) {
        return SafetensorsFileTest.concat(a, b);
    }
}
