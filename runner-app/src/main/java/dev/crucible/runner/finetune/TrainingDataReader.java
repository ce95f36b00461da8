package dev.crucible.runner.finetune;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.crucible.api.UserInputException;
import dev.crucible.runner.text.BoundedLineReader;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads a JSONL training file, one row per non-blank line, in any of the formats fine-tuning tools accept:
 * <ul>
 *   <li>{@code {"messages": [{"role": "system"|"user"|"assistant", "content": "..."}, ...]}}, multi-turn, at least
 *       one assistant message;</li>
 *   <li>{@code {"prompt": "...", "completion": "..."}}: a {@link PromptCompletion}, one user turn and the
 *       assistant's answer on a chat model, the two concatenated as plain text on a model without a template;</li>
 *   <li>{@code {"instruction": "...", "input": "..." (optional), "output": "..."}}: the same, the prompt being the
 *       instruction followed by a blank line and the input when there is one, the completion the output (in plain
 *       text a blank line separates the two);</li>
 *   <li>and, for base models, {@code {"text": "..."}}: plain text, trained on every token ({@link PlainText}).</li>
 * </ul>
 * Other fields (such as {@code lang}) are allowed and ignored. A row that fits none of these is an error naming
 * {@code FILE:LINE} and what is wrong.
 */
public final class TrainingDataReader {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Set<String> ROLES = Set.of("system", "user", "assistant");

    private TrainingDataReader() {
    }

    /** Rows longer than {@link BoundedLineReader#ROW_CHARS} are refused as they are read, before they fill memory. */
    public static List<TrainingRow> read(Path file) {
        List<TrainingRow> rows = new ArrayList<>();
        try (BoundedLineReader reader = BoundedLineReader.open(file, BoundedLineReader.ROW_CHARS)) {
            String line;
            while ((line = reader.readLine()) != null) {
                if (!line.isBlank()) {
                    rows.add(parse(line, file.getFileName() + ":" + reader.lineNumber()));
                }
            }
        } catch (BoundedLineReader.LineTooLongException e) {
            throw new UserInputException(String.format(java.util.Locale.ROOT, "%s:%d: the row is longer than %,d"
                    + " characters, the most a training row may have", file.getFileName(), e.line(), e.maxChars()));
        } catch (CharacterCodingException e) {
            throw new UserInputException("training data " + file + " is not UTF-8 text; save it as UTF-8");
        } catch (NoSuchFileException e) {
            throw new UserInputException("training data " + file + " does not exist");
        } catch (IOException e) {
            throw new UserInputException("cannot read training data " + file + ": " + e.getMessage());
        }
        if (rows.isEmpty()) {
            throw new UserInputException("training data " + file + " has no rows");
        }
        return rows;
    }

    /** One JSON line; {@code source} is {@code FILE:LINE}. */
    public static TrainingRow parse(String line, String source) {
        JsonNode row;
        try {
            row = JSON.readTree(line);
        } catch (JsonProcessingException e) {
            throw new UserInputException(source + ": not valid JSON (" + e.getOriginalMessage().lines().findFirst()
                    .orElse("") + ")");
        }
        if (row == null || !row.isObject()) {
            throw new UserInputException(source + ": expected a JSON object per line");
        }
        if (row.has("messages")) {
            return new Conversation(messages(row.get("messages"), source), source);
        }
        if (row.has("prompt") || row.has("completion")) {
            return new PromptCompletion(text(row, "prompt", source), text(row, "completion", source), "", source);
        }
        if (row.has("instruction") || row.has("output")) {
            String instruction = text(row, "instruction", source);
            JsonNode input = row.get("input");
            if (input != null && !input.isNull() && !input.isTextual()) {
                throw new UserInputException(source + ": \"input\" must be a string");
            }
            String user = input == null || input.isNull() || input.asText().isEmpty()
                    ? instruction : instruction + "\n\n" + input.asText();
            return new PromptCompletion(user, text(row, "output", source), "\n\n", source);
        }
        if (row.has("text")) {
            return new PlainText(text(row, "text", source), source);
        }
        throw new UserInputException(source + ": a row needs \"messages\", or \"prompt\" and \"completion\", or "
                + "\"instruction\" and \"output\", or \"text\"; found " + fieldNames(row));
    }

    private static List<Map<String, String>> messages(JsonNode node, String source) {
        if (!node.isArray() || node.isEmpty()) {
            throw new UserInputException(source + ": \"messages\" must be a non-empty array");
        }
        List<Map<String, String>> messages = new ArrayList<>();
        boolean answered = false;
        for (int i = 0; i < node.size(); i++) {
            JsonNode message = node.get(i);
            String where = source + ": messages[" + i + "]";
            if (!message.isObject()) {
                throw new UserInputException(where + " is not an object with \"role\" and \"content\"");
            }
            JsonNode role = message.get("role");
            JsonNode content = message.get("content");
            if (role == null || !role.isTextual() || !ROLES.contains(role.asText())) {
                throw new UserInputException(where + ": \"role\" must be system, user or assistant, got "
                        + (role == null ? "nothing" : role));
            }
            if (content == null || !content.isTextual()) {
                throw new UserInputException(where + ": \"content\" must be a string");
            }
            answered |= role.asText().equals("assistant");
            messages.add(Conversation.message(role.asText(), content.asText()));
        }
        if (!answered) {
            throw new UserInputException(source + ": no assistant message, so nothing to learn");
        }
        return messages;
    }

    private static String text(JsonNode row, String field, String source) {
        JsonNode value = row.get(field);
        if (value == null || !value.isTextual()) {
            throw new UserInputException(source + ": \"" + field + "\" must be a string"
                    + (value == null ? " and is missing" : ""));
        }
        return value.asText();
    }

    private static String fieldNames(JsonNode row) {
        List<String> names = new ArrayList<>();
        row.fieldNames().forEachRemaining(names::add);
        return names.isEmpty() ? "an empty object" : String.join(", ", names);
    }
}
