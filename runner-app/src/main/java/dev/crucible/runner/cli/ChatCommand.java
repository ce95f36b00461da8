package dev.crucible.runner.cli;

import dev.crucible.api.UserInputException;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.Generation;
import dev.crucible.api.model.TokenListener;
import dev.crucible.runner.Host;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.text.ModelTokenizer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "chat", mixinStandardHelpOptions = true,
        description = {"Chat with a model: each line you type is a user turn; the whole conversation is rendered with "
                + "the model's chat template and the reply is streamed token by token (greedy). "
                + "/reset clears the history, /exit or end of input quits. Replies go to standard output, the "
                + "prompt and messages to standard error.",
                "Example: runner chat --model Qwen/Qwen2.5-0.5B-Instruct --system \"Answer briefly.\""})
public final class ChatCommand implements Callable<Integer> {
    private final Host host;

    @Spec
    CommandSpec spec;

    @Mixin
    ModelOptions modelOptions;

    @Option(names = "--system", paramLabel = "TEXT", description = "A system prompt, kept at the top of the conversation.")
    String system;

    @Option(names = "--max-new-tokens", defaultValue = "512", paramLabel = "N", description = "Tokens per reply at most (default: ${DEFAULT-VALUE}).")
    int maxNewTokens;

    ChatCommand(Host host) {
        this.host = host;
    }

    @Override
    public Integer call() {
        if (maxNewTokens < 1) {
            throw new UserInputException("--max-new-tokens must be at least 1, got " + maxNewTokens);
        }
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        try (ModelSession session = modelOptions.open(host)) {
            ModelTokenizer tokenizer = session.tokenizer();
            if (tokenizer.chatTemplate().isEmpty()) {
                throw new UserInputException("the model " + modelOptions.model + " has no chat template (tokenizer_config.json "
                        + "chat_template or chat_template.jinja); use 'runner generate' for raw prompts");
            }
            err.println("chat with " + modelOptions.model + ": /reset clears the history, /exit or end of input quits");
            Conversation conversation = new Conversation(system);
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            while (true) {
                err.print("> ");
                err.flush();
                String line = readLine(in);
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
                conversation.add("user", line);
                String reply = reply(session, conversation, out);
                conversation.add("assistant", reply);
            }
        }
        return 0;
    }

    /** Generates the next assistant turn, writing its text to {@code out} as the tokens arrive. */
    private String reply(ModelSession session, Conversation conversation, PrintWriter out) {
        ModelTokenizer tokenizer = session.tokenizer();
        int[] prompt = tokenizer.encodeWithoutSpecialTokens(tokenizer.renderChat(conversation.messages(), true));
        Set<Integer> stops = session.stopTokens();
        TextStream stream = new TextStream(tokenizer, stops, out);
        DecodeRequest request = new DecodeRequest(List.of(prompt), maxNewTokens, stops, tokenizer.padId(), 1, stream);
        Generation generation = session.backend().decode(session.model(), request).generations().getFirst();
        stream.finish();
        int[] tokens = generation.tokens();
        int[] text = generation.stopped() ? Arrays.copyOf(tokens, tokens.length - 1) : tokens;
        return tokenizer.decode(text);
    }

    private static String readLine(BufferedReader in) {
        try {
            return in.readLine();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read standard input", e);
        }
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

        List<Map<String, String>> messages() {
            return List.copyOf(messages);
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
