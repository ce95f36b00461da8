package dev.crucible.huggingface.template;

import java.time.Clock;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A Hugging Face {@code chat_template}, compiled once and rendered exactly as Python transformers renders it.
 *
 * <p>transformers runs the template in Jinja2's immutable sandbox with {@code trim_blocks}, {@code lstrip_blocks}
 * and the loop controls ({@code break}/{@code continue}), no autoescaping, and one trailing newline of the source
 * dropped; it adds {@code raise_exception(message)}, {@code strftime_now(format)} and a {@code tojson} that is
 * Python's {@code json.dumps(..., ensure_ascii=False)}. This engine implements that environment: Jinja's
 * statements, scoping and whitespace rules, Python's semantics for the values (str methods, slicing, truthiness,
 * {@code str()} of None, lists and dicts), and Jinja's undefined values.
 *
 * <p>Compiling is the expensive part and its result is cached by source text; a compiled template is immutable and
 * may be rendered from several threads at once.
 */
public final class ChatTemplate {

    private static final int CACHE_SIZE = 32;
    private static final Map<String, Parser.TemplateBody> COMPILED = Collections.synchronizedMap(
            new LinkedHashMap<>(CACHE_SIZE, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<String, Parser.TemplateBody> eldest) {
                    return size() > CACHE_SIZE;
                }
            });

    private final String source;
    private final Parser.TemplateBody body;
    private final Clock clock;

    private ChatTemplate(String source, Parser.TemplateBody body, Clock clock) {
        this.source = source;
        this.body = body;
        this.clock = clock;
    }

    /**
     * Compiles a template whose {@code strftime_now} reads the system clock in the default time zone, as
     * transformers' {@code datetime.now()} does.
     *
     * @throws ChatTemplateException with reason {@code SYNTAX_ERROR} when the source is not a valid template
     */
    public static ChatTemplate compile(String source) {
        return compile(source, Clock.systemDefaultZone());
    }

    /**
     * Compiles a template whose {@code strftime_now} reads {@code clock} (tests fix the date with it).
     *
     * @throws ChatTemplateException with reason {@code SYNTAX_ERROR} when the source is not a valid template
     */
    public static ChatTemplate compile(String source, Clock clock) {
        Objects.requireNonNull(source, "source is null");
        Objects.requireNonNull(clock, "clock is null");
        Parser.TemplateBody body = COMPILED.get(source);
        if (body == null) {
            try {
                body = Parser.parse(source);
            } catch (StackOverflowError e) {
                throw ChatTemplateException.syntax("expressions or blocks are nested too deeply", 0);
            }
            COMPILED.put(source, body);
        }
        return new ChatTemplate(source, body, clock);
    }

    /** The template source as given to {@link #compile(String)}. */
    public String source() {
        return source;
    }

    /**
     * Renders with exactly these variables. Values are Strings, Numbers, Booleans, Lists, Maps (iteration order is
     * kept: {@code tojson} and {@code .items()} follow it) and null for Python's None; a name that is not in the map
     * is undefined in the template.
     *
     * @throws ChatTemplateException when the template calls {@code raise_exception} (the message is exactly the
     *     template's) or fails while rendering
     */
    public String render(Map<String, ?> variables) {
        Objects.requireNonNull(variables, "variables is null");
        RenderState state = new RenderState(clock, 1024);
        try {
            Scope root = Scope.root(state, variables);
            body.frame().bindMissing(root);
            Stmt.run(body.statements(), root);
        } catch (StackOverflowError e) {
            // Deep macro recursion on a small thread stack: report it like Python's recursion limit.
            throw ChatTemplateException.runtime("RecursionError", "maximum recursion depth exceeded");
        }
        return state.out.toString();
    }

    /** Renders a conversation the way transformers' {@code apply_chat_template} passes it to the template. */
    public String render(ChatTemplateInput input) {
        return render(input.toVariables());
    }

    /**
     * Renders a conversation without tools or documents.
     *
     * @param specialTokens the tokenizer's special tokens by name ({@code bos_token}, {@code eos_token}, ...); a null
     *     value leaves that name undefined, as transformers omits unset tokens
     * @param extraVariables further template variables, such as Qwen3's {@code enable_thinking}
     */
    public String render(List<? extends Map<String, ?>> messages, boolean addGenerationPrompt,
                         Map<String, ?> specialTokens, Map<String, ?> extraVariables) {
        return render(ChatTemplateInput.of(messages, addGenerationPrompt)
                .withSpecialTokens(specialTokens)
                .withExtraVariables(extraVariables));
    }
}
