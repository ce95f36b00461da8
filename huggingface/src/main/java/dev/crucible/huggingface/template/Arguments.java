package dev.crucible.huggingface.template;

import java.util.List;
import java.util.Map;

/** The evaluated arguments of one call: positional values and keyword values (both may hold null = None). */
record Arguments(List<Object> positional, Map<String, Object> keywords) {

    static final Arguments NONE = new Arguments(List.of(), Map.of());

    /** Marks a parameter without default: leaving it out is an error. */
    static final Object REQUIRED = new Object();

    /**
     * Binds these arguments to Python-style parameters.
     *
     * @param defaults one per name: the default value, or {@link #REQUIRED}
     * @return one value per parameter
     */
    Object[] bind(String function, String[] names, Object... defaults) {
        if (positional.size() > names.length) {
            throw ChatTemplateException.typeError(function + "() takes at most " + names.length + " argument"
                    + (names.length == 1 ? "" : "s") + " (" + positional.size() + " given)");
        }
        Object[] values = new Object[names.length];
        boolean[] given = new boolean[names.length];
        for (int i = 0; i < positional.size(); i++) {
            values[i] = positional.get(i);
            given[i] = true;
        }
        for (Map.Entry<String, Object> keyword : keywords.entrySet()) {
            int index = indexOf(names, keyword.getKey());
            if (index < 0) {
                throw ChatTemplateException.typeError(function + "() got an unexpected keyword argument "
                        + Py.repr(keyword.getKey()));
            }
            if (given[index]) {
                throw ChatTemplateException.typeError(function + "() got multiple values for argument "
                        + Py.repr(keyword.getKey()));
            }
            values[index] = keyword.getValue();
            given[index] = true;
        }
        for (int i = 0; i < names.length; i++) {
            if (!given[i]) {
                if (defaults[i] == REQUIRED) {
                    throw ChatTemplateException.typeError(function + "() missing required argument "
                            + Py.repr(names[i]));
                }
                values[i] = defaults[i];
            }
        }
        return values;
    }

    /** These arguments without the first {@code count} positional ones. */
    Arguments dropPositional(int count) {
        return new Arguments(positional.subList(Math.min(count, positional.size()), positional.size()), keywords);
    }

    private static int indexOf(String[] names, String name) {
        for (int i = 0; i < names.length; i++) {
            if (names[i].equals(name)) {
                return i;
            }
        }
        return -1;
    }
}
