package dev.crucible.runner.finetune;

import dev.crucible.runner.text.ModelTokenizer;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** What turning rows into training ids needs from a model's tokenizer: its chat template, its ids, its EOS token. */
public interface ChatFormat {

    /** The conversation rendered by the model's chat template, as transformers' {@code apply_chat_template}. */
    String render(List<Map<String, String>> messages, boolean addGenerationPrompt);

    /** Ids of rendered text (which already carries its special tokens). */
    int[] encode(String text);

    /** Ids of raw text, with the special tokens the tokenizer adds (such as BOS). */
    int[] encodePlain(String text);

    /** Whether the model has a chat template at all. */
    boolean hasTemplate();

    /** The tokenizer's EOS token as text ({@code </s>}), which plain prompt/completion rows end with. */
    Optional<String> eosToken();

    static ChatFormat of(ModelTokenizer tokenizer) {
        return new ChatFormat() {
            @Override
            public String render(List<Map<String, String>> messages, boolean addGenerationPrompt) {
                return tokenizer.renderChat(messages, addGenerationPrompt);
            }

            @Override
            public int[] encode(String text) {
                return tokenizer.encodeWithoutSpecialTokens(text);
            }

            @Override
            public int[] encodePlain(String text) {
                return tokenizer.encode(text);
            }

            @Override
            public boolean hasTemplate() {
                return tokenizer.chatTemplate().isPresent();
            }

            @Override
            public Optional<String> eosToken() {
                return Optional.ofNullable(tokenizer.specialTokens().get("eos_token"));
            }
        };
    }
}
