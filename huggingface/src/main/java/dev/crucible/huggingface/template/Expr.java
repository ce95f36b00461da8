package dev.crucible.huggingface.template;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A compiled expression; evaluating it never changes the template, so one tree serves every render. */
sealed interface Expr {

    Object eval(Scope scope);

    record Const(Object value) implements Expr {
        @Override
        public Object eval(Scope scope) {
            return value;
        }
    }

    record Name(String name) implements Expr {
        @Override
        public Object eval(Scope scope) {
            return scope.resolve(name);
        }
    }

    record ListLiteral(List<Expr> items) implements Expr {
        @Override
        public Object eval(Scope scope) {
            List<Object> values = new ArrayList<>(items.size());
            for (Expr item : items) {
                values.add(item.eval(scope));
            }
            return values;
        }
    }

    record TupleLiteral(List<Expr> items) implements Expr {
        @Override
        public Object eval(Scope scope) {
            Object[] values = new Object[items.size()];
            for (int i = 0; i < values.length; i++) {
                values[i] = items.get(i).eval(scope);
            }
            return new PyTuple(values);
        }
    }

    record DictLiteral(List<Expr> keys, List<Expr> values) implements Expr {
        @Override
        public Object eval(Scope scope) {
            Map<Object, Object> map = new LinkedHashMap<>();
            for (int i = 0; i < keys.size(); i++) {
                Object key = keys.get(i).eval(scope);
                Py.requireHashable(key);
                map.put(key, values.get(i).eval(scope));
            }
            return map;
        }
    }

    /** {@code target.name}. */
    record Getattr(Expr target, String name) implements Expr {
        @Override
        public Object eval(Scope scope) {
            return Py.getattr(target.eval(scope), name);
        }
    }

    /** {@code target[key]}, where key may be a {@link Slice}. */
    record Getitem(Expr target, Expr key) implements Expr {
        @Override
        public Object eval(Scope scope) {
            Object container = target.eval(scope);
            return Py.getitem(container, key.eval(scope));
        }
    }

    record Slice(Expr start, Expr stop, Expr step) implements Expr {
        @Override
        public Object eval(Scope scope) {
            return new PySlice(bound(start, scope), bound(stop, scope), bound(step, scope));
        }

        private static Object bound(Expr expr, Scope scope) {
            return expr == null ? null : expr.eval(scope);
        }
    }

    record Call(Expr callee, CallArgs args) implements Expr {
        @Override
        public Object eval(Scope scope) {
            Object function = callee.eval(scope);
            return invoke(function, args.evaluate(scope), scope.state);
        }

        static Object invoke(Object function, Arguments arguments, RenderState state) {
            if (function instanceof TemplateCallable callable) {
                return callable.call(state, arguments);
            }
            if (function instanceof Undefined u) {
                throw u.error();
            }
            throw ChatTemplateException.typeError(Py.repr(Py.typeName(function)) + " object is not callable");
        }
    }

    /** {@code input | name(args)}; a filter unknown at compile time fails only when evaluated, as in Jinja. */
    record Filter(Expr input, String name, Filters.Filter function, CallArgs args) implements Expr {
        @Override
        public Object eval(Scope scope) {
            if (function == null) {
                throw ChatTemplateException.runtime("TemplateAssertionError", "No filter named " + Py.repr(name)
                        + ".");
            }
            return function.apply(scope.state, input.eval(scope), args.evaluate(scope));
        }
    }

    /** {@code input is name(args)}. */
    record Test(Expr input, String name, Tests.Test function, CallArgs args) implements Expr {
        @Override
        public Object eval(Scope scope) {
            if (function == null) {
                throw ChatTemplateException.runtime("TemplateAssertionError", "No test named " + Py.repr(name)
                        + ".");
            }
            return function.test(input.eval(scope), args.evaluate(scope));
        }
    }

    record Not(Expr operand) implements Expr {
        @Override
        public Object eval(Scope scope) {
            return !Py.truthy(operand.eval(scope));
        }
    }

    record Negate(Expr operand) implements Expr {
        @Override
        public Object eval(Scope scope) {
            return PyArithmetic.negate(operand.eval(scope));
        }
    }

    record Plus(Expr operand) implements Expr {
        @Override
        public Object eval(Scope scope) {
            return PyArithmetic.plus(operand.eval(scope));
        }
    }

    enum Operator {
        ADD, SUB, MUL, DIV, FLOORDIV, MOD, POW;

        Object apply(Object a, Object b) {
            return switch (this) {
                case ADD -> PyArithmetic.add(a, b);
                case SUB -> PyArithmetic.sub(a, b);
                case MUL -> PyArithmetic.mul(a, b);
                case DIV -> PyArithmetic.truediv(a, b);
                case FLOORDIV -> PyArithmetic.floordiv(a, b);
                case MOD -> PyArithmetic.mod(a, b);
                case POW -> PyArithmetic.pow(a, b);
            };
        }
    }

    record Binary(Operator operator, Expr left, Expr right) implements Expr {
        @Override
        public Object eval(Scope scope) {
            Object a = left.eval(scope);
            return operator.apply(a, right.eval(scope));
        }
    }

    /** Python's {@code and}: the first falsy operand, else the last. */
    record And(Expr left, Expr right) implements Expr {
        @Override
        public Object eval(Scope scope) {
            Object a = left.eval(scope);
            return Py.truthy(a) ? right.eval(scope) : a;
        }
    }

    /** Python's {@code or}: the first truthy operand, else the last. */
    record Or(Expr left, Expr right) implements Expr {
        @Override
        public Object eval(Scope scope) {
            Object a = left.eval(scope);
            return Py.truthy(a) ? a : right.eval(scope);
        }
    }

    /** {@code a ~ b ~ c}: the str() of each, joined. */
    record Concat(List<Expr> parts) implements Expr {
        @Override
        public Object eval(Scope scope) {
            StringBuilder out = new StringBuilder();
            for (Expr part : parts) {
                out.append(Py.str(part.eval(scope)));
            }
            return out.toString();
        }
    }

    /** A chain such as {@code a < b <= c}, true when every link holds (evaluation stops at the first false). */
    record Compare(Expr first, List<String> operators, List<Expr> operands) implements Expr {
        @Override
        public Object eval(Scope scope) {
            Object left = first.eval(scope);
            for (int i = 0; i < operators.size(); i++) {
                Object right = operands.get(i).eval(scope);
                if (!Py.compare(operators.get(i), left, right)) {
                    return false;
                }
                left = right;
            }
            return true;
        }
    }

    /** {@code then if test else otherwise}; without else the false branch is undefined. */
    record Conditional(Expr test, Expr then, Expr otherwise, int line) implements Expr {
        @Override
        public Object eval(Scope scope) {
            if (Py.truthy(test.eval(scope))) {
                return then.eval(scope);
            }
            if (otherwise == null) {
                return Undefined.withHint("the inline if-expression on line " + line
                        + " evaluated to false and no else section was defined.");
            }
            return otherwise.eval(scope);
        }
    }

    /** The rendered text of a statement body, run in its own scope: the value of set and filter blocks. */
    record BlockOutput(List<Stmt> body, FrameEntry frame) implements Expr {
        @Override
        public Object eval(Scope scope) {
            Scope inner = frame.enter(scope);
            return scope.state.capture(() -> Stmt.run(body, inner));
        }
    }

    /** The argument list of a call, filter or test, evaluated left to right. */
    record CallArgs(List<Expr> positional, List<String> keywordNames, List<Expr> keywordValues, Expr starArgs,
                    Expr starKwargs) {

        static final CallArgs NONE = new CallArgs(List.of(), List.of(), List.of(), null, null);

        boolean isEmpty() {
            return positional.isEmpty() && keywordNames.isEmpty() && starArgs == null && starKwargs == null;
        }

        Arguments evaluate(Scope scope) {
            if (isEmpty()) {
                return Arguments.NONE;
            }
            List<Object> values = new ArrayList<>(positional.size());
            for (Expr expr : positional) {
                values.add(expr.eval(scope));
            }
            if (starArgs != null) {
                values.addAll(Py.iterate(starArgs.eval(scope)));
            }
            Map<String, Object> keywords = keywordNames.isEmpty() && starKwargs == null ? Map.of()
                    : new LinkedHashMap<>();
            for (int i = 0; i < keywordNames.size(); i++) {
                keywords.put(keywordNames.get(i), keywordValues.get(i).eval(scope));
            }
            if (starKwargs != null) {
                Object extra = starKwargs.eval(scope);
                if (!(extra instanceof Map<?, ?> map)) {
                    throw ChatTemplateException.typeError("argument after ** must be a mapping, not "
                            + Py.typeName(extra));
                }
                for (Map.Entry<?, ?> entry : map.entrySet()) {
                    keywords.put(Py.str(entry.getKey()), entry.getValue());
                }
            }
            return new Arguments(values, keywords);
        }
    }
}
