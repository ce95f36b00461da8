package dev.crucible.huggingface.template;

import dev.crucible.api.UserInputException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * What transformers' {@code apply_chat_template} hands to a chat template: {@code messages}, {@code tools},
 * {@code documents}, {@code add_generation_prompt}, the tokenizer's special tokens and any extra variables.
 *
 * @param messages the conversation: maps with {@code role}, {@code content} and optionally {@code tool_calls} etc.
 * @param tools JSON-schema tool definitions, or null (the template then sees {@code tools} as None)
 * @param documents retrieval documents, or null (None)
 * @param specialTokens token strings by name ({@code bos_token}, ...); null values are left out, so the template
 *     sees them as undefined, as transformers' {@code special_tokens_map} omits unset tokens
 * @param extraVariables further variables (Qwen3's {@code enable_thinking}); they override special tokens of the
 *     same name
 */
public record ChatTemplateInput(List<? extends Map<String, ?>> messages, List<? extends Map<String, ?>> tools,
                                List<? extends Map<String, ?>> documents, boolean addGenerationPrompt,
                                Map<String, ?> specialTokens, Map<String, ?> extraVariables) {

    private static final Set<String> RESERVED = Set.of("messages", "tools", "documents", "add_generation_prompt");

    public ChatTemplateInput {
        Objects.requireNonNull(messages, "messages is null");
        messages = Collections.unmodifiableList(messages);
        tools = tools == null ? null : Collections.unmodifiableList(tools);
        documents = documents == null ? null : Collections.unmodifiableList(documents);
        specialTokens = specialTokens == null ? Map.of() : Collections.unmodifiableMap(specialTokens);
        extraVariables = extraVariables == null ? Map.of() : Collections.unmodifiableMap(extraVariables);
        for (String name : extraVariables.keySet()) {
            if (RESERVED.contains(name)) {
                throw new UserInputException("the chat-template variable '" + name
                        + "' is set from the conversation itself; remove it from the extra template variables");
            }
        }
    }

    /** A conversation without tools, documents, special tokens or extra variables. */
    public static ChatTemplateInput of(List<? extends Map<String, ?>> messages, boolean addGenerationPrompt) {
        return new ChatTemplateInput(messages, null, null, addGenerationPrompt, Map.of(), Map.of());
    }

    public ChatTemplateInput withTools(List<? extends Map<String, ?>> newTools) {
        return new ChatTemplateInput(messages, newTools, documents, addGenerationPrompt, specialTokens,
                extraVariables);
    }

    public ChatTemplateInput withDocuments(List<? extends Map<String, ?>> newDocuments) {
        return new ChatTemplateInput(messages, tools, newDocuments, addGenerationPrompt, specialTokens,
                extraVariables);
    }

    public ChatTemplateInput withSpecialTokens(Map<String, ?> newSpecialTokens) {
        return new ChatTemplateInput(messages, tools, documents, addGenerationPrompt, newSpecialTokens,
                extraVariables);
    }

    public ChatTemplateInput withExtraVariables(Map<String, ?> newExtraVariables) {
        return new ChatTemplateInput(messages, tools, documents, addGenerationPrompt, specialTokens,
                newExtraVariables);
    }

    /** The template variables, named and combined as transformers names and combines them. */
    public Map<String, Object> toVariables() {
        Map<String, Object> variables = new LinkedHashMap<>();
        specialTokens.forEach((name, token) -> {
            if (token != null) {
                variables.put(name, token);
            }
        });
        variables.putAll(extraVariables);
        variables.put("messages", messages);
        variables.put("tools", tools);
        variables.put("documents", documents);
        variables.put("add_generation_prompt", addGenerationPrompt);
        return variables;
    }
}
