package dev.crucible.runner.cli;

import dev.crucible.api.UserInputException;
import dev.crucible.runner.Host;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.text.BoundedLineReader;
import dev.crucible.runner.text.ModelTokenizer;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
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

    @Option(names = "--max-new-tokens", defaultValue = "" + ChatLoop.MAX_NEW_TOKENS, paramLabel = "N", description = "Tokens per reply at most (default: ${DEFAULT-VALUE}).")
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
            session.quantizationReport().forEach(err::println);
            ModelTokenizer tokenizer = session.tokenizer();
            if (tokenizer.chatTemplate().isEmpty()) {
                throw new UserInputException("the model " + modelOptions.model + " has no chat template (tokenizer_config.json "
                        + "chat_template or chat_template.jinja); use 'runner generate' for raw prompts");
            }
            ChatLoop chat = new ChatLoop(session, system, maxNewTokens);
            err.println("chat with " + modelOptions.model + ": /reset clears the history, /exit or end of input quits");
            // A stray byte that is not UTF-8 becomes U+FFFD, as a terminal shows it, rather than ending the session.
            BoundedLineReader in = new BoundedLineReader(new InputStreamReader(System.in, StandardCharsets.UTF_8),
                    BoundedLineReader.PROMPT_CHARS);
            chat.run(() -> readLine(in, err), out, err);
        }
        return 0;
    }

    /** The next line typed, or null at the end of input; a line past the bound is refused and the next one read. */
    private static String readLine(BoundedLineReader in, PrintWriter err) {
        while (true) {
            try {
                return in.readLine();
            } catch (BoundedLineReader.LineTooLongException e) {
                err.println(String.format(Locale.ROOT, "error: that message is longer than %,d characters, the most a"
                        + " prompt may have; it was not sent", e.maxChars()));
                try {
                    in.skipRestOfLine();
                } catch (IOException skipFailed) {
                    throw new UncheckedIOException("cannot read standard input", skipFailed);
                }
                err.print("> ");
                err.flush();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read standard input", e);
            }
        }
    }
}
