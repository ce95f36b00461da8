package dev.crucible.accelerator.xla.lower;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

/**
 * The part of a trace one program computes: the lazy nodes the results depend on, in an order where every node
 * follows its inputs, and the leaves they read (the program's arguments), in the order they are first reached.
 * The same trace always gives the same order, so the same program text.
 */
record Graph(List<XlaTensor> results, List<XlaTensor> nodes, List<XlaTensor> arguments) {

    static Graph of(List<XlaTensor> results) {
        Set<XlaTensor> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        List<XlaTensor> nodes = new ArrayList<>();
        List<XlaTensor> arguments = new ArrayList<>();
        // Iterative post-order: a deep model's trace is thousands of nodes long.
        Deque<XlaTensor> stack = new ArrayDeque<>();
        Deque<Integer> next = new ArrayDeque<>();
        for (XlaTensor result : results) {
            if (!seen.add(result)) {
                continue;
            }
            stack.push(result);
            next.push(0);
            while (!stack.isEmpty()) {
                XlaTensor top = stack.peek();
                top.checkUsable();
                if (!top.lazy()) {
                    stack.pop();
                    next.pop();
                    arguments.add(top);
                    continue;
                }
                int index = next.pop();
                if (index < top.inputs.length) {
                    next.push(index + 1);
                    XlaTensor input = top.inputs[index];
                    if (seen.add(input)) {
                        stack.push(input);
                        next.push(0);
                    }
                } else {
                    stack.pop();
                    nodes.add(top);
                }
            }
        }
        return new Graph(List.copyOf(results), nodes, arguments);
    }
}
