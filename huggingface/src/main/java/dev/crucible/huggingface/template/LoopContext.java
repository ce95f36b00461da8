package dev.crucible.huggingface.template;

import java.util.List;
import java.util.function.Function;

/**
 * The {@code loop} variable inside a for loop. One object serves the whole loop and advances with it, as Jinja's
 * does; its counts refer to the items that passed the loop's {@code if} filter.
 */
final class LoopContext implements TemplateCallable {

    private static final Object NOT_SEEN = new Object();

    private final List<?> items;
    private final int depth0;
    private final Function<Object, String> recursion;
    private int index0;
    private Object lastChangedValue = NOT_SEEN;

    /**
     * @param recursion renders the loop body over other items one level deeper; null unless the loop is
     *     declared {@code recursive}
     */
    LoopContext(List<?> items, int depth0, Function<Object, String> recursion) {
        this.items = items;
        this.depth0 = depth0;
        this.recursion = recursion;
    }

    void advanceTo(int index) {
        this.index0 = index;
    }

    int index0() {
        return index0;
    }

    int length() {
        return items.size();
    }

    Object attribute(String name) {
        int length = items.size();
        return switch (name) {
            case "index" -> (long) index0 + 1;
            case "index0" -> (long) index0;
            case "revindex" -> (long) (length - index0);
            case "revindex0" -> (long) (length - index0 - 1);
            case "first" -> index0 == 0;
            case "last" -> index0 == length - 1;
            case "length" -> (long) length;
            case "depth" -> (long) depth0 + 1;
            case "depth0" -> (long) depth0;
            case "previtem" -> index0 > 0 ? items.get(index0 - 1) : Undefined.withHint("there is no previous item");
            case "nextitem" -> index0 + 1 < length ? items.get(index0 + 1)
                    : Undefined.withHint("there is no next item");
            case "cycle", "changed" -> new Method(this, name);
            default -> Undefined.member(this, name);
        };
    }

    /** {@code loop(children)} in a recursive loop: the body rendered over {@code children}. */
    @Override
    public Object call(RenderState state, Arguments arguments) {
        if (recursion == null) {
            throw ChatTemplateException.typeError(
                    "Tried to call non recursive loop.  Maybe you forgot the 'recursive' modifier.");
        }
        Object[] bound = arguments.bind("loop", new String[] {"iterable"}, Arguments.REQUIRED);
        return recursion.apply(bound[0]);
    }

    @Override
    public String name() {
        return "loop";
    }

    private record Method(LoopContext loop, String method) implements TemplateCallable {

        @Override
        public Object call(RenderState state, Arguments arguments) {
            if (!arguments.keywords().isEmpty()) {
                throw ChatTemplateException.typeError("loop." + method + "() takes no keyword arguments");
            }
            List<Object> values = arguments.positional();
            if (method.equals("cycle")) {
                if (values.isEmpty()) {
                    throw ChatTemplateException.typeError("no items for cycling given");
                }
                return values.get(loop.index0 % values.size());
            }
            Object current = values.size() == 1 ? values.get(0) : PyTuple.copyOf(values);
            if (loop.lastChangedValue != NOT_SEEN && Py.eq(loop.lastChangedValue, current)) {
                return false;
            }
            loop.lastChangedValue = current;
            return true;
        }

        @Override
        public String name() {
            return "loop." + method;
        }
    }
}
