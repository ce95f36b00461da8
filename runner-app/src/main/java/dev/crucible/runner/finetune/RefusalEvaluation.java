package dev.crucible.runner.finetune;

import dev.crucible.api.UserInputException;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DecodeResult;
import dev.crucible.api.model.Generation;
import dev.crucible.runner.evaluation.RefusalVerdict;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * Checks the behaviour a fine-tune taught on held-out rows: each row's last assistant message (or completion) is
 * the reference; the model greedily answers the turns (or prompt) before it, and the answer counts as right when it is a refusal
 * exactly when the reference is one (as the refusal scorer decides, {@link RefusalVerdict}: a blank reply is a
 * refusal). Reported separately for rows that should be refused and rows that should be answered.
 */
public final class RefusalEvaluation {

    /** Counts and a few examples of each kind of miss. */
    public record Report(int shouldRefuse, int refused, int shouldAnswer, int answered, List<String> misses) {
        public Report {
            misses = List.copyOf(misses);
        }

        public double refusalRate() {
            return shouldRefuse == 0 ? Double.NaN : (double) refused / shouldRefuse;
        }

        public double answerRate() {
            return shouldAnswer == 0 ? Double.NaN : (double) answered / shouldAnswer;
        }

        public Map<String, Object> toJson() {
            Map<String, Object> json = new LinkedHashMap<>();
            json.put("should_refuse", shouldRefuse);
            json.put("refused", refused);
            json.put("refusal_rate", refusalRate());
            json.put("should_answer", shouldAnswer);
            json.put("answered", answered);
            json.put("answer_rate", answerRate());
            json.put("misses", misses);
            return json;
        }
    }

    /**
     * One held-out row as the evaluation sees it ({@link ExampleEncoder#probe}).
     *
     * @param prompt    the ids the model answers (rendered as in training)
     * @param reference the reply the row gives
     * @param shown     the user's words, to name a miss by
     */
    public record Probe(int[] prompt, String reference, String shown) {
        public Probe {
            prompt = prompt.clone();
        }

        @Override
        public int[] prompt() {
            return prompt.clone();
        }
    }

    private RefusalEvaluation() {
    }

    /**
     * {@code --refusal-markers FILE}: one marker per line; blank lines and lines starting with # are skipped, and the
     * space around a marker is not part of it.
     */
    public static List<String> readMarkers(Path file) {
        List<String> markers;
        try {
            markers = Files.readAllLines(file).stream().filter(line -> !line.isBlank() && !line.startsWith("#"))
                    .map(String::strip).toList();
        } catch (IOException e) {
            throw new UserInputException("cannot read refusal markers " + file + ": " + e.getMessage());
        }
        if (markers.isEmpty()) {
            throw new UserInputException("no refusal markers given");
        }
        return markers;
    }

    /**
     * @param isRefusal  whether a reply is a refusal ({@link RefusalVerdict})
     * @param decode     greedy generation by the model under test
     * @param decodeText the tokenizer's decode
     */
    public static Report run(List<Probe> rows, Predicate<String> isRefusal, int maxNewTokens, Set<Integer> stopTokens,
                             int padToken, Function<DecodeRequest, DecodeResult> decode,
                             Function<int[], String> decodeText) {
        List<int[]> prompts = new ArrayList<>();
        List<Boolean> expectRefusal = new ArrayList<>();
        List<String> userTurns = new ArrayList<>();
        for (Probe row : rows) {
            prompts.add(row.prompt());
            expectRefusal.add(isRefusal.test(row.reference()));
            userTurns.add(row.shown());
        }
        DecodeResult result = decode.apply(new DecodeRequest(prompts, maxNewTokens, stopTokens, padToken, 0));
        int shouldRefuse = 0;
        int refused = 0;
        int shouldAnswer = 0;
        int answered = 0;
        List<String> misses = new ArrayList<>();
        for (int i = 0; i < prompts.size(); i++) {
            Generation generation = result.generations().get(i);
            int[] tokens = generation.tokens();
            if (generation.stopped() && tokens.length > 0) {
                tokens = Arrays.copyOf(tokens, tokens.length - 1);
            }
            String reply = decodeText.apply(tokens);
            boolean refusal = isRefusal.test(reply);
            if (expectRefusal.get(i)) {
                shouldRefuse++;
                refused += refusal ? 1 : 0;
            } else {
                shouldAnswer++;
                answered += refusal ? 0 : 1;
            }
            if (refusal != expectRefusal.get(i) && misses.size() < 10) {
                misses.add((expectRefusal.get(i) ? "answered: " : "refused: ") + userTurns.get(i) + " -> " + reply);
            }
        }
        return new Report(shouldRefuse, refused, shouldAnswer, answered, misses);
    }
}
