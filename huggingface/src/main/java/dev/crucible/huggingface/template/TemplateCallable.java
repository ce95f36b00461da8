package dev.crucible.huggingface.template;

/** Something a template can call: a global function, a bound Python method, a macro, {@code loop.cycle}. */
interface TemplateCallable {

    Object call(RenderState state, Arguments arguments);

    /** The name used in error messages. */
    String name();
}
