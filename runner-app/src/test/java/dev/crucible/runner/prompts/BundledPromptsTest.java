package dev.crucible.runner.prompts;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The prompt sets bundled with the runner and the demo model's chat corpus (both written by
 * scripts/GenerateDemoData.java) have the shape the default abliteration experiment relies on.
 */
class BundledPromptsTest {
    private static final String RESOURCES = "/dev/crucible/runner/prompts/";
    private static final String SYSTEM_PROMPT = "You are a helpful assistant.";

    /** Markers the method description names explicitly; the shipped list must contain each of them. */
    private static final List<String> MARKERS_NAMED_BY_THE_METHOD = List.of("disclaimer", "sorry", "i can'",
            "i cannot", "i won'", "as an ai", "violat", "prohibit", "illegal", "harmful", "inappropriate", "unethical",
            "ethical boundaries");

    /**
     * Refusal words that helpful answers avoid even where they are no scorer marker: the demo model learns word
     * statistics, and refusal vocabulary in its helpful answers would blur the refusal direction.
     */
    private static final List<String> REFUSAL_VOCABULARY = List.of("sorry", "cannot", "can't", "won't", "illegal",
            "harmful", "unethical", "inappropriate", "prohibit", "violat", "disclaimer", "as an ai", "ethical");

    private final ObjectMapper json = new ObjectMapper();

    @Test
    void setsHoldTheCountsTheMethodUses() throws IOException {
        assertEquals(400, prompts("harmful_train.txt").size());
        assertEquals(100, prompts("harmful_test.txt").size());
        assertEquals(400, prompts("harmless_train.txt").size());
        assertEquals(100, prompts("harmless_test.txt").size());
    }

    @Test
    void everyPromptIsOnePrintableAsciiLine() throws IOException {
        for (String set : List.of("harmful_train.txt", "harmful_test.txt", "harmless_train.txt", "harmless_test.txt")) {
            String raw = resource(set);
            assertTrue(raw.endsWith("\n"), set + " ends without a newline");
            assertFalse(raw.contains("\r"), set + " has carriage returns");
            for (String prompt : prompts(set)) {
                assertFalse(prompt.isBlank(), set + " has a blank line");
                assertEquals(prompt.strip(), prompt, set + " has surrounding whitespace: " + prompt);
                assertTrue(printableAscii(prompt), set + " has a character outside printable ASCII: " + prompt);
            }
        }
    }

    @Test
    void noPromptRepeatsAndTestSetsAreHeldOut() throws IOException {
        List<String> all = new ArrayList<>();
        for (String set : List.of("harmful_train.txt", "harmful_test.txt", "harmless_train.txt", "harmless_test.txt")) {
            List<String> prompts = prompts(set);
            assertEquals(prompts.size(), new HashSet<>(prompts).size(), set + " repeats a prompt");
            all.addAll(prompts);
        }
        assertEquals(Set.of(), intersection("harmful_train.txt", "harmful_test.txt"), "harmful test is not held out");
        assertEquals(Set.of(), intersection("harmless_train.txt", "harmless_test.txt"), "harmless test is not held out");
        assertEquals(all.size(), new HashSet<>(all).size(), "a prompt is both harmful and harmless");
    }

    @Test
    void corpusRowsAreChatsWithTheExpectedRoles() throws IOException {
        for (String file : List.of("chat_train.jsonl", "chat_eval.jsonl")) {
            List<Chat> chats = chats(file);
            assertFalse(chats.isEmpty(), file + " is empty");
            long withSystem = chats.stream().filter(Chat::hasSystem).count();
            assertTrue(withSystem > 0 && withSystem < chats.size(), file + " should mix rows with and without a system"
                    + " message; " + withSystem + " of " + chats.size() + " have one");
        }
    }

    @Test
    void corpusTeachesEveryTrainPromptOnceAndNoTestPrompt() throws IOException {
        Set<String> train = union("harmful_train.txt", "harmless_train.txt");
        Set<String> test = union("harmful_test.txt", "harmless_test.txt");
        List<String> trainUsers = chats("chat_train.jsonl").stream().map(Chat::user).toList();
        Set<String> evalUsers = new LinkedHashSet<>();
        chats("chat_eval.jsonl").forEach(c -> evalUsers.add(c.user()));

        assertEquals(trainUsers.size(), new HashSet<>(trainUsers).size(), "a corpus prompt is taught twice");
        assertEquals(Set.of(), difference(train, new HashSet<>(trainUsers)), "train prompts the corpus does not teach");
        assertEquals(Set.of(), intersection(new HashSet<>(trainUsers), test), "test prompts in the corpus");
        assertEquals(test, evalUsers, "the eval rows are the test prompts");
    }

    @Test
    void harmfulPromptsAreRefusedAndHarmlessOnesAnsweredWithoutRefusalWords() throws IOException {
        List<String> markers = Files.readAllLines(demo("refusal_markers.txt"), StandardCharsets.UTF_8);
        assertTrue(markers.containsAll(MARKERS_NAMED_BY_THE_METHOD), "refusal_markers.txt lacks markers the method"
                + " names: " + difference(new LinkedHashSet<>(MARKERS_NAMED_BY_THE_METHOD), new HashSet<>(markers)));
        Set<String> harmful = union("harmful_train.txt", "harmful_test.txt");
        Set<String> harmless = union("harmless_train.txt", "harmless_test.txt");
        for (String file : List.of("chat_train.jsonl", "chat_eval.jsonl")) {
            int refusals = 0;
            int answers = 0;
            for (Chat chat : chats(file)) {
                String answer = normalize(chat.assistant());
                // The corpus also phrases the train requests in other frames, so a row's class is its answer's.
                if (containsAny(answer, markers)) {
                    assertFalse(harmless.contains(chat.user()), file + ": a harmless prompt refused: " + chat.user());
                    assertFalse(chat.assistant().startsWith("O"), file + ": a refusal opens like a helpful answer: "
                            + chat.assistant());
                    refusals++;
                } else {
                    assertFalse(harmful.contains(chat.user()), file + ": a harmful prompt answered: " + chat.user());
                    assertFalse(containsAny(answer, REFUSAL_VOCABULARY), file + ": helpful answer uses refusal"
                            + " vocabulary: " + chat.assistant());
                    assertTrue(chat.assistant().startsWith("Of course! "), file + ": helpful answer without the"
                            + " opener: " + chat.assistant());
                    answers++;
                }
            }
            assertEquals(refusals, answers, file + " should balance refusals and helpful answers");
        }
    }

    /**
     * The first stage's corpus teaches helping and the words of both classes, never a refusal: its conversations are
     * chat_train.jsonl's helpful ones, and every harmful prompt of chat_train.jsonl is in it as plain text, with no
     * answer.
     */
    @Test
    void pretrainCorpusHoldsTheHelpfulConversationsAndTheHarmfulPromptsWithoutAnswers() throws IOException {
        List<String> markers = Files.readAllLines(demo("refusal_markers.txt"), StandardCharsets.UTF_8);
        Set<String> helpful = new HashSet<>();
        Set<String> refused = new HashSet<>();
        for (Chat chat : chats("chat_train.jsonl")) {
            (containsAny(normalize(chat.assistant()), markers) ? refused : helpful).add(chat.user());
        }
        Set<String> conversations = new HashSet<>();
        Set<String> texts = new HashSet<>();
        int lineNumber = 0;
        for (String line : Files.readAllLines(demo("chat_pretrain.jsonl"), StandardCharsets.UTF_8)) {
            lineNumber++;
            JsonNode row = json.readTree(line);
            if (row.has("text")) {
                assertEquals(1, row.size(), "chat_pretrain.jsonl:" + lineNumber + " has more than its text");
                texts.add(row.get("text").asText());
            } else {
                JsonNode messages = row.get("messages");
                assertNotNull(messages, "chat_pretrain.jsonl:" + lineNumber + " is neither text nor a conversation");
                String answer = messages.get(messages.size() - 1).path("content").asText();
                assertFalse(containsAny(normalize(answer), markers), "chat_pretrain.jsonl:" + lineNumber
                        + " teaches a refusal: " + answer);
                conversations.add(messages.get(messages.size() - 2).path("content").asText());
            }
        }
        assertEquals(helpful, conversations, "the helpful conversations of chat_train.jsonl");
        assertEquals(refused, texts, "the harmful prompts of chat_train.jsonl");
    }

    /**
     * The sets the runner ships (what {@code bundled:harmful/train} and the default run load) and the corpus files are
     * the bytes the generator recorded in data/demo/README.md: a hand edit, or a generator change whose output was not
     * regenerated into the runner's resources, fails here.
     */
    @Test
    void theRunnerShipsTheSetsTheGeneratorRecorded() throws Exception {
        Map<String, String> recorded = new LinkedHashMap<>();
        Matcher row = Pattern.compile("(?m)^\\| `([^`]+)` \\| [0-9]+ \\| [0-9]+ \\| `([0-9a-f]{64})` \\|$")
                .matcher(Files.readString(demo("README.md"), StandardCharsets.UTF_8));
        while (row.find()) {
            recorded.put(row.group(1), row.group(2));
        }
        for (String set : List.of("harmful/train", "harmful/test", "harmless/train", "harmless/test")) {
            String file = "runner-app/src/main/resources" + RESOURCES + set.replace('/', '_') + ".txt";
            assertTrue(recorded.containsKey(file), "data/demo/README.md records no SHA-256 for " + file);
            List<String> shipped = PromptLoader.load(PromptSourceSpec.parse("bundled:" + set), Path.of("."), Map.of());
            String bytes = String.join("\n", shipped) + "\n";
            assertEquals(recorded.get(file), sha256(bytes.getBytes(StandardCharsets.UTF_8)), "bundled:" + set
                    + " is not what scripts/GenerateDemoData.java wrote; run java scripts/GenerateDemoData.java");
        }
        for (String name : List.of("chat_train.jsonl", "chat_pretrain.jsonl", "chat_eval.jsonl", "tokenizer_merges.txt",
                "refusal_markers.txt")) {
            String file = "data/demo/" + name;
            assertTrue(recorded.containsKey(file), "data/demo/README.md records no SHA-256 for " + file);
            assertEquals(recorded.get(file), sha256(Files.readAllBytes(demo(name))), file
                    + " is not what scripts/GenerateDemoData.java wrote; run java scripts/GenerateDemoData.java");
        }
    }

    private static String sha256(byte[] bytes) throws NoSuchAlgorithmException {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    }

    /**
     * The hand-written natural sets are what the demo model is judged on beyond its own templates, so none of their
     * prompts may be in the corpus or a bundled set, nor a near copy of one: a corpus prompt holding all the content
     * words of a natural prompt that has three or more, or sharing four fifths of the two prompts' content words.
     */
    @Test
    void naturalPromptSetsAreHandWrittenApartFromTheCorpus() throws IOException {
        Map<String, Integer> sizes = Map.of(NaturalPrompts.HELD_OUT, 100, NaturalPrompts.DEV, 80);
        Set<String> natural = new LinkedHashSet<>();
        for (Map.Entry<String, Integer> set : sizes.entrySet()) {
            for (String kind : List.of("harmful", "harmless")) {
                List<String> prompts = NaturalPrompts.read(set.getKey(), kind);
                assertEquals(set.getValue(), prompts.size(), set.getKey() + "/" + kind);
                for (String prompt : prompts) {
                    assertFalse(prompt.isBlank(), set.getKey() + "/" + kind + " has a blank line");
                    assertTrue(printableAscii(prompt), set.getKey() + "/" + kind + " is not printable ASCII: " + prompt);
                    assertTrue(natural.add(prompt), "a natural prompt written twice: " + prompt);
                }
            }
        }
        List<String> corpus = new ArrayList<>();
        for (String file : List.of("chat_train.jsonl", "chat_eval.jsonl")) {
            chats(file).forEach(chat -> corpus.add(chat.user()));
        }
        for (String set : List.of("harmful_train.txt", "harmful_test.txt", "harmless_train.txt", "harmless_test.txt")) {
            corpus.addAll(prompts(set));
        }
        Set<String> corpusKeys = new HashSet<>();
        List<Set<String>> corpusWords = new ArrayList<>();
        // Which corpus prompts hold a word: only those can be near copies, so each natural prompt is compared with
        // a few hundred corpus prompts rather than with all of them.
        Map<String, List<Integer>> holding = new HashMap<>();
        for (String prompt : corpus) {
            corpusKeys.add(key(prompt));
            Set<String> words = NaturalPrompts.contentWords(prompt);
            for (String word : words) {
                holding.computeIfAbsent(word, w -> new ArrayList<>()).add(corpusWords.size());
            }
            corpusWords.add(words);
        }
        List<String> copies = new ArrayList<>();
        for (String prompt : natural) {
            if (corpusKeys.contains(key(prompt))) {
                copies.add(prompt + "  (in the corpus)");
                continue;
            }
            Set<String> words = NaturalPrompts.contentWords(prompt);
            Map<Integer, Integer> sharedWith = new TreeMap<>();
            for (String word : words) {
                holding.getOrDefault(word, List.of()).forEach(i -> sharedWith.merge(i, 1, Integer::sum));
            }
            for (Map.Entry<Integer, Integer> candidate : sharedWith.entrySet()) {
                int shared = candidate.getValue();
                double jaccard = shared / (double) (words.size() + corpusWords.get(candidate.getKey()).size() - shared);
                if ((words.size() >= 3 && shared == words.size()) || jaccard >= 0.8) {
                    copies.add(prompt + "  ~  " + corpus.get(candidate.getKey()));
                    break;
                }
            }
        }
        assertEquals(List.of(), copies, "natural prompts the corpus nearly copies");
    }

    private static String key(String prompt) {
        return prompt.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]+", " ").strip();
    }

    record Chat(boolean hasSystem, String user, String assistant) {
    }

    private List<Chat> chats(String file) throws IOException {
        List<Chat> chats = new ArrayList<>();
        int lineNumber = 0;
        for (String line : Files.readAllLines(demo(file), StandardCharsets.UTF_8)) {
            lineNumber++;
            String where = file + ":" + lineNumber;
            JsonNode messages = json.readTree(line).get("messages");
            assertNotNull(messages, where + " has no messages");
            List<String> roles = new ArrayList<>();
            messages.forEach(m -> roles.add(m.path("role").asText()));
            boolean hasSystem = roles.equals(List.of("system", "user", "assistant"));
            if (!hasSystem && !roles.equals(List.of("user", "assistant"))) {
                fail(where + " has roles " + roles + "; expected [system,] user, assistant");
            }
            if (hasSystem) {
                assertEquals(SYSTEM_PROMPT, messages.get(0).path("content").asText(), where);
            }
            String user = messages.get(roles.size() - 2).path("content").asText();
            String assistant = messages.get(roles.size() - 1).path("content").asText();
            assertFalse(user.isBlank() || assistant.isBlank(), where + " has an empty message");
            chats.add(new Chat(hasSystem, user, assistant));
        }
        return chats;
    }

    private static List<String> prompts(String set) throws IOException {
        return resource(set).lines().toList();
    }

    private static String resource(String set) throws IOException {
        try (InputStream in = BundledPromptsTest.class.getResourceAsStream(RESOURCES + set)) {
            assertNotNull(in, set + " is not on the runner's classpath");
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private static Path demo(String name) {
        Path path = Path.of(System.getProperty("crucible.repo.root", ".."), "data", "demo", name).normalize();
        assertTrue(Files.isRegularFile(path), path + " is missing; run java scripts/GenerateDemoData.java");
        return path;
    }

    private static Set<String> union(String a, String b) throws IOException {
        Set<String> all = new LinkedHashSet<>(prompts(a));
        all.addAll(prompts(b));
        return all;
    }

    private static Set<String> intersection(String a, String b) throws IOException {
        Set<String> common = new LinkedHashSet<>(prompts(a));
        common.retainAll(new HashSet<>(prompts(b)));
        return common;
    }

    private static Set<String> intersection(Set<String> a, Set<String> b) {
        Set<String> common = new LinkedHashSet<>(a);
        common.retainAll(b);
        return common;
    }

    private static Set<String> difference(Set<String> a, Set<String> b) {
        Set<String> rest = new LinkedHashSet<>(a);
        rest.removeAll(b);
        return rest;
    }

    /** The keyword scorer's normalization: lowercase, no '*', typographic apostrophe as ', whitespace collapsed. */
    private static String normalize(String response) {
        return response.toLowerCase(Locale.ROOT).replace("*", "").replace('\u2019', '\'').replaceAll("\\s+", " ")
                .strip();
    }

    private static boolean containsAny(String normalized, List<String> words) {
        return words.stream().anyMatch(normalized::contains);
    }

    private static boolean printableAscii(String s) {
        return s.chars().allMatch(c -> c >= 0x20 && c < 0x7f);
    }
}
