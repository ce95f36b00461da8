package dev.crucible.runner.cli;

import dev.crucible.api.UserInputException;
import dev.crucible.api.model.Generation;
import dev.crucible.runner.Host;
import dev.crucible.runner.session.ContextBudget;
import dev.crucible.runner.session.ModelSession;
import dev.crucible.runner.session.PromptTruncation;
import dev.crucible.runner.text.BoundedLineReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.CharacterCodingException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

@Command(name = "generate", mixinStandardHelpOptions = true,
        description = {"Greedy generation for one or more prompts. Several prompts run as one left-padded batch; "
                + "the results equal one-at-a-time runs.",
                "Example: runner generate --model ../shared/fixtures/stories260k --prompt \"Once upon a time\" --max-new-tokens 64 --json"})
public final class GenerateCommand implements Callable<Integer> {
    private final Host host;

    @Spec
    CommandSpec spec;

    @Mixin
    ModelOptions modelOptions;

    @Option(names = "--prompt", paramLabel = "TEXT", description = "A prompt; repeat for a batch.")
    List<String> prompts = new ArrayList<>();

    @Option(names = "--prompts", paramLabel = "FILE", description = "A file with one prompt per line (blank lines skipped).")
    Path promptsFile;

    @Option(names = "--chat", description = "Render each prompt with the model's chat template as a user turn (plus --system).")
    boolean chat;

    @Option(names = "--system", paramLabel = "TEXT", description = "System prompt for --chat.")
    String system;

    @Option(names = "--max-new-tokens", defaultValue = "128", paramLabel = "N", description = "Tokens to generate at most per prompt (default: ${DEFAULT-VALUE}).")
    int maxNewTokens;

    @Option(names = "--truncate-prompts", paramLabel = "left|right", defaultValue = "none",
            description = "Cut a prompt too long for the model's context: left drops its start, right its end "
                    + "(default: refuse it).")
    PromptTruncation truncation;

    @Option(names = "--batch-size", defaultValue = "0", paramLabel = "N", description = "Prompts per device batch; 0 lets the backend choose (default).")
    int batchSize;

    @Option(names = "--json", description = "Print one JSON object per prompt (an array when there are several): prompt, prompt_ids, generated_ids, text, stopped.")
    boolean json;

    GenerateCommand(Host host) {
        this.host = host;
    }

    @Override
    public Integer call() {
        List<Prompt> all = allPrompts();
        if (maxNewTokens < 1) {
            throw new UserInputException("--max-new-tokens must be at least 1, got " + maxNewTokens);
        }
        if (batchSize < 0) {
            throw new UserInputException("--batch-size must be 0 (auto) or more, got " + batchSize);
        }
        if (system != null && !chat) {
            throw new UserInputException("--system needs --chat (a raw prompt has no system turn)");
        }
        PrintWriter out = spec.commandLine().getOut();
        try (ModelSession session = modelOptions.open(host)) {
            session.quantizationReport().forEach(spec.commandLine().getErr()::println);
            ContextBudget budget = session.budget(maxNewTokens, "--max-new-tokens", truncation);
            List<ContextBudget.Fitted> fitted = new ArrayList<>();
            for (Prompt prompt : all) {
                fitted.add(budget.fit(prompt.label(), prompt.text(),
                        text -> session.encodePrompt(text, chat, Optional.ofNullable(system))));
            }
            int cut = (int) fitted.stream().filter(ContextBudget.Fitted::cut).count();
            if (cut > 0) {
                spec.commandLine().getErr().println(budget.cutNote(cut, fitted.size(), "prompts"));
            }
            List<int[]> ids = fitted.stream().map(ContextBudget.Fitted::ids).toList();
            List<Generation> generations = session.generate(ids, maxNewTokens, batchSize);
            List<Map<String, Object>> results = new ArrayList<>();
            for (int i = 0; i < all.size(); i++) {
                Generation g = generations.get(i);
                Map<String, Object> r = new LinkedHashMap<>();
                r.put("prompt", fitted.get(i).text());
                r.put("prompt_ids", ids.get(i));
                r.put("generated_ids", g.tokens());
                r.put("text", session.tokenizer().decode(withoutStop(g, session)));
                r.put("stopped", g.stopped());
                results.add(r);
            }
            if (json) {
                out.println(Json.write(results.size() == 1 ? results.getFirst() : results));
            } else {
                for (Map<String, Object> r : results) {
                    if (results.size() > 1) {
                        out.println("> " + r.get("prompt"));
                    }
                    out.println(r.get("text"));
                }
            }
        }
        return 0;
    }

    /** A prompt and how messages name it: {@code --prompt 2}, {@code line 7 of prompts.txt}. */
    private record Prompt(String label, String text) {
    }

    /** The text a user reads ends before the stop token. */
    private static int[] withoutStop(Generation g, ModelSession session) {
        int[] tokens = g.tokens();
        return g.stopped() && tokens.length > 0 ? Arrays.copyOf(tokens, tokens.length - 1) : tokens;
    }

    private List<Prompt> allPrompts() {
        List<Prompt> all = new ArrayList<>();
        for (int i = 0; i < prompts.size(); i++) {
            all.add(new Prompt(prompts.size() == 1 ? "--prompt" : "--prompt " + (i + 1), prompts.get(i)));
        }
        if (promptsFile != null) {
            all.addAll(readPromptsFile());
        }
        if (all.isEmpty()) {
            throw new UserInputException("give at least one --prompt or a non-empty --prompts FILE");
        }
        return all;
    }

    /** The file's non-blank lines, each at most {@link BoundedLineReader#PROMPT_CHARS} long. */
    private List<Prompt> readPromptsFile() {
        List<Prompt> read = new ArrayList<>();
        try (BoundedLineReader lines = BoundedLineReader.open(promptsFile, BoundedLineReader.PROMPT_CHARS)) {
            String line;
            while ((line = lines.readLine()) != null) {
                if (!line.isBlank()) {
                    read.add(new Prompt("line " + lines.lineNumber() + " of " + promptsFile, line));
                }
            }
        } catch (BoundedLineReader.LineTooLongException e) {
            throw new UserInputException("--prompts " + promptsFile + ":" + e.line() + ": the line is longer than "
                    + String.format(java.util.Locale.ROOT, "%,d", e.maxChars())
                    + " characters, the most a prompt may have (one prompt per line)");
        } catch (CharacterCodingException e) {
            throw new UserInputException("--prompts " + promptsFile + " is not UTF-8 text; save it as UTF-8");
        } catch (NoSuchFileException e) {
            throw new UserInputException("--prompts " + promptsFile + " does not exist");
        } catch (IOException e) {
            throw new UserInputException("cannot read --prompts " + promptsFile + ": " + e.getClass().getSimpleName()
                    + (e.getMessage() == null ? "" : " " + e.getMessage()));
        }
        return read;
    }
}
