package dev.crucible.huggingface.template;

import java.util.ArrayList;
import java.util.List;

/** The value of {@code [start:stop:step]}; each bound may be null (Python's omitted bound or None). */
record PySlice(Object start, Object stop, Object step) {

    /** The indices this slice selects from a sequence of {@code length} items, as Python's slice.indices(). */
    int[] indices(int length) {
        long stepValue = step == null ? 1 : bound(step);
        if (stepValue == 0) {
            throw ChatTemplateException.valueError("slice step cannot be zero");
        }
        long lower = stepValue < 0 ? -1 : 0;
        long upper = stepValue < 0 ? length - 1 : length;
        long from = start == null ? (stepValue < 0 ? upper : lower) : clamp(bound(start), length, lower, upper);
        long to = stop == null ? (stepValue < 0 ? lower : upper) : clamp(bound(stop), length, lower, upper);
        List<Integer> picked = new ArrayList<>();
        if (stepValue > 0) {
            for (long i = from; i < to; i += stepValue) {
                picked.add((int) i);
            }
        } else {
            for (long i = from; i > to; i += stepValue) {
                picked.add((int) i);
            }
        }
        int[] result = new int[picked.size()];
        for (int i = 0; i < result.length; i++) {
            result[i] = picked.get(i);
        }
        return result;
    }

    private static long clamp(long index, int length, long lower, long upper) {
        if (index < 0) {
            index += length;
            return Math.max(index, lower);
        }
        return Math.min(index, upper);
    }

    private static long bound(Object value) {
        if (Py.isInt(value) || value instanceof Boolean) {
            return Py.asLong(value);
        }
        throw ChatTemplateException.typeError("slice indices must be integers or None or have an __index__ method");
    }
}
