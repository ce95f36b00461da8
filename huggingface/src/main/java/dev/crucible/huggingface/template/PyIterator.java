package dev.crucible.huggingface.template;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.function.Supplier;

/**
 * A Python generator or iterator, as Jinja's {@code map}, {@code select}, {@code selectattr}, {@code unique},
 * {@code items} and {@code batch} filters return (and {@code reverse} for lists). It matters for exact output:
 * such a value is always true in an {@code if}, has no length, cannot be indexed, prints as
 * {@code <generator object ...>}, and is used up by the first loop or filter that walks it. Its body runs only
 * when first read, so its errors surface there, as in Python.
 */
final class PyIterator implements Iterator<Object> {

    private final String typeName;
    private final String function;
    private Supplier<? extends Iterator<?>> body;
    private Iterator<?> items;

    private PyIterator(String typeName, String function, Supplier<? extends Iterator<?>> body) {
        this.typeName = typeName;
        this.function = function;
        this.body = body;
    }

    /** A generator; {@code function} names the Jinja function that produced it, for its repr. */
    static PyIterator generator(String function, Supplier<? extends Iterator<?>> body) {
        return new PyIterator("generator", function, body);
    }

    /** A built-in iterator such as {@code list_reverseiterator}. */
    static PyIterator iterator(String typeName, Supplier<? extends Iterator<?>> body) {
        return new PyIterator(typeName, null, body);
    }

    String typeName() {
        return typeName;
    }

    String repr() {
        String address = "0x" + Integer.toHexString(System.identityHashCode(this));
        return function != null ? "<generator object " + function + " at " + address + ">"
                : "<" + typeName + " object at " + address + ">";
    }

    private Iterator<?> started() {
        if (items == null) {
            Supplier<? extends Iterator<?>> start = body;
            body = null;
            items = start.get();
        }
        return items;
    }

    @Override
    public boolean hasNext() {
        return started().hasNext();
    }

    @Override
    public Object next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        return items.next();
    }

    /** The items not consumed yet; afterwards the iterator is exhausted. */
    List<Object> drain() {
        List<Object> rest = new ArrayList<>();
        while (hasNext()) {
            rest.add(items.next());
        }
        return rest;
    }
}
