package dev.crucible.huggingface.template;

import java.util.AbstractList;
import java.util.List;
import java.util.RandomAccess;

/**
 * A Python tuple: an immutable list that prints with parentheses. Tuples come from {@code (a, b)} literals,
 * {@code dict.items()} and the {@code items}/{@code dictsort} filters; {@code tojson} writes them as arrays.
 */
final class PyTuple extends AbstractList<Object> implements RandomAccess {

    private final Object[] items;

    PyTuple(Object... items) {
        this.items = items;
    }

    static PyTuple copyOf(List<?> values) {
        return new PyTuple(values.toArray());
    }

    @Override
    public Object get(int index) {
        return items[index];
    }

    @Override
    public int size() {
        return items.length;
    }
}
