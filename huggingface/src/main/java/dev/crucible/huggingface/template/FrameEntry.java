package dev.crucible.huggingface.template;

import java.util.Collection;

/**
 * How a Jinja frame (the template body, a loop iteration, a macro call, a with/set/filter/call block) starts:
 * the names it binds as "missing" on entry, so that they read as undefined until the frame assigns them, even
 * when an outer scope or a render variable has that name. {@link ScopeAnalysis} fills it in after parsing.
 */
final class FrameEntry {

    private static final String[] NONE = new String[0];

    private String[] missingOnEntry = NONE;

    void setMissingOnEntry(Collection<String> names) {
        missingOnEntry = names.toArray(NONE);
    }

    /** A new scope for this frame below {@code parent}. */
    Scope enter(Scope parent) {
        Scope scope = parent.child();
        bindMissing(scope);
        return scope;
    }

    void bindMissing(Scope scope) {
        for (String name : missingOnEntry) {
            scope.set(name, Scope.MISSING);
        }
    }
}
