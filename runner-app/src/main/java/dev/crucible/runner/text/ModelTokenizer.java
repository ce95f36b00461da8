package dev.crucible.runner.text;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.crucible.api.UserInputException;
import dev.crucible.huggingface.template.ChatTemplate;
import dev.crucible.huggingface.template.ChatTemplateException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;

/**
 * A model folder's tokenizer as transformers sees it: the fast tokenizer from {@code tokenizer.json} (through
 * DJL's binding of the Hugging Face tokenizers library, so ids match byte for byte), plus what
 * {@code tokenizer_config.json}, {@code generation_config.json} and {@code config.json} say about special tokens.
 *
 * <p>Raw prompts are encoded with the tokenizer's own special tokens (its post-processor adds BOS where the
 * model expects one); chat-rendered prompts are encoded without, because the template already wrote them.
 * The pad token is the eos token when the tokenizer has none; batches are padded on the left.
 */
public final class ModelTokenizer implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final HuggingFaceTokenizer tokenizer;
    private final Map<String, String> specialTokens;
    private final Set<Integer> eosIds;
    private final int padId;
    private final Optional<Integer> bosId;
    private final Optional<String> chatTemplate;
    private ChatTemplate compiled;
    private Consumer<String> notes = note -> { };

    private ModelTokenizer(HuggingFaceTokenizer tokenizer, Map<String, String> specialTokens, Set<Integer> eosIds,
                           int padId, Optional<Integer> bosId, Optional<String> chatTemplate) {
        this.tokenizer = tokenizer;
        this.specialTokens = specialTokens;
        this.eosIds = eosIds;
        this.padId = padId;
        this.bosId = bosId;
        this.chatTemplate = chatTemplate;
    }

    public static ModelTokenizer load(Path modelDir) {
        Path file = modelDir.resolve("tokenizer.json");
        if (!Files.isRegularFile(file)) {
            throw new UserInputException("model folder " + modelDir + " has no tokenizer.json (Crucible reads the Hugging Face "
                    + "fast-tokenizer format; save it with transformers' tokenizer.save_pretrained)");
        }
        JsonNode config = readJson(modelDir.resolve("tokenizer_config.json"));
        HuggingFaceTokenizer tokenizer;
        try {
            // No truncation or padding here: the runner decides both, and DJL's defaults would cut at 512 tokens.
            tokenizer = HuggingFaceTokenizer.newInstance(file, Map.of("truncation", "false", "padding", "false",
                    "addSpecialTokens", "true", "maxLength", "1000000000"));
        } catch (IOException | RuntimeException e) {
            throw new UserInputException("cannot read " + file + ": " + e.getMessage(), e);
        }
        Map<String, String> special = new LinkedHashMap<>();
        for (String name : new String[] {"bos_token", "eos_token", "unk_token", "pad_token"}) {
            tokenText(config.get(name)).ifPresent(text -> special.put(name, text));
        }
        Optional<Integer> bos = Optional.ofNullable(special.get("bos_token")).flatMap(t -> idOf(tokenizer, t));
        Set<Integer> eos = new LinkedHashSet<>();
        Optional.ofNullable(special.get("eos_token")).flatMap(t -> idOf(tokenizer, t)).ifPresent(eos::add);
        // generation_config.json (and config.json) may list several stop ids, e.g. Llama 3's <|eot_id|>.
        addIds(readJson(modelDir.resolve("generation_config.json")).get("eos_token_id"), eos);
        if (eos.isEmpty()) {
            addIds(readJson(modelDir.resolve("config.json")).get("eos_token_id"), eos);
        }
        int pad = Optional.ofNullable(special.get("pad_token")).flatMap(t -> idOf(tokenizer, t))
                .orElse(eos.isEmpty() ? 0 : eos.iterator().next());
        return new ModelTokenizer(tokenizer, special, java.util.Collections.unmodifiableSet(eos), pad, bos, chatTemplateOf(modelDir, config));
    }

    /** {@code chat_template.jinja} wins over the config's {@code chat_template} (string, or a list of named ones). */
    private static Optional<String> chatTemplateOf(Path modelDir, JsonNode config) {
        Path jinja = modelDir.resolve("chat_template.jinja");
        if (Files.isRegularFile(jinja)) {
            try {
                return Optional.of(Files.readString(jinja));
            } catch (IOException e) {
                throw new UserInputException("cannot read " + jinja + ": " + e.getMessage(), e);
            }
        }
        JsonNode template = config.get("chat_template");
        if (template == null || template.isNull()) {
            return Optional.empty();
        }
        if (template.isTextual()) {
            return Optional.of(template.asText());
        }
        for (JsonNode named : template) {
            if ("default".equals(named.path("name").asText())) {
                return Optional.of(named.path("template").asText());
            }
        }
        return Optional.empty();
    }

    private static Optional<String> tokenText(JsonNode node) {
        if (node == null || node.isNull()) {
            return Optional.empty();
        }
        // Either "<s>" or an AddedToken object {"content": "<s>", ...}.
        return Optional.of(node.isTextual() ? node.asText() : node.path("content").asText()).filter(s -> !s.isEmpty());
    }

    private static void addIds(JsonNode node, Set<Integer> into) {
        if (node == null || node.isNull()) {
            return;
        }
        if (node.isArray()) {
            node.forEach(n -> into.add(n.asInt()));
        } else if (node.isNumber()) {
            into.add(node.asInt());
        }
    }

    private static Optional<Integer> idOf(HuggingFaceTokenizer tokenizer, String token) {
        long[] ids = tokenizer.encode(token, false, false).getIds();
        return ids.length == 1 ? Optional.of((int) ids[0]) : Optional.empty();
    }

    private static JsonNode readJson(Path file) {
        if (!Files.isRegularFile(file)) {
            return JSON.createObjectNode();
        }
        try {
            return JSON.readTree(file.toFile());
        } catch (IOException e) {
            throw new UserInputException(file + " is not valid JSON: " + e.getMessage().lines().findFirst().orElse(""), e);
        }
    }

    /** Encodes text the way {@code tokenizer(text)} does in transformers (special tokens as the tokenizer adds them). */
    public int[] encode(String text) {
        return toInts(tokenizer.encode(text, true, false).getIds());
    }

    /** Encodes text that already carries its special tokens, such as a rendered chat template. */
    public int[] encodeWithoutSpecialTokens(String text) {
        return toInts(tokenizer.encode(text, false, false).getIds());
    }

    public String decode(int[] ids) {
        return tokenizer.decode(Arrays.stream(ids).asLongStream().toArray(), true);
    }

    /** The token ids that end a generated sequence, the tokenizer's own eos first (a stable order). */
    public Set<Integer> eosIds() {
        return eosIds;
    }

    public int padId() {
        return padId;
    }

    public Optional<Integer> bosId() {
        return bosId;
    }

    /** bos/eos/unk/pad as the chat template receives them (unset tokens are absent, as in transformers). */
    public Map<String, String> specialTokens() {
        return Map.copyOf(specialTokens);
    }

    public Optional<String> chatTemplate() {
        return chatTemplate;
    }

    /** The note a run prints when it renders without the system message its template refuses. */
    public static final String SYSTEM_REFUSED_NOTE = "note: the chat template refuses a system message; running without it";

    /** Where this tokenizer tells the user what it changed about a conversation ({@link #SYSTEM_REFUSED_NOTE}). */
    public ModelTokenizer notesTo(Consumer<String> notes) {
        this.notes = notes;
        return this;
    }

    /**
     * Renders a conversation with the model's chat template, as transformers' {@code apply_chat_template} does
     * (special tokens passed by name, unset ones undefined). A template that rejects the conversation (its
     * {@code raise_exception}) is the user's input to fix — except a leading system message: some families'
     * templates (Gemma's) refuse any, and a default system prompt must not fail a study, so the conversation is
     * rendered without it and the note is told.
     */
    public String renderChat(List<Map<String, String>> messages, boolean addGenerationPrompt) {
        ChatTemplate template = compiledTemplate();
        try {
            return template.render(messages, addGenerationPrompt, specialTokens, Map.of());
        } catch (ChatTemplateException e) {
            if (e.reason() == ChatTemplateException.Reason.RAISED_BY_TEMPLATE && messages.size() > 1
                    && "system".equals(messages.getFirst().get("role"))) {
                String rendered;
                try {
                    rendered = template.render(messages.subList(1, messages.size()), addGenerationPrompt,
                            specialTokens, Map.of());
                } catch (ChatTemplateException without) {
                    throw refused(e);
                }
                notes.accept(SYSTEM_REFUSED_NOTE);
                return rendered;
            }
            throw refused(e);
        }
    }

    private static UserInputException refused(ChatTemplateException e) {
        return new UserInputException("the model's chat template refused the conversation: " + e.getMessage(), e);
    }

    /** Chat-renders {@code [system?, user]} with the generation prompt and encodes it (no extra special tokens). */
    public int[] encodeChat(Optional<String> system, String user) {
        return encodeChat(system, user, "");
    }

    /** The same with text appended after the generation prompt, such as a closed thought block. */
    public int[] encodeChat(Optional<String> system, String user, String responsePrefix) {
        List<Map<String, String>> messages = new ArrayList<>();
        system.ifPresent(text -> messages.add(Map.of("role", "system", "content", text)));
        messages.add(Map.of("role", "user", "content", user));
        return encodeWithoutSpecialTokens(renderChat(messages, true) + responsePrefix);
    }

    /** Refuses a model without a chat template, or with one that does not compile, before anything renders with it. */
    public void checkChatTemplate() {
        if (chatTemplate.isEmpty()) {
            throw new UserInputException("the model has no chat template (tokenizer_config.json chat_template or "
                    + "chat_template.jinja), which renders the prompts as chat turns");
        }
        compiledTemplate();
    }

    private synchronized ChatTemplate compiledTemplate() {
        if (compiled == null) {
            String source = chatTemplate.orElseThrow(() -> new UserInputException(
                    "the model has no chat template (tokenizer_config.json chat_template or chat_template.jinja); run without --chat"));
            try {
                compiled = ChatTemplate.compile(source);
            } catch (ChatTemplateException e) {
                throw new UserInputException("the model's chat template does not compile: " + e.getMessage(), e);
            }
        }
        return compiled;
    }

    private static int[] toInts(long[] ids) {
        int[] out = new int[ids.length];
        for (int i = 0; i < ids.length; i++) {
            out[i] = Math.toIntExact(ids[i]);
        }
        return out;
    }

    @Override
    public void close() {
        tokenizer.close();
    }
}
