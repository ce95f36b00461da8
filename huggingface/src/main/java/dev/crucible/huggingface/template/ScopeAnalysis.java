package dev.crucible.huggingface.template;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Jinja's compile-time symbol tracking (idtracking.py), reduced to the one thing it decides beyond plain lexical
 * lookup: which names a frame starts with as "missing".
 *
 * <p>Jinja resolves names per frame when compiling. A name whose first reference in a frame is an unconditional
 * assignment, and that no enclosing frame references, is a local of that frame that starts out missing: code that
 * reads it before the assignment runs (for instance a loop or macro body placed earlier in the template) sees it
 * undefined, even when a render variable of that name exists. Every other name is looked up outward at use time,
 * which {@link Scope} does. The rules mirrored here: loads and stores are visited in source order within a frame;
 * nested frames (loop bodies, macros, with/set/filter/call blocks) are analysed after their parent is complete;
 * an if statement's branches are analysed separately (the elif chain counts as one branch) and a name assigned in
 * only some branches is looked up outward.
 */
final class ScopeAnalysis {

    private enum Load { PARAMETER, RESOLVE, ALIAS, UNDEFINED }

    /** One frame's symbol table. */
    private static final class Symbols {
        private final Symbols parent;
        private Map<String, Load> loads = new LinkedHashMap<>();
        private Set<String> stores = new HashSet<>();

        Symbols(Symbols parent) {
            this.parent = parent;
        }

        boolean knows(String name) {
            return loads.containsKey(name) || (parent != null && parent.knows(name));
        }

        void load(String name) {
            if (!knows(name)) {
                loads.put(name, Load.RESOLVE);
            }
        }

        void store(String name) {
            stores.add(name);
            if (!loads.containsKey(name)) {
                loads.put(name, parent != null && parent.knows(name) ? Load.ALIAS : Load.UNDEFINED);
            }
        }

        void parameter(String name) {
            stores.add(name);
            loads.put(name, Load.PARAMETER);
        }

        Symbols copy() {
            Symbols copy = new Symbols(parent);
            copy.loads = new LinkedHashMap<>(loads);
            copy.stores = new HashSet<>(stores);
            return copy;
        }

        void mergeBranches(List<Symbols> branches) {
            Map<String, Integer> storedIn = new HashMap<>();
            for (Symbols branch : branches) {
                for (String name : branch.stores) {
                    if (!stores.contains(name)) {
                        storedIn.merge(name, 1, Integer::sum);
                    }
                }
            }
            for (Symbols branch : branches) {
                loads.putAll(branch.loads);
                stores.addAll(branch.stores);
            }
            storedIn.forEach((name, count) -> {
                if (count != branches.size()) {
                    loads.put(name, parent != null && parent.knows(name) ? Load.ALIAS : Load.RESOLVE);
                }
            });
        }

        List<String> missingOnEntry() {
            List<String> missing = new ArrayList<>();
            loads.forEach((name, load) -> {
                if (load == Load.UNDEFINED) {
                    missing.add(name);
                }
            });
            return missing;
        }
    }

    /** A nested frame found while visiting its parent, analysed once the parent is complete. */
    private record Pending(FrameEntry entry, List<String> parameters, List<Expr> loads, List<Stmt> body,
                           boolean isolated) {
    }

    private Symbols symbols;
    private final List<Pending> pending = new ArrayList<>();

    private ScopeAnalysis(Symbols symbols) {
        this.symbols = symbols;
    }

    /** Fills in {@code root} and every nested frame entry of {@code body}. */
    static void analyze(List<Stmt> body, FrameEntry root) {
        analyzeFrame(new Pending(root, List.of(), List.of(), body, true), null);
    }

    private static void analyzeFrame(Pending frame, Symbols parent) {
        ScopeAnalysis visitor = new ScopeAnalysis(new Symbols(frame.isolated() ? null : parent));
        for (String parameter : frame.parameters()) {
            visitor.symbols.parameter(parameter);
        }
        for (Expr expr : frame.loads()) {
            visitor.visit(expr);
        }
        visitor.visitAll(frame.body());
        frame.entry().setMissingOnEntry(visitor.symbols.missingOnEntry());
        Symbols complete = visitor.symbols;
        for (Pending nested : visitor.pending) {
            analyzeFrame(nested, complete);
        }
    }

    private void visitAll(List<Stmt> statements) {
        for (Stmt statement : statements) {
            visit(statement);
        }
    }

    private void visit(Stmt statement) {
        switch (statement) {
            case Stmt.Text text -> { }
            case Stmt.Print print -> visit(print.value());
            case Stmt.If branches -> visitIf(branches.tests(), branches.bodies(), branches.otherwise(), 0);
            case Stmt.For loop -> {
                visit(loop.iterable());
                List<String> parameters = new ArrayList<>(names(loop.target()));
                parameters.add("loop");
                pending.add(new Pending(loop.bodyFrame(), parameters, List.of(), loop.body(), false));
                pending.add(new Pending(loop.elseFrame(), List.of(), List.of(), loop.otherwise(), false));
            }
            case Stmt.Assign assign -> {
                visit(assign.value());
                store(assign.target());
            }
            case Stmt.MacroDefinition macro -> {
                symbols.store(macro.signature().name());
                pending.add(macroFrame(macro.signature()));
            }
            case Stmt.CallBlock call -> {
                visit(call.call());
                pending.add(macroFrame(call.caller()));
            }
            case Stmt.With with -> {
                with.values().forEach(this::visit);
                List<String> parameters = new ArrayList<>();
                with.targets().forEach(target -> parameters.addAll(names(target)));
                pending.add(new Pending(with.frame(), parameters, List.of(), with.body(), false));
            }
            case Stmt.Scoped scoped -> pending.add(new Pending(scoped.frame(), List.of(), List.of(), scoped.body(),
                    false));
            case Stmt.Block block -> pending.add(new Pending(block.frame(), List.of(), List.of(), block.body(), true));
            case Stmt.Break ignored -> { }
            case Stmt.Continue ignored -> { }
        }
    }

    private static Pending macroFrame(Macro.Signature signature) {
        List<String> parameters = new ArrayList<>(signature.parameters());
        if (signature.usesCaller()) {
            parameters.add("caller");
        }
        if (signature.catchesVarargs()) {
            parameters.add("varargs");
        }
        if (signature.catchesKwargs()) {
            parameters.add("kwargs");
        }
        return new Pending(signature.frame(), parameters, signature.defaults(), signature.body(), false);
    }

    /** Jinja's If node holds its elifs as one nested list: test, then branches (body, elifs, else). */
    private void visitIf(List<Expr> tests, List<List<Stmt>> bodies, List<Stmt> otherwise, int from) {
        visit(tests.get(from));
        Symbols original = symbols;
        List<Symbols> branches = new ArrayList<>(3);
        symbols = original.copy();
        visitAll(bodies.get(from));
        branches.add(symbols);
        symbols = original.copy();
        if (from + 1 < tests.size()) {
            visitIf(tests, bodies, otherwise, from + 1);
        }
        branches.add(symbols);
        symbols = original.copy();
        if (from + 1 >= tests.size()) {
            visitAll(otherwise);
        }
        branches.add(symbols);
        symbols = original;
        symbols.mergeBranches(branches);
    }

    private void store(Target target) {
        switch (target) {
            case Target.Name name -> symbols.store(name.name());
            case Target.Unpack unpack -> unpack.items().forEach(this::store);
            case Target.NamespaceAttribute attribute -> symbols.load(attribute.namespace());
        }
    }

    private static List<String> names(Target target) {
        List<String> names = new ArrayList<>();
        switch (target) {
            case Target.Name name -> names.add(name.name());
            case Target.Unpack unpack -> unpack.items().forEach(item -> names.addAll(names(item)));
            case Target.NamespaceAttribute attribute -> { }
        }
        return names;
    }

    private void visit(Expr expr) {
        switch (expr) {
            case null -> { }
            case Expr.Const ignored -> { }
            case Expr.Name name -> symbols.load(name.name());
            case Expr.ListLiteral list -> list.items().forEach(this::visit);
            case Expr.TupleLiteral tuple -> tuple.items().forEach(this::visit);
            case Expr.DictLiteral dict -> {
                for (int i = 0; i < dict.keys().size(); i++) {
                    visit(dict.keys().get(i));
                    visit(dict.values().get(i));
                }
            }
            case Expr.Getattr getattr -> visit(getattr.target());
            case Expr.Getitem getitem -> {
                visit(getitem.target());
                visit(getitem.key());
            }
            case Expr.Slice slice -> {
                visit(slice.start());
                visit(slice.stop());
                visit(slice.step());
            }
            case Expr.Call call -> {
                visit(call.callee());
                visit(call.args());
            }
            case Expr.Filter filter -> {
                visit(filter.input());
                visit(filter.args());
            }
            case Expr.Test test -> {
                visit(test.input());
                visit(test.args());
            }
            case Expr.Not not -> visit(not.operand());
            case Expr.Negate negate -> visit(negate.operand());
            case Expr.Plus plus -> visit(plus.operand());
            case Expr.Binary binary -> {
                visit(binary.left());
                visit(binary.right());
            }
            case Expr.And and -> {
                visit(and.left());
                visit(and.right());
            }
            case Expr.Or or -> {
                visit(or.left());
                visit(or.right());
            }
            case Expr.Concat concat -> concat.parts().forEach(this::visit);
            case Expr.Compare compare -> {
                visit(compare.first());
                compare.operands().forEach(this::visit);
            }
            case Expr.Conditional conditional -> {
                visit(conditional.test());
                visit(conditional.then());
                visit(conditional.otherwise());
            }
            case Expr.BlockOutput block -> pending.add(new Pending(block.frame(), List.of(), List.of(), block.body(),
                    false));
        }
    }

    private void visit(Expr.CallArgs args) {
        args.positional().forEach(this::visit);
        args.keywordValues().forEach(this::visit);
        visit(args.starArgs());
        visit(args.starKwargs());
    }
}
