package dev.crucible.runner.text;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.nio.charset.CharacterCodingException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class BoundedLineReaderTest {

    private static List<String> lines(String text, int max) throws IOException {
        List<String> out = new ArrayList<>();
        try (BoundedLineReader reader = new BoundedLineReader(new StringReader(text), max)) {
            for (String line; (line = reader.readLine()) != null; ) {
                out.add(line);
            }
        }
        return out;
    }

    @Test
    void splitsLinesAsBufferedReaderDoes() throws IOException {
        String text = "\uFEFFone\r\ntwo\rthree\n\nfour";
        assertEquals(new java.io.BufferedReader(new StringReader(text.substring(1))).lines().toList(), lines(text, 10));
        assertEquals(List.of("a", ""), lines("a\n\n", 10));
        assertEquals(List.of(), lines("", 10));
        // \r\n split across two reads of the underlying reader is still one terminator.
        String crlfAtBoundary = "x".repeat(8191) + "\r\nnext";
        assertEquals(List.of("x".repeat(8191), "next"), lines(crlfAtBoundary, 10_000));
    }

    @Test
    void anEndlessLineFailsAfterTheBoundWithoutReadingOn() throws IOException {
        CountingEndlessReader endless = new CountingEndlessReader();
        BoundedLineReader reader = new BoundedLineReader(endless, 1000);
        BoundedLineReader.LineTooLongException e = assertThrows(BoundedLineReader.LineTooLongException.class,
                reader::readLine);
        assertEquals(1, e.line());
        assertEquals(1000, e.maxChars());
        assertTrue(endless.read < 1000 + 2 * 8192, "read " + endless.read + " characters of an endless line");
    }

    @Test
    void theRestOfALongLineCanBeSkippedAndReadingGoesOn() throws IOException {
        String text = "short\n" + "y".repeat(50_000) + "\r\nafter\n";
        try (BoundedLineReader reader = new BoundedLineReader(new StringReader(text), 100)) {
            assertEquals("short", reader.readLine());
            BoundedLineReader.LineTooLongException e = assertThrows(BoundedLineReader.LineTooLongException.class,
                    reader::readLine);
            assertEquals(2, e.line());
            reader.skipRestOfLine();
            assertEquals("after", reader.readLine());
            assertEquals(3, reader.lineNumber());
            assertNull(reader.readLine());
        }
    }

    @Test
    void bytesThatAreNotUtf8Fail() {
        BoundedLineReader reader = BoundedLineReader.utf8(new ByteArrayInputStream(new byte[] {'o', 'k', (byte) 0xff, '\n'}), 100);
        assertThrows(CharacterCodingException.class, reader::readLine);
    }

    /** 'a' forever, counting what was read. */
    private static final class CountingEndlessReader extends Reader {
        long read;

        @Override
        public int read(char[] buffer, int offset, int length) {
            java.util.Arrays.fill(buffer, offset, offset + length, 'a');
            read += length;
            return length;
        }

        @Override
        public void close() {
        }
    }
}
