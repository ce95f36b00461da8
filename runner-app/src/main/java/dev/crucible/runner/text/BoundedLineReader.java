package dev.crucible.runner.text;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Reads text line by line, as {@link java.io.BufferedReader#readLine()} does ({@code \n}, {@code \r} or
 * {@code \r\n} end a line; a leading byte order mark is dropped), but never holds more than a bound of one line:
 * a longer line fails as soon as its first character past the bound is read, so a 50 MB line costs 1 MB of
 * memory and no wait, and never reaches the tokenizer.
 */
public final class BoundedLineReader implements Closeable {

    /**
     * The longest prompt, in characters: a text-file line, a chat turn, one value of a table. A prompt must fit the
     * model's context, and the longest context of the architectures supported (Llama 3.1's 131,072 tokens) is about
     * 512 K characters of English at ~4 characters a token, so 1 M characters leaves room for any prompt a model can
     * take. It also bounds the tokenizer's work: the Hugging Face tokenizers take ~6 s and ~300 MB for a 1 M
     * character line without pre-tokenizer splits (measured on the demo model's tokenizer, a shared 2-core
     * machine), and grow faster than linearly past that (a 50 MB line ran past 150 s at 5.8 GB).
     */
    public static final int PROMPT_CHARS = 1 << 20;

    /**
     * The longest row of a JSON Lines file, in characters: a row carries other fields beside the prompt (a
     * dataset's answers, a fine-tuning row's whole conversation), and JSON escapes can make text up to six times
     * longer ({@code \u00e9} for é), so rows get eight times a prompt's bound.
     */
    public static final int ROW_CHARS = 8 * PROMPT_CHARS;

    private static final int BUFFER = 8192;

    private final Reader in;
    private final int maxChars;
    private final char[] buffer = new char[BUFFER];
    private int position;
    private int limit;
    private boolean afterCarriageReturn;
    private boolean started;
    private long lineNumber;

    /** @param maxChars the longest line accepted, terminator excluded */
    public BoundedLineReader(Reader in, int maxChars) {
        if (maxChars < 1) {
            throw new IllegalArgumentException("maxChars must be at least 1, got " + maxChars);
        }
        this.in = in;
        this.maxChars = maxChars;
    }

    /** A UTF-8 stream; bytes that are not UTF-8 fail the read with a {@link java.nio.charset.CharacterCodingException}. */
    public static BoundedLineReader utf8(InputStream in, int maxChars) {
        return new BoundedLineReader(new InputStreamReader(in, StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)), maxChars);
    }

    /** A UTF-8 file, as {@link #utf8(InputStream, int)}. */
    public static BoundedLineReader open(Path file, int maxChars) throws IOException {
        return utf8(Files.newInputStream(file), maxChars);
    }

    /**
     * The next line without its terminator, or null at the end of the input.
     *
     * @throws LineTooLongException when the line passes the bound; only the bound's worth of it was read, and
     *                              {@link #skipRestOfLine()} moves on to the next line
     */
    public String readLine() throws IOException {
        dropLineFeedOfCrLf();
        if (position == limit && !fill()) {
            return null;
        }
        StringBuilder line = new StringBuilder();
        while (position < limit || fill()) {
            int start = position;
            while (position < limit && buffer[position] != '\n' && buffer[position] != '\r') {
                position++;
            }
            append(line, start, position);
            if (position < limit) {
                endLine();
                return line.toString();
            }
        }
        lineNumber++;
        return line.toString();
    }

    /** Discards what is left of the line the last {@link LineTooLongException} interrupted, terminator included. */
    public void skipRestOfLine() throws IOException {
        while (position < limit || fill()) {
            if (buffer[position] == '\n' || buffer[position] == '\r') {
                afterCarriageReturn = buffer[position] == '\r';
                position++;
                return; // the line was counted when it was refused
            }
            position++;
        }
    }

    /** Consumes the terminator at {@code position}; a {@code \r} may be the first half of {@code \r\n}. */
    private void endLine() {
        afterCarriageReturn = buffer[position] == '\r';
        position++;
        lineNumber++;
    }

    private void dropLineFeedOfCrLf() throws IOException {
        if (afterCarriageReturn) {
            afterCarriageReturn = false;
            if ((position < limit || fill()) && buffer[position] == '\n') {
                position++;
            }
        }
    }

    /** Lines returned or refused so far: the number of the last one. */
    public long lineNumber() {
        return lineNumber;
    }

    private void append(StringBuilder line, int from, int to) throws LineTooLongException {
        if (line.length() + (to - from) > maxChars) {
            lineNumber++;
            throw new LineTooLongException(lineNumber, maxChars);
        }
        line.append(buffer, from, to - from);
    }

    /** Reads the next chunk, dropping a byte order mark at the very start; false at the end of the input. */
    private boolean fill() throws IOException {
        do {
            int read = in.read(buffer, 0, BUFFER);
            if (read < 0) {
                position = limit = 0;
                return false;
            }
            position = 0;
            limit = read;
            if (!started && read > 0) {
                started = true;
                if (buffer[0] == '\uFEFF') {
                    position = 1;
                }
            }
        } while (position == limit);
        return true;
    }

    @Override
    public void close() throws IOException {
        in.close();
    }

    /** A line longer than the reader's bound. */
    public static final class LineTooLongException extends IOException {
        private final long line;
        private final int maxChars;

        LineTooLongException(long line, int maxChars) {
            super("line " + line + " is longer than " + String.format(java.util.Locale.ROOT, "%,d", maxChars)
                    + " characters");
            this.line = line;
            this.maxChars = maxChars;
        }

        /** The line's number, from 1. */
        public long line() {
            return line;
        }

        public int maxChars() {
            return maxChars;
        }
    }
}
