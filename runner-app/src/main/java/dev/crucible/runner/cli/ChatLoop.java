package dev.crucible.runner.cli;

import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.Generation;
import dev.crucible.api.model.TokenListener;
import dev.crucible.runner.session.ContextBudget;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.session.PromptTruncation;
import dev.crucible.runner.text.ModelTokenizer;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/**
 * A conversation with a loaded model, as {@code runner chat} holds it and as the abliteration menu holds it with an
 * edited one: each line is a user turn; the whole conversation is rendered with the model's chat template and the
 * reply streamed token by token (greedy). {@code /reset} clears the history; {@code /exit} or the end of input ends
 * the conversation. Replies go to {@code out}, the prompt and messages to {@code err}.
 */
final class ChatLoop {
    /** Tokens per reply at most, unless the chat command is told otherwise. */
    static final int MAX_NEW_TOKENS = 512;

    /**
     * Tokens per reply for a chat nobody gave {@code --max-new-tokens} to (the abliteration menu's): the default,
     * or half the model's context when that is less, so a small model's conversation still has room.
     */
    static int replyTokens(ModelSession session) {
        return (int) Math.min(MAX_NEW_TOKENS, session.config().contextLength() / 2);
    }

    private final ModelSession session;
    private final String system;
    private final int maxNewTokens;
    private final ContextBudget budget;

    /**
     * @param system a system prompt kept at the top of the conversation, or null
     * @throws dev.crucible.api.UserInputException when {@code maxNewTokens} leave no room in the model's context
     */
    ChatLoop(ModelSession session, String system, int maxNewTokens) {
        this.session = session;
        this.system = system;
        this.maxNewTokens = maxNewTokens;
        this.budget = session.budget(maxNewTokens, "--max-new-tokens", PromptTruncation.NONE);
    }

    /** Talks until {@code lines} gives {@code /exit} or null (the end of input). */
    void run(Supplier<String> lines, PrintWriter out, PrintWriter err) {
        Conversation conversation = new Conversation(system);
        while (true) {
            err.print("> ");
            err.flush();
            String line = lines.get();
            if (line == null || line.strip().equals("/exit")) {
                break;
            }
            if (line.strip().equals("/reset")) {
                conversation.reset();
                err.println("(history cleared)");
                continue;
            }
            if (line.isBlank()) {
                continue;
            }
            ModelTokenizer tokenizer = session.tokenizer();
            int[] prompt = tokenizer.encodeWithoutSpecialTokens(tokenizer.renderChat(conversation.with("user", line), true));
            if (!budget.fits(prompt.length)) {
                // The turn is refused, not the session: the user can say it shorter or start over.
                boolean history = conversation.hasTurns();
                err.println("error: " + budget.tooLong(history ? "the conversation with this message" : "this message",
                        prompt.length) + "; it was not sent" + (history ? " (/reset clears the history)" : ""));
                continue;
            }
            conversation.add("user", line);
            String reply = reply(prompt, out);
            conversation.add("assistant", reply);
        }
    }

    /** Generates the next assistant turn for the rendered conversation, writing its text to {@code out} as the tokens arrive. */
    private String reply(int[] prompt, PrintWriter out) {
        ModelTokenizer tokenizer = session.tokenizer();
        Set<Integer> stops = session.stopTokens();
        TextStream stream = new TextStream(tokenizer, stops, out);
        DecodeRequest request = new DecodeRequest(List.of(prompt), maxNewTokens, stops, tokenizer.padId(), 1, stream);
        Generation generation = session.decode(request).generations().getFirst();
        stream.finish();
        int[] tokens = generation.tokens();
        int[] text = generation.stopped() ? Arrays.copyOf(tokens, tokens.length - 1) : tokens;
        return tokenizer.decode(text);
    }

    /** The messages so far, the system prompt first; a reset keeps only the system prompt. */
    private static final class Conversation {
        private final String system;
        private final List<Map<String, String>> messages = new ArrayList<>();

        Conversation(String system) {
            this.system = system;
            reset();
        }

        void reset() {
            messages.clear();
            if (system != null) {
                messages.add(Map.of("role", "system", "content", system));
            }
        }

        void add(String role, String content) {
            messages.add(Map.of("role", role, "content", content));
        }

        /** The messages with one more, leaving the conversation as it is. */
        List<Map<String, String>> with(String role, String content) {
            List<Map<String, String>> next = new ArrayList<>(messages);
            next.add(Map.of("role", role, "content", content));
            return List.copyOf(next);
        }

        /** Whether anything beyond the system prompt was said. */
        boolean hasTurns() {
            return messages.size() > (system == null ? 0 : 1);
        }
    }

    /**
     * Writes a reply's text as its tokens arrive. Tokens do not map one-to-one to characters (a character may
     * span several byte tokens, and decoding may merge across tokens), so it decodes everything generated so far
     * and writes the characters beyond what was written, holding back a trailing incomplete character.
     */
    static final class TextStream implements TokenListener {
        private final ModelTokenizer tokenizer;
        private final Set<Integer> stops;
        private final PrintWriter out;
        private final List<Integer> tokens = new ArrayList<>();
        private String written = "";

        TextStream(ModelTokenizer tokenizer, Set<Integer> stops, PrintWriter out) {
            this.tokenizer = tokenizer;
            this.stops = stops;
            this.out = out;
        }

        @Override
        public void onTokens(int[] prompts, int[] generated) {
            for (int token : generated) {
                if (!stops.contains(token)) {
                    tokens.add(token);
                }
            }
            String text = decoded();
            if (!text.endsWith("\uFFFD")) { // else an incomplete UTF-8 sequence: wait for the tokens that complete it
                writeBeyondWritten(text);
            }
        }

        /** Writes whatever is still held back, even an incomplete character, and ends the reply's line. */
        void finish() {
            writeBeyondWritten(decoded());
            out.println();
            out.flush();
        }

        private String decoded() {
            return tokenizer.decode(tokens.stream().mapToInt(Integer::intValue).toArray());
        }

        // Decoding is prefix-stable for the tokenizers in use; should an earlier character change, what was written
        // stays and only new characters follow.
        private void writeBeyondWritten(String text) {
            if (text.length() > written.length()) {
                out.print(text.substring(written.length()));
                out.flush();
                written = text;
            }
        }
    }
}
