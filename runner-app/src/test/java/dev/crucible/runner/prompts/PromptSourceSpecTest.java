package dev.crucible.runner.prompts;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class PromptSourceSpecTest {

    @Test
    void parsesEveryPartOfTheOneStringForm() {
        PromptSourceSpec spec = PromptSourceSpec.parse("hf:org/name:text@test[100:200]");
        assertEquals("hf:org/name", spec.source());
        assertEquals(Optional.of("text"), spec.column());
        assertEquals(Optional.of("test"), spec.split().split());
        assertEquals("[100:200]", spec.split().sliceText());
        assertEquals("hf:org/name:text@test[100:200]", spec.compact());
    }

    @Test
    void plainFilesAndColumns() {
        assertEquals("prompts.txt", PromptSourceSpec.parse("prompts.txt").source());
        PromptSourceSpec sliced = PromptSourceSpec.parse("data/prompts.txt[:400]");
        assertEquals("data/prompts.txt", sliced.source());
        assertEquals(Optional.empty(), sliced.split().split());
        assertEquals(400, sliced.split().stop().getAsInt());
        PromptSourceSpec csv = PromptSourceSpec.parse("data.csv:question[-50:]");
        assertEquals("data.csv", csv.source());
        assertEquals(Optional.of("question"), csv.column());
        assertEquals(-50, csv.split().start().getAsInt());
    }

    @Test
    void pathsThatLookLikeOtherPartsStayPaths() {
        assertEquals("notes@2024.txt", PromptSourceSpec.parse("notes@2024.txt").source(), "a dotted '@' tail is a name");
        assertEquals("C:\\data\\prompts.txt", PromptSourceSpec.parse("C:\\data\\prompts.txt").source());
        assertEquals(Optional.of("text"), PromptSourceSpec.parse("C:\\data\\rows.csv:text").column());
        assertEquals("bundled:harmful/test", PromptSourceSpec.parse("bundled:harmful/test[:100]").source());
        assertEquals("org/name", PromptSourceSpec.parse("org/name@train").source());
    }

    @Test
    void tableFormSpellsThePartsOut() {
        PromptSourceSpec spec = PromptSourceSpec.fromTable("good_prompts", Map.of("dataset", "org/name",
                "split", "train[:400]", "column", "prompt", "prefix", "Q: ", "suffix", " A:",
                "system_prompt", "Be terse.", "revision", "v1"));
        assertEquals("org/name:prompt@train[:400]", spec.compact());
        assertEquals("Q: hello A:", spec.dress("hello"));
        assertEquals(Optional.of("Be terse."), spec.systemPrompt());
        assertEquals(Optional.of("v1"), spec.revision());
        assertEquals(spec, PromptSourceSpec.fromTable("good_prompts", spec.toTable()), "toTable reads back");
    }

    @Test
    void tableErrorsNameTheKey() {
        UserInputException unknown = assertThrows(UserInputException.class,
                () -> PromptSourceSpec.fromTable("bad_prompts", Map.of("dataset", "x.txt", "colum", "text")));
        assertTrue(unknown.getMessage().contains("'bad_prompts.colum'"), unknown.getMessage());
        assertTrue(unknown.getMessage().contains("did you mean 'column'"), unknown.getMessage());
        UserInputException type = assertThrows(UserInputException.class,
                () -> PromptSourceSpec.fromTable("bad_prompts", Map.of("dataset", 3)));
        assertTrue(type.getMessage().contains("'bad_prompts.dataset' must be a string"), type.getMessage());
        UserInputException twice = assertThrows(UserInputException.class,
                () -> PromptSourceSpec.fromTable("bad_prompts", Map.of("dataset", "d.csv:a", "column", "b")));
        assertTrue(twice.getMessage().contains("column twice"), twice.getMessage());
        UserInputException missing = assertThrows(UserInputException.class,
                () -> PromptSourceSpec.fromTable("bad_prompts", Map.of("split", "train")));
        assertTrue(missing.getMessage().contains("needs dataset"), missing.getMessage());
    }

    @Test
    void replacingTheSourceKeepsTheDressing() {
        PromptSourceSpec fromFile = PromptSourceSpec.fromTable("good_prompts",
                Map.of("dataset", "a.txt", "prefix", "> ", "system_prompt", "S"));
        PromptSourceSpec replaced = fromFile.withSourceOf(PromptSourceSpec.parse("b.csv:q[:3]"));
        assertEquals("b.csv:q[:3]", replaced.compact());
        assertEquals("> ", replaced.prefix());
        assertEquals(Optional.of("S"), replaced.systemPrompt());
    }
}
