package dev.crucible.huggingface.template;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A compiled statement: text, an output tag or a block tag. */
sealed interface Stmt {

    /** How a statement list ended: normally, or by {@code break}/{@code continue} inside a loop. */
    enum Flow { NORMAL, BREAK, CONTINUE }

    Flow exec(Scope scope);

    /** The template line the statement starts on, for error messages. */
    int line();

    /** Runs statements in order until one breaks or continues the enclosing loop. */
    static Flow run(List<Stmt> body, Scope scope) {
        for (int i = 0, n = body.size(); i < n; i++) {
            Stmt statement = body.get(i);
            Flow flow;
            try {
                flow = statement.exec(scope);
            } catch (ChatTemplateException e) {
                throw e.atLine(statement.line());
            }
            if (flow != Flow.NORMAL) {
                return flow;
            }
        }
        return Flow.NORMAL;
    }

    record Text(String text, int line) implements Stmt {
        @Override
        public Flow exec(Scope scope) {
            scope.state.out.append(text);
            return Flow.NORMAL;
        }
    }

    /** {@code {{ value }}}: prints Python's str() of the value (None prints "None", undefined nothing). */
    record Print(Expr value, int line) implements Stmt {
        @Override
        public Flow exec(Scope scope) {
            Object result = value.eval(scope);
            scope.state.out.append(result instanceof String s ? s : Py.str(result));
            return Flow.NORMAL;
        }
    }

    /** if / elif / else: no scope of its own, so a set inside is visible after endif. */
    record If(List<Expr> tests, List<List<Stmt>> bodies, List<Stmt> otherwise, int line) implements Stmt {
        @Override
        public Flow exec(Scope scope) {
            for (int i = 0; i < tests.size(); i++) {
                if (Py.truthy(tests.get(i).eval(scope))) {
                    return run(bodies.get(i), scope);
                }
            }
            return run(otherwise, scope);
        }
    }

    /**
     * A for loop. Each iteration gets a fresh scope below the enclosing one, so assignments in the body are gone at
     * the next iteration and after the loop. The optional filter ({@code for x in xs if cond}) is applied first, so
     * {@code loop.last} and {@code loop.length} count only the items that pass. The else body runs when no item
     * was visited.
     */
    record For(Target target, Expr iterable, Expr filter, boolean recursive, List<Stmt> body, FrameEntry bodyFrame,
               List<Stmt> otherwise, FrameEntry elseFrame, int line) implements Stmt {
        @Override
        public Flow exec(Scope scope) {
            loop(scope, iterable.eval(scope), 0);
            return Flow.NORMAL;
        }

        private void loop(Scope scope, Object source, int depth0) {
            List<?> items = Py.iterate(source);
            if (filter != null) {
                List<Object> passed = new ArrayList<>(items.size());
                for (Object item : items) {
                    Scope probe = scope.child();
                    target.assign(probe, item);
                    if (Py.truthy(filter.eval(probe))) {
                        passed.add(item);
                    }
                }
                items = passed;
            }
            LoopContext loop = new LoopContext(items, depth0, !recursive ? null
                    : children -> scope.state.capture(() -> loop(scope, children, depth0 + 1)));
            for (int i = 0; i < items.size(); i++) {
                Scope iteration = bodyFrame.enter(scope);
                target.assign(iteration, items.get(i));
                loop.advanceTo(i);
                iteration.set("loop", loop);
                if (run(body, iteration) == Flow.BREAK) {
                    break;
                }
            }
            if (items.isEmpty()) {
                run(otherwise, elseFrame.enter(scope));
            }
        }
    }

    /** {@code {% set target = value %}}, or a set block whose value is its rendered (and filtered) body. */
    record Assign(Target target, Expr value, int line) implements Stmt {
        @Override
        public Flow exec(Scope scope) {
            target.assign(scope, value.eval(scope));
            return Flow.NORMAL;
        }
    }

    /** Defines a macro in the current scope; it sees the variables of that scope when called. */
    record MacroDefinition(Macro.Signature signature, int line) implements Stmt {
        @Override
        public Flow exec(Scope scope) {
            scope.set(signature.name(), new Macro(signature, scope));
            return Flow.NORMAL;
        }
    }

    /** {@code {% call(args) macro(...) %}body{% endcall %}}: the body becomes the macro's {@code caller()}. */
    record CallBlock(Expr.Call call, Macro.Signature caller, int line) implements Stmt {
        @Override
        public Flow exec(Scope scope) {
            Object function = call.callee().eval(scope);
            Arguments arguments = call.args().evaluate(scope);
            Map<String, Object> keywords = new LinkedHashMap<>(arguments.keywords());
            keywords.put("caller", new Macro(caller, scope));
            Object result = Expr.Call.invoke(function, new Arguments(arguments.positional(), keywords),
                    scope.state);
            scope.state.out.append(Py.str(result));
            return Flow.NORMAL;
        }
    }

    /** {@code {% with a = 1 %}...{% endwith %}}: values computed outside, bound in a scope of their own. */
    record With(List<Target> targets, List<Expr> values, List<Stmt> body, FrameEntry frame, int line)
            implements Stmt {
        @Override
        public Flow exec(Scope scope) {
            Scope inner = frame.enter(scope);
            for (int i = 0; i < targets.size(); i++) {
                targets.get(i).assign(inner, values.get(i).eval(scope));
            }
            return run(body, inner);
        }
    }

    /** A body with a scope of its own and no other effect, such as transformers' {@code {% generation %}}. */
    record Scoped(List<Stmt> body, FrameEntry frame, int line) implements Stmt {
        @Override
        public Flow exec(Scope scope) {
            return run(body, frame.enter(scope));
        }
    }

    /**
     * {@code {% block name %}} in a template that extends nothing: rendered in place, seeing the template's
     * top-level variables but (unless {@code scoped}) not those of enclosing loops.
     */
    record Block(List<Stmt> body, boolean scoped, FrameEntry frame, int line) implements Stmt {
        @Override
        public Flow exec(Scope scope) {
            run(body, frame.enter(scoped ? scope : scope.root()));
            return Flow.NORMAL;
        }
    }

    record Break(int line) implements Stmt {
        @Override
        public Flow exec(Scope scope) {
            return Flow.BREAK;
        }
    }

    record Continue(int line) implements Stmt {
        @Override
        public Flow exec(Scope scope) {
            return Flow.CONTINUE;
        }
    }
}
