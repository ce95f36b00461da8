package dev.crucible.runner.prompts;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.runner.text.BoundedLineReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PromptLoaderTest {

    @TempDir
    Path dir;

    private List<String> load(String spec) {
        return PromptLoader.load(PromptSourceSpec.parse(spec), dir, Map.of());
    }

    private String error(String spec) {
        return assertThrows(UserInputException.class, () -> load(spec)).getMessage();
    }

    private void write(String name, String text) throws IOException {
        Files.writeString(dir.resolve(name), text, StandardCharsets.UTF_8);
    }

    @Test
    void textFilesGiveOnePromptPerNonBlankLine() throws IOException {
        write("p.txt", "\uFEFFone\r\n\r\n  \ntwo\nthree  \n\nfour\n");
        assertEquals(List.of("one", "two", "three  ", "four"), load("p.txt"));
        assertEquals(List.of("one", "two"), load("p.txt[:2]"));
        assertEquals(List.of("two", "three  "), load("p.txt[1:3]"));
        assertEquals(List.of("four"), load("p.txt[-1:]"));
    }

    @Test
    void prefixAndSuffixWrapEveryPrompt() throws IOException {
        write("p.txt", "a\nb\n");
        PromptSourceSpec spec = PromptSourceSpec.parse("p.txt").with("good_prompts", "prefix", "<<")
                .with("good_prompts", "suffix", ">>");
        assertEquals(List.of("<<a>>", "<<b>>"), PromptLoader.load(spec, dir, Map.of()));
    }

    @Test
    void missingFileNamesThePath() {
        String message = error("nowhere/prompts.txt");
        assertTrue(message.contains("'nowhere/prompts.txt' does not exist"), message);
        assertTrue(message.contains(dir.resolve("nowhere/prompts.txt").toString()), message);
        assertTrue(error("harmful.csv:text").contains("does not exist"));
        assertTrue(error("bad\u0000name.txt").contains("is not a valid path"));
    }

    @Test
    void emptySetsAreErrorsNamingTheSource() throws IOException {
        write("blank.txt", "\n   \n\n");
        String message = error("blank.txt");
        assertTrue(message.contains("prompt set 'blank.txt' is empty"), message);
        write("three.txt", "a\nb\nc\n");
        String sliced = error("three.txt[5:]");
        assertTrue(sliced.contains("'three.txt[5:]' is empty") && sliced.contains("none of its 3 prompts"), sliced);
    }

    @Test
    void textFilesHaveNoColumnsAndSingleFilesNoSplits() throws IOException {
        write("p.txt", "a\n");
        assertTrue(error("p.txt:text").contains("has no column 'text'"));
        assertTrue(error("p.txt@train[:1]").contains("single file"));
    }

    @Test
    void jsonLinesWithChosenAndDefaultColumns() throws IOException {
        write("rows.jsonl", """
                {"id": 1, "text": "alpha", "prompt": "first"}

                {"id": 2, "text": null, "prompt": "second"}
                {"id": 3, "prompt": "third", "text": "gamma"}
                """);
        assertEquals(List.of("alpha", "gamma"), load("rows.jsonl"), "text is the default; null rows are skipped");
        assertEquals(List.of("first", "second", "third"), load("rows.jsonl:prompt"));
        assertEquals(List.of("third"), load("rows.jsonl:prompt[-1:]"));
        String missing = error("rows.jsonl:promt");
        assertTrue(missing.contains("no column 'promt'") && missing.contains("did you mean 'prompt'"), missing);
        assertTrue(error("rows.jsonl:id").contains("rows.jsonl:1: column 'id' holds a number, not text"));
    }

    @Test
    void jsonLinesErrorsCarryTheLineNumber() throws IOException {
        write("broken.jsonl", "{\"text\": \"ok\"}\n{\"text\": oops}\n");
        String message = error("broken.jsonl");
        assertTrue(message.startsWith("broken.jsonl:2: not valid JSON"), message);
        assertTrue(!message.contains("\n"), "one line");
    }

    @Test
    void severalColumnsWithoutTextAskForOne() throws IOException {
        write("rows.jsonl", "{\"a\": \"x\", \"b\": \"y\"}\n");
        String message = error("rows.jsonl");
        assertTrue(message.contains("several columns (a, b)") && message.contains("rows.jsonl:a"), message);
        write("single.jsonl", "{\"question\": \"x\"}\n{\"question\": \"y\"}\n");
        assertEquals(List.of("x", "y"), load("single.jsonl"), "the only column needs no name");
    }

    @Test
    void jsonArraysOfObjectsOrStrings() throws IOException {
        write("objects.json", "[{\"text\": \"a\"}, {\"text\": \"b\"}, {\"other\": 1}]");
        assertEquals(List.of("a", "b"), load("objects.json"));
        write("strings.json", "[\"x\", \"\", \"y\"]");
        assertEquals(List.of("x", "y"), load("strings.json"));
        write("lines.json", "{\"text\": \"l1\"}\n{\"text\": \"l2\"}\n");
        assertEquals(List.of("l1", "l2"), load("lines.json"), "JSON Lines under a .json name");
    }

    @Test
    void csvFollowsRfc4180Quoting() throws IOException {
        write("rows.csv", "\uFEFFid,prompt,note\r\n"
                + "1,plain,x\r\n"
                + "2,\"with, comma\",x\r\n"
                + "3,\"with \"\"quotes\"\"\",x\r\n"
                + "4,\"two\r\nlines\",x\r\n"
                + "5,,x\r\n"
                + "\r\n"
                + "6,last,x\r\n");
        assertEquals(List.of("plain", "with, comma", "with \"quotes\"", "two\r\nlines", "last"),
                load("rows.csv:prompt"));
        assertEquals(List.of("with \"quotes\"", "two\r\nlines"), load("rows.csv:prompt[2:4]"));
        assertTrue(error("rows.csv").contains("several columns (id, prompt, note)"));
    }

    @Test
    void csvWithATextColumnAndTsv() throws IOException {
        write("rows.csv", "text,label\nhello,1\n\"bye, then\",0\n");
        assertEquals(List.of("hello", "bye, then"), load("rows.csv"));
        write("rows.tsv", "goal\ttarget\nsay hi\tok\n\"quoted\ttab\"\tok\n");
        assertEquals(List.of("say hi", "quoted\ttab"), load("rows.tsv:goal"));
    }

    @Test
    void malformedCsvIsOneLineWithTheLine() throws IOException {
        write("bad.csv", "text\nfine\n\"never closed\n");
        String message = error("bad.csv");
        assertTrue(message.startsWith("bad.csv:"), message);
        assertTrue(message.contains("not valid CSV"), message);
        assertTrue(!message.contains("\n"), "one line: " + message);
    }

    @Test
    void unknownExtensionsAndNonUtf8AreRefused() throws IOException {
        write("p.docx", "x");
        assertTrue(error("p.docx").contains("cannot tell the format"));
        Files.write(dir.resolve("latin1.txt"), new byte[] {'c', 'a', 'f', (byte) 0xE9, '\n'});
        assertTrue(error("latin1.txt").contains("not UTF-8"));
    }

    @Test
    void bundledSetsComeFromTheClasspath() {
        assertEquals(List.of("first stand-in prompt", "second stand-in prompt", "third stand-in prompt"),
                load("bundled:standin/train"));
        assertEquals(List.of("third stand-in prompt"), load("bundled:standin/train[-1:]"));
        String message = error("bundled:nothing/here");
        assertTrue(message.contains("no bundled prompt set 'nothing/here'"), message);
        assertTrue(error("bundled:standin/train:text").contains("no column"));
    }

    @Test
    void theShippedSetsLoadWithTheMethodsCounts() {
        assertEquals(400, load("bundled:harmful/train[:400]").size());
        assertEquals(400, load("bundled:harmless/train[:400]").size());
        assertEquals(100, load("bundled:harmful/test[:100]").size());
        assertEquals(100, load("bundled:harmless/test[:100]").size());
    }

    /** A prompt one character longer than any prompt may be. */
    private static final String TOO_LONG = "x".repeat(BoundedLineReader.PROMPT_CHARS + 1);

    @Test
    void aLineLongerThanAnyPromptFailsNamingFileAndLine() throws IOException {
        // 50 MB on one line: refused once the bound is read, never read whole (it stalled the tokenizer).
        try (var out = Files.newBufferedWriter(dir.resolve("huge.txt"))) {
            out.write("fine\n");
            for (int i = 0; i < 50; i++) {
                out.write("y".repeat(1_000_000));
            }
            out.write("\n");
        }
        String message = error("huge.txt");
        assertTrue(message.startsWith("huge.txt:2: the line is longer than 1,048,576 characters"), message);
        write("max.txt", "x".repeat(BoundedLineReader.PROMPT_CHARS) + "\n");
        assertEquals(BoundedLineReader.PROMPT_CHARS, load("max.txt").getFirst().length(), "the bound itself is a prompt");
    }

    @Test
    void aValueLongerThanAnyPromptFailsInEveryTableFormat() throws IOException {
        write("rows.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"" + TOO_LONG + "\"}\n");
        String jsonl = error("rows.jsonl");
        assertTrue(jsonl.startsWith("rows.jsonl:2: the prompt is 1,048,577 characters, more than the 1,048,576"), jsonl);
        write("rows.json", "[\"ok\", \"" + TOO_LONG + "\"]");
        assertTrue(error("rows.json").startsWith("rows.json element 1: the prompt is 1,048,577 characters"), error("rows.json"));
        write("rows.csv", "text,id\nok,1\n" + TOO_LONG + ",2\n");
        assertTrue(error("rows.csv").startsWith("'rows.csv' row 2: the prompt is 1,048,577 characters"), error("rows.csv"));
        ParquetTestFiles.write(dir.resolve("rows.parquet"), ParquetTestFiles.Options.plain(),
                List.of(new ParquetTestFiles.Column("text", List.of("ok", TOO_LONG), false, false)), List.of());
        String parquet = error("rows.parquet");
        assertTrue(parquet.startsWith("'rows.parquet' row 2: the prompt is 1,048,577 characters"), parquet);
    }

    @Test
    void otherColumnsMayBeLongerThanAPromptButNotEndless() throws IOException {
        String longAnswer = "z".repeat(2 * BoundedLineReader.PROMPT_CHARS);
        write("rows.jsonl", "{\"text\": \"short\", \"answer\": \"" + longAnswer + "\"}\n");
        assertEquals(List.of("short"), load("rows.jsonl"));
        write("rows.csv", "text,answer\nshort," + longAnswer + "\n");
        assertEquals(List.of("short"), load("rows.csv"));
        String endless = "w".repeat(BoundedLineReader.ROW_CHARS + 1);
        write("endless.jsonl", "{\"text\": \"short\", \"answer\": \"" + endless + "\"}\n");
        assertTrue(error("endless.jsonl").startsWith("endless.jsonl:1: the line is longer than 8,388,608 characters"),
                error("endless.jsonl"));
        write("endless.csv", "text,answer\nshort," + endless + "\n");
        assertTrue(error("endless.csv").contains("a value longer than 8,388,608 characters"), error("endless.csv"));
    }

    @Test
    void aSliceFromTheStartReadsOnlyTheLinesItNeeds() throws IOException {
        // Line 3 would be refused; [:2] never reaches it.
        write("p.txt", "one\ntwo\n" + TOO_LONG + "\n");
        assertEquals(List.of("one", "two"), load("p.txt[:2]"));
    }
}
