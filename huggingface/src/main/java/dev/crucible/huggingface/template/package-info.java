/**
 * Hugging Face chat templates rendered exactly as Python transformers renders them.
 *
 * <p>{@link ChatTemplate#compile(String)} turns a {@code chat_template} into an immutable
 * tree (lexer, parser, then Jinja's compile-time scope analysis); rendering walks that tree with Python's value
 * semantics. The environment is the one transformers builds: Jinja2's immutable sandbox with trim_blocks,
 * lstrip_blocks and loop controls, no autoescaping, {@code raise_exception}, {@code strftime_now} and a
 * {@code tojson} that is {@code json.dumps(..., ensure_ascii=False)}. Not offered: template inheritance and
 * includes ({@code extends}, {@code include}, {@code import}), autoescaping, and the filters that make no sense in a
 * prompt (random, urlize, xmlattr, ...).
 */
package dev.crucible.huggingface.template;
