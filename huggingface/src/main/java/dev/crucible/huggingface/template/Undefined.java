package dev.crucible.huggingface.template;

/**
 * Jinja's default {@code Undefined}: what a missing variable, key, attribute or index evaluates to.
 *
 * <p>It prints as the empty string, is falsy, iterates as empty and has length 0; comparing it with {@code ==}
 * is true only against another undefined value. Any other use (attribute or item access, arithmetic, ordering,
 * calling) fails with the message Jinja would give. The message is built only when that happens, because
 * templates probe missing keys ({@code message.tool_calls}) on every turn.
 */
final class Undefined {

    private static final Object NO_OWNER = new Object();

    private final String hint;
    private final Object owner;
    private final Object name;
    private final String errorType;

    private Undefined(String hint, Object owner, Object name, String errorType) {
        this.hint = hint;
        this.owner = owner;
        this.name = name;
        this.errorType = errorType;
    }

    /** A variable that is neither a render variable, nor set by the template, nor a global. */
    static Undefined variable(String name) {
        return new Undefined(null, NO_OWNER, name, "UndefinedError");
    }

    /** A missing attribute, key or index of {@code owner}. */
    static Undefined member(Object owner, Object name) {
        return new Undefined(null, owner, name, "UndefinedError");
    }

    /** An undefined value that explains itself, such as "No first item, sequence was empty.". */
    static Undefined withHint(String hint) {
        return new Undefined(hint, NO_OWNER, null, "UndefinedError");
    }

    /** What the immutable sandbox returns for attributes that would mutate a list or dict. */
    static Undefined unsafe(Object owner, String attribute) {
        return new Undefined("access to attribute " + Py.repr(attribute) + " of " + Py.repr(Py.typeName(owner))
                + " object is unsafe.", owner, attribute, "SecurityError");
    }

    String message() {
        if (hint != null) {
            return hint;
        }
        if (owner == NO_OWNER) {
            return Py.repr(name) + " is undefined";
        }
        if (!(name instanceof String)) {
            return Py.objectTypeRepr(owner) + " has no element " + Py.repr(name);
        }
        return Py.repr(Py.objectTypeRepr(owner)) + " has no attribute " + Py.repr(name);
    }

    /** The error for using this value in a way only a defined value allows. */
    ChatTemplateException error() {
        return ChatTemplateException.runtime(errorType, message());
    }

    @Override
    public String toString() {
        return "";
    }
}
