package dev.crucible.runner.finetune;

import dev.crucible.api.UserInputException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Where the assistant's words are in a rendered conversation, found with the chat template itself, so it works
 * for any template without knowing its markers.
 *
 * <p>The method: render the whole conversation; then, for each assistant message at index i, render
 * <ol>
 *   <li>{@code before} = messages {@code [0, i)} with {@code add_generation_prompt}: the text up to where the
 *       assistant starts writing (the template's own generation prompt, e.g. {@code <|im_start|>assistant\n});</li>
 *   <li>{@code through} = messages {@code [0, i]} without it: the text through the end of that turn, including
 *       the template's end-of-turn marker ({@code <|im_end|>}, {@code <|eot_id|>}), which the model must learn to
 *       emit in order to stop.</li>
 * </ol>
 * Both must be prefixes of the whole rendering (a template that renders earlier turns differently once later turns
 * follow cannot be masked this way and is reported). The span is {@code [before.length, through.length)} minus
 * whitespace the template writes after the marker (a newline between turns is not the assistant's to learn).
 * Everything else (system prompt, user turns, the generation prompt itself) is context only.
 */
public final class AssistantSpans {

    /** The rendered text and the character ranges {@code [start, end)} the loss is taken on, in order. */
    public record Rendered(String text, List<int[]> spans) {
        public Rendered {
            spans = spans.stream().map(int[]::clone).toList();
        }

        /** The text of every span, for tests and error messages. */
        public List<String> spanTexts() {
            return spans.stream().map(span -> text.substring(span[0], span[1])).toList();
        }
    }

    private AssistantSpans() {
    }

    public static Rendered locate(ChatFormat format, Conversation conversation) {
        List<Map<String, String>> messages = conversation.messages();
        String full = format.render(messages, false);
        List<int[]> spans = new ArrayList<>();
        for (int i = 0; i < messages.size(); i++) {
            if (!"assistant".equals(messages.get(i).get("role"))) {
                continue;
            }
            String before = format.render(messages.subList(0, i), true);
            String through = format.render(messages.subList(0, i + 1), false);
            if (!full.startsWith(before) || !full.startsWith(through) || !through.startsWith(before)) {
                throw new UserInputException(conversation.source() + ": the chat template renders the turns before "
                        + "assistant message " + i + " differently once later turns follow, so its tokens cannot be "
                        + "located; split the conversation into one row per assistant turn");
            }
            int start = before.length();
            int end = through.stripTrailing().length();
            if (end > start) {
                spans.add(new int[] {start, end});
            }
        }
        return new Rendered(full, spans);
    }
}
