package dev.crucible.runner.finetune;

import dev.crucible.api.UserInputException;
import dev.crucible.api.train.TrainingBatch;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Renders, tokenizes and masks conversations ({@link AssistantSpans}), and applies {@code --max-len}.
 *
 * <p>Tokens are mapped to spans by tokenizing prefixes: a span starting at character s starts at token
 * {@code encode(text[0, s)).length} when those ids are a prefix of the whole text's ids, which holds whenever the
 * tokenizer does not merge across the boundary (chat templates put a special token or a newline there). When a
 * boundary does merge, the row is tokenized piece by piece instead (context, span, context, ...) so every token
 * is wholly inside or outside a span; such rows are counted.
 */
public final class ExampleEncoder {

    /** What to do with a row longer than {@code --max-len}. */
    public enum Overlong {
        /** Keep the first max-len tokens (dropped anyway when no assistant token is left). */
        TRUNCATE,
        DROP
    }

    /** Which tokens of a chat row the loss is taken on. */
    public enum LossOn {
        /** The assistant's messages (with their end-of-turn markers); everything else is context only. */
        ASSISTANT,
        /**
         * Every token after the first, prompts included: plain language modelling of the whole conversation (what
         * trl's SFTTrainer does by default). Useful when training from scratch, where the model must also learn
         * to read the prompts.
         */
        ALL
    }

    /** The encoded rows and what happened to the others. */
    public record Result(List<EncodedExample> examples, int rows, int truncated, int dropped, int tokenizedPiecewise) {
        public Result {
            examples = List.copyOf(examples);
        }

        public long tokens() {
            return examples.stream().mapToLong(EncodedExample::length).sum();
        }

        public long labelledTokens() {
            return examples.stream().mapToLong(EncodedExample::labelledTokens).sum();
        }
    }

    private final ChatFormat format;
    private final int maxLength;
    private final Overlong overlong;
    private final LossOn lossOn;

    public ExampleEncoder(ChatFormat format, int maxLength, Overlong overlong) {
        this(format, maxLength, overlong, LossOn.ASSISTANT);
    }

    public ExampleEncoder(ChatFormat format, int maxLength, Overlong overlong, LossOn lossOn) {
        if (maxLength < 2) {
            throw new UserInputException("--max-len must be at least 2, got " + maxLength);
        }
        this.format = format;
        this.maxLength = maxLength;
        this.overlong = overlong;
        this.lossOn = lossOn;
    }

    public Result encodeAll(List<? extends TrainingRow> rows) {
        List<EncodedExample> examples = new ArrayList<>();
        int truncated = 0;
        int dropped = 0;
        int piecewise = 0;
        boolean chat = rows.stream().anyMatch(row -> row instanceof Conversation);
        if (chat && !format.hasTemplate()) {
            throw new UserInputException("the model has no chat template (tokenizer_config.json chat_template or "
                    + "chat_template.jinja), and chat rows are rendered with it; add one, or train on {\"text\": ...} rows");
        }
        for (TrainingRow row : rows) {
            Encoding encoding = switch (row) {
                case Conversation conversation -> encode(conversation);
                case PlainText plain -> plain(plain);
            };
            piecewise += encoding.piecewise ? 1 : 0;
            EncodedExample example = encoding.example;
            if (example.length() > maxLength) {
                if (overlong == Overlong.DROP) {
                    dropped++;
                    continue;
                }
                example = new EncodedExample(Arrays.copyOf(example.ids(), maxLength),
                        Arrays.copyOf(example.labels(), maxLength));
                if (example.labelledTokens() == 0) {
                    dropped++;
                    continue;
                }
                truncated++;
            }
            if (example.labelledTokens() == 0) {
                throw new UserInputException(row.source() + ": the text to learn is empty");
            }
            examples.add(example);
        }
        if (examples.isEmpty()) {
            throw new UserInputException("every row was dropped as longer than --max-len " + maxLength
                    + "; raise --max-len or use --overlong truncate");
        }
        return new Result(examples, rows.size(), truncated, dropped, piecewise);
    }

    private record Encoding(EncodedExample example, boolean piecewise) {
    }

    private Encoding plain(PlainText row) {
        int[] ids = format.encodePlain(row.text());
        return new Encoding(new EncodedExample(ids, ids), false);
    }

    private Encoding encode(Conversation conversation) {
        AssistantSpans.Rendered rendered = AssistantSpans.locate(format, conversation);
        String text = rendered.text();
        int[] ids = format.encode(text);
        if (lossOn == LossOn.ALL) {
            return new Encoding(new EncodedExample(ids, ids), false);
        }
        int[] labels = new int[ids.length];
        Arrays.fill(labels, TrainingBatch.IGNORE);
        for (int[] span : rendered.spans()) {
            int from = tokenBoundary(text, span[0], ids);
            int to = tokenBoundary(text, span[1], ids);
            if (from < 0 || to < 0) {
                return new Encoding(piecewise(text, rendered.spans()), true);
            }
            System.arraycopy(ids, from, labels, from, to - from);
        }
        return new Encoding(new EncodedExample(ids, labels), false);
    }

    /** The token index where character {@code at} falls between tokens, or -1 when a token straddles it. */
    private int tokenBoundary(String text, int at, int[] all) {
        if (at == text.length()) {
            return all.length;
        }
        int[] prefix = format.encode(text.substring(0, at));
        if (prefix.length > all.length || !Arrays.equals(prefix, 0, prefix.length, all, 0, prefix.length)) {
            return -1;
        }
        return prefix.length;
    }

    private EncodedExample piecewise(String text, List<int[]> spans) {
        List<Integer> ids = new ArrayList<>();
        List<Integer> labels = new ArrayList<>();
        int position = 0;
        for (int[] span : spans) {
            append(format.encode(text.substring(position, span[0])), false, ids, labels);
            append(format.encode(text.substring(span[0], span[1])), true, ids, labels);
            position = span[1];
        }
        append(format.encode(text.substring(position)), false, ids, labels);
        return new EncodedExample(ids.stream().mapToInt(Integer::intValue).toArray(),
                labels.stream().mapToInt(Integer::intValue).toArray());
    }

    private static void append(int[] piece, boolean learned, List<Integer> ids, List<Integer> labels) {
        for (int id : piece) {
            ids.add(id);
            labels.add(learned ? id : TrainingBatch.IGNORE);
        }
    }
}
