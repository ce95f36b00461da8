package dev.crucible.runner.finetune;

import dev.crucible.api.UserInputException;
import dev.crucible.api.train.TrainingBatch;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Renders, tokenizes and masks training rows, and applies {@code --max-len}. Which rendering a row gets depends on
 * the row and the model, as in TRL's SFTTrainer:
 * <ul>
 *   <li>{@code messages} rows, and prompt/completion rows on a model with a chat template: the chat template, the
 *       loss on the assistant's tokens ({@link AssistantSpans});</li>
 *   <li>prompt/completion rows on a model without one: plain text, {@code prompt + completion + EOS} tokenized as
 *       the tokenizer encodes raw text (so with its BOS), the loss on the tokens after the prompt's;
 *       {@code messages} rows there are refused, having nothing to be rendered with;</li>
 *   <li>{@code text} rows: plain text followed by EOS (as TRL's language-modelling rows), the loss on every token.</li>
 * </ul>
 *
 * <p>Chat tokens are mapped to spans by tokenizing prefixes: a span starting at character s starts at token
 * {@code encode(text[0, s)).length} when those ids are a prefix of the whole text's ids, which holds whenever the
 * tokenizer does not merge across the boundary (chat templates put a special token or a newline there). When a
 * boundary does merge, the row is tokenized piece by piece instead (context, span, context, ...) so every token
 * is wholly inside or outside a span; such rows are counted.
 *
 * <p>Plain prompt/completion rows follow TRL exactly instead (so a run here and there train on the same ids and
 * labels): the whole text is tokenized once and the first {@code encode(prompt).length} tokens are context, even
 * when the tokenizer merges the prompt's last characters with the completion's first; such rows are counted, since
 * the remedy is the data's (a completion that starts with the space or newline separating it from the prompt).
 */
public final class ExampleEncoder {

    /** What to do with a row longer than {@code --max-len}. */
    public enum Overlong {
        /** Keep the first max-len tokens (dropped anyway when no assistant token is left). */
        TRUNCATE,
        DROP
    }

    /** Which tokens of a row the loss is taken on ({@code text} rows: always every token). */
    public enum LossOn {
        /**
         * The assistant's messages (with their end-of-turn markers), or a plain prompt/completion row's completion
         * (with its EOS); everything else is context only.
         */
        ASSISTANT,
        /**
         * Every token after the first, prompts included: plain language modelling of the whole conversation (what
         * trl's SFTTrainer does for conversations by default, and for prompt/completion rows with
         * {@code completion_only_loss=False}). Useful when training from scratch, where the model must also learn
         * to read the prompts.
         */
        ALL
    }

    /**
     * The encoded rows and what happened to the others.
     *
     * @param rendering     how the rows were turned into text, for the run's first lines
     * @param promptsMerged plain prompt/completion rows whose prompt tokenizes differently at the end once the
     *                      completion follows
     */
    public record Result(List<EncodedExample> examples, int rows, int truncated, int dropped, int tokenizedPiecewise,
                         int promptsMerged, String rendering) {
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
        int merged = 0;
        for (TrainingRow row : rows) {
            Encoding encoding = switch (row) {
                case Conversation conversation -> encode(chat(conversation));
                case PromptCompletion pair -> format.hasTemplate() ? encode(pair.asConversation()) : plainPair(pair);
                case PlainText plain -> plain(plain);
            };
            piecewise += encoding.piecewise ? 1 : 0;
            merged += encoding.promptMerged ? 1 : 0;
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
        return new Result(examples, rows.size(), truncated, dropped, piecewise, merged, rendering(rows));
    }

    /**
     * A row of held-out data as a prompt to answer and the reference answer (for {@link RefusalEvaluation}), rendered
     * as for training; empty for text rows, which have no answer.
     */
    public Optional<RefusalEvaluation.Probe> probe(TrainingRow row) {
        return switch (row) {
            case Conversation conversation -> Optional.of(chatProbe(chat(conversation)));
            case PromptCompletion pair -> Optional.of(format.hasTemplate() ? chatProbe(pair.asConversation())
                    : new RefusalEvaluation.Probe(format.encodePlain(pair.plainPrompt()), pair.completion(), pair.prompt()));
            case PlainText plain -> Optional.empty();
        };
    }

    private RefusalEvaluation.Probe chatProbe(Conversation row) {
        List<Map<String, String>> messages = row.messages();
        Map<String, String> last = messages.getLast();
        if (!"assistant".equals(last.get("role"))) {
            throw new UserInputException(row.source() + ": an evaluation row must end with the assistant's reference reply");
        }
        List<Map<String, String>> context = messages.subList(0, messages.size() - 1);
        return new RefusalEvaluation.Probe(format.encode(format.render(context, true)), last.get("content"),
                context.isEmpty() ? "" : context.getLast().get("content"));
    }

    /** A {@code messages} row, which only a chat template can render. */
    private Conversation chat(Conversation row) {
        if (!format.hasTemplate()) {
            throw new UserInputException(row.source() + ": \"messages\" rows are rendered with the model's chat "
                    + "template, and the model has none (no chat_template in tokenizer_config.json, no "
                    + "chat_template.jinja); for a base model write {\"prompt\", \"completion\"} rows (trained as "
                    + "plain text, loss on the completion) or {\"text\"} rows, or add a chat template");
        }
        return row;
    }

    private String rendering(List<? extends TrainingRow> rows) {
        boolean template = format.hasTemplate();
        boolean chat = rows.stream().anyMatch(row -> row instanceof Conversation || template && row instanceof PromptCompletion);
        boolean pairs = !template && rows.stream().anyMatch(PromptCompletion.class::isInstance);
        boolean instructions = !template && rows.stream()
                .anyMatch(row -> row instanceof PromptCompletion pair && !pair.separator().isEmpty());
        boolean text = rows.stream().anyMatch(PlainText.class::isInstance);
        List<String> parts = new ArrayList<>();
        if (chat) {
            parts.add("the model's chat template, loss on " + (lossOn == LossOn.ALL ? "every token" : "the assistant's tokens"));
        }
        if (pairs) {
            String eos = format.eosToken().map(token -> " + " + token).orElse("");
            parts.add("prompt + completion" + eos + " as plain text (the model has no chat template; TRL's convention), "
                    + "loss on " + (lossOn == LossOn.ALL ? "every token" : "the completion" + eos)
                    + (instructions ? ", instruction rows as instruction, input and output separated by blank lines" : ""));
        }
        if (text) {
            parts.add("text" + format.eosToken().map(token -> " + " + token).orElse("") + " as plain text, loss on every token");
        }
        return String.join("; ", parts);
    }

    private record Encoding(EncodedExample example, boolean piecewise, boolean promptMerged) {
        Encoding(EncodedExample example, boolean piecewise) {
            this(example, piecewise, false);
        }
    }

    private Encoding plain(PlainText row) {
        int[] ids = format.encodePlain(withEos(row.text()));
        return new Encoding(new EncodedExample(ids, ids), false);
    }

    /** TRL ends every non-conversational row with the EOS token unless it already does, so the model learns to stop. */
    private String withEos(String text) {
        return format.eosToken().filter(eos -> !text.endsWith(eos)).map(eos -> text + eos).orElse(text);
    }

    /**
     * TRL's tokenization of a prompt/completion row without a chat template: EOS appended to the completion unless
     * it ends with it, {@code prompt + completion} tokenized whole, the first {@code encode(prompt).length} tokens
     * masked.
     */
    private Encoding plainPair(PromptCompletion row) {
        String completion = withEos(row.completion());
        int[] prompt = format.encodePlain(row.plainPrompt());
        int[] ids = format.encodePlain(row.plainPrompt() + completion);
        boolean merged = prompt.length > ids.length || !Arrays.equals(prompt, 0, prompt.length, ids, 0, prompt.length);
        if (lossOn == LossOn.ALL) {
            return new Encoding(new EncodedExample(ids, ids), false, merged);
        }
        int[] labels = ids.clone();
        Arrays.fill(labels, 0, Math.min(prompt.length, ids.length), TrainingBatch.IGNORE);
        return new Encoding(new EncodedExample(ids, labels), false, merged);
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
