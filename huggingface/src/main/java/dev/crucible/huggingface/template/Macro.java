package dev.crucible.huggingface.template;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A macro bound to the scope it was defined in. Calling it renders its body in a new scope below that one and
 * returns the text; missing arguments take their defaults (evaluated in the macro's scope, so they may refer to
 * earlier parameters) or are undefined.
 */
final class Macro implements TemplateCallable {

    /**
     * What the {@code {% macro %}} (or call block) tag declares.
     *
     * @param defaults one per trailing parameter that has a default
     * @param catchesVarargs whether the body reads {@code varargs}, which makes extra positional arguments legal
     * @param catchesKwargs whether the body reads {@code kwargs}, which makes unknown keyword arguments legal
     * @param usesCaller whether the body reads {@code caller}
     */
    record Signature(String name, List<String> parameters, List<Expr> defaults, List<Stmt> body,
                     boolean catchesVarargs, boolean catchesKwargs, boolean usesCaller, FrameEntry frame) {
    }

    private final Signature signature;
    private final Scope closure;

    Macro(Signature signature, Scope closure) {
        this.signature = signature;
        this.closure = closure;
    }

    @Override
    public String name() {
        return signature.name();
    }

    @Override
    public Object call(RenderState state, Arguments arguments) {
        Scope scope = signature.frame().enter(closure);
        List<String> parameters = signature.parameters();
        List<Object> positional = arguments.positional();
        if (positional.size() > parameters.size() && !signature.catchesVarargs()) {
            throw ChatTemplateException.typeError("macro " + Py.repr(name()) + " takes not more than "
                    + parameters.size() + " argument(s)");
        }
        Map<String, Object> keywords = new LinkedHashMap<>(arguments.keywords());
        int firstDefault = parameters.size() - signature.defaults().size();
        for (int i = 0; i < parameters.size(); i++) {
            String parameter = parameters.get(i);
            if (i < positional.size()) {
                if (keywords.containsKey(parameter)) {
                    throw ChatTemplateException.typeError("macro " + Py.repr(name())
                            + " got multiple values for argument " + Py.repr(parameter));
                }
                scope.set(parameter, positional.get(i));
            } else if (keywords.containsKey(parameter)) {
                scope.set(parameter, keywords.remove(parameter));
            } else if (i >= firstDefault) {
                scope.set(parameter, signature.defaults().get(i - firstDefault).eval(scope));
            } else {
                scope.set(parameter, Undefined.withHint("parameter " + Py.repr(parameter) + " was not provided"));
            }
        }
        if (signature.usesCaller()) {
            Object caller = keywords.remove("caller");
            scope.set("caller", caller != null ? caller : Undefined.withHint("No caller defined"));
        }
        if (signature.catchesVarargs()) {
            List<Object> extra = positional.size() > parameters.size()
                    ? new ArrayList<>(positional.subList(parameters.size(), positional.size())) : List.of();
            scope.set("varargs", PyTuple.copyOf(extra));
        }
        if (signature.catchesKwargs()) {
            scope.set("kwargs", new LinkedHashMap<Object, Object>(keywords));
        } else if (!keywords.isEmpty()) {
            throw ChatTemplateException.typeError("macro " + Py.repr(name()) + " takes no keyword argument "
                    + Py.repr(keywords.keySet().iterator().next()));
        }
        return state.capture(() -> Stmt.run(signature.body(), scope));
    }
}
