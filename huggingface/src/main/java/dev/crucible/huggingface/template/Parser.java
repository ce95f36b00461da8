package dev.crucible.huggingface.template;

import dev.crucible.huggingface.template.Lexer.Kind;
import dev.crucible.huggingface.template.Lexer.Token;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Builds the statement tree from tokens with Jinja's grammar and operator precedence (lowest first):
 * {@code x if c else y}, {@code or}, {@code and}, {@code not}, comparisons and {@code in}, {@code + -},
 * {@code ~}, {@code * / // %}, {@code **}, unary {@code -}, then postfix {@code . [] ()} and finally filters
 * and tests, which bind tighter than any operator: {@code 'a' + x | trim} is {@code 'a' + (x | trim)}.
 */
final class Parser {

    private static final Set<String> COMPARE_OPERATORS = Set.of("==", "!=", "<", "<=", ">", ">=");
    /** Tags that need other template files or autoescaping, neither of which a chat template has. */
    private static final Set<String> UNSUPPORTED_TAGS = Set.of("extends", "include", "import", "from", "autoescape");

    private final List<Token> tokens;
    private int index;
    private final Deque<List<String>> endTagStack = new ArrayDeque<>();
    /** Names read inside the macro bodies being parsed, to know whether they use varargs, kwargs or caller. */
    private final Deque<Set<String>> macroNameUsage = new ArrayDeque<>();
    private int loopDepth;
    /**
     * Whether the code being parsed sits directly in an if statement or an inline if-expression: Jinja reports an
     * unknown filter or test there only when it is evaluated, and everywhere else when the template is compiled.
     */
    private boolean conditional;
    private final List<UnknownName> unknownNames = new ArrayList<>();

    private record UnknownName(String kind, String name, int line, boolean conditional) {
    }

    private Parser(List<Token> tokens) {
        this.tokens = tokens;
    }

    /** A parsed template: its statements and how its top-level frame starts. */
    record TemplateBody(List<Stmt> statements, FrameEntry frame) {
    }

    static TemplateBody parse(String source) {
        Parser parser = new Parser(Lexer.tokenize(source));
        List<Stmt> body = parser.subparse(List.of());
        if (parser.current().kind() != Kind.EOF) {
            throw parser.fail("unexpected " + describe(parser.current()));
        }
        for (UnknownName unknown : parser.unknownNames) {
            if (!unknown.conditional()) {
                throw ChatTemplateException.syntax("No " + unknown.kind() + " named " + Py.repr(unknown.name()) + ".",
                        unknown.line());
            }
        }
        FrameEntry root = new FrameEntry();
        ScopeAnalysis.analyze(body, root);
        return new TemplateBody(body, root);
    }

    // ---------------------------------------------------------------- token stream

    private Token current() {
        return tokens.get(index);
    }

    private Token peek() {
        return tokens.get(Math.min(index + 1, tokens.size() - 1));
    }

    private Token next() {
        Token token = tokens.get(index);
        if (index < tokens.size() - 1) {
            index++;
        }
        return token;
    }

    private ChatTemplateException fail(String message) {
        return ChatTemplateException.syntax(message, current().line());
    }

    private static String describe(Token token) {
        return switch (token.kind()) {
            case NAME, OPERATOR -> Py.repr(token.text());
            case STRING, INTEGER, FLOAT -> "literal " + token.text();
            case DATA -> "template data";
            case VARIABLE_BEGIN -> "begin of print statement";
            case VARIABLE_END -> "end of print statement";
            case BLOCK_BEGIN -> "begin of statement block";
            case BLOCK_END -> "end of statement block";
            case EOF -> "end of template";
        };
    }

    private Token expect(Kind kind, String what) {
        if (current().kind() != kind) {
            throw fail("expected " + what + ", got " + describe(current()));
        }
        return next();
    }

    private void expectOperator(String operator) {
        if (!current().isOperator(operator)) {
            throw fail("expected " + Py.repr(operator) + ", got " + describe(current()));
        }
        next();
    }

    private String expectName() {
        return expect(Kind.NAME, "a name").text();
    }

    private boolean skipOperator(String operator) {
        if (current().isOperator(operator)) {
            next();
            return true;
        }
        return false;
    }

    private boolean skipName(String name) {
        if (current().isName(name)) {
            next();
            return true;
        }
        return false;
    }

    // ---------------------------------------------------------------- statements

    /** Parses until a block tag whose name is one of {@code endTags}; that name is left as the current token. */
    private List<Stmt> subparse(List<String> endTags) {
        List<Stmt> body = new ArrayList<>();
        endTagStack.push(endTags);
        try {
            while (true) {
                Token token = current();
                switch (token.kind()) {
                    case DATA -> body.add(new Stmt.Text(next().text(), token.line()));
                    case VARIABLE_BEGIN -> {
                        next();
                        body.add(new Stmt.Print(parseTuple(false, true, List.of(), false), token.line()));
                        expect(Kind.VARIABLE_END, "end of print statement");
                    }
                    case BLOCK_BEGIN -> {
                        next();
                        if (current().kind() == Kind.NAME && endTags.contains(current().text())) {
                            return body;
                        }
                        body.addAll(parseStatement());
                        expect(Kind.BLOCK_END, "end of statement block");
                    }
                    case EOF -> {
                        return body;
                    }
                    default -> throw fail("unexpected " + describe(token));
                }
            }
        } finally {
            endTagStack.pop();
        }
    }

    /** Parses a body that Jinja compiles in a frame of its own (loop, macro, block), where checks are strict. */
    private List<Stmt> parseInnerStatements(List<String> endTags, boolean dropNeedle) {
        boolean saved = conditional;
        conditional = false;
        try {
            return parseStatements(endTags, dropNeedle);
        } finally {
            conditional = saved;
        }
    }

    private List<Stmt> parseStatements(List<String> endTags, boolean dropNeedle) {
        skipOperator(":");
        expect(Kind.BLOCK_END, "end of statement block");
        List<Stmt> body = subparse(endTags);
        if (current().kind() == Kind.EOF) {
            throw fail("Unexpected end of template. Jinja was looking for the following tags: "
                    + String.join(" or ", endTags.stream().map(Py::repr).toList()) + ".");
        }
        if (dropNeedle) {
            next();
        }
        return body;
    }

    private List<Stmt> parseStatement() {
        Token token = current();
        if (token.kind() != Kind.NAME) {
            throw fail("tag name expected");
        }
        int line = token.line();
        String tag = token.text();
        return switch (tag) {
            case "if" -> List.of(parseIf());
            case "for" -> List.of(parseFor());
            case "set" -> List.of(parseSet());
            case "macro" -> List.of(parseMacro());
            case "call" -> List.of(parseCallBlock());
            case "filter" -> List.of(parseFilterBlock());
            case "with" -> List.of(parseWith());
            case "generation" -> {
                next();
                yield List.of(new Stmt.Scoped(parseInnerStatements(List.of("endgeneration"), true), new FrameEntry(),
                        line));
            }
            case "block" -> {
                next();
                String name = expectName();
                boolean scoped = skipName("scoped");
                skipName("required");
                List<Stmt> body = parseInnerStatements(List.of("endblock"), true);
                skipName(name);
                yield List.of(new Stmt.Block(body, scoped, new FrameEntry(), line));
            }
            case "print" -> {
                next();
                List<Stmt> prints = new ArrayList<>();
                while (current().kind() != Kind.BLOCK_END) {
                    if (!prints.isEmpty()) {
                        expectOperator(",");
                    }
                    prints.add(new Stmt.Print(parseExpression(true), line));
                }
                yield prints;
            }
            case "break", "continue" -> {
                if (loopDepth == 0) {
                    throw fail(Py.repr(tag) + " outside of a loop");
                }
                next();
                yield List.of(tag.equals("break") ? new Stmt.Break(line) : new Stmt.Continue(line));
            }
            default -> {
                if (UNSUPPORTED_TAGS.contains(tag)) {
                    throw fail("the " + Py.repr(tag) + " tag is not supported in chat templates");
                }
                StringBuilder message = new StringBuilder("Encountered unknown tag " + Py.repr(tag) + ".");
                List<String> looking = endTagStack.isEmpty() ? List.of() : endTagStack.peek();
                if (!looking.isEmpty()) {
                    message.append(" Jinja was looking for the following tags: ")
                            .append(String.join(" or ", looking.stream().map(Py::repr).toList())).append('.');
                }
                throw fail(message.toString());
            }
        };
    }

    private Stmt parseIf() {
        int line = next().line();
        List<Expr> tests = new ArrayList<>();
        List<List<Stmt>> bodies = new ArrayList<>();
        List<Stmt> otherwise = List.of();
        boolean saved = conditional;
        conditional = true;
        try {
            parseBranches(tests, bodies);
            if (previous().isName("else")) {
                otherwise = parseStatements(List.of("endif"), true);
            }
        } finally {
            conditional = saved;
        }
        return new Stmt.If(tests, bodies, otherwise, line);
    }

    private Token previous() {
        return tokens.get(index - 1);
    }

    private void parseBranches(List<Expr> tests, List<List<Stmt>> bodies) {
        while (true) {
            tests.add(parseTuple(false, false, List.of(), false));
            bodies.add(parseStatements(List.of("elif", "else", "endif"), false));
            if (!next().text().equals("elif")) {
                return;
            }
        }
    }

    private Stmt parseFor() {
        int line = next().line();
        Target target = parseAssignTarget(List.of("in"), false);
        if (!skipName("in")) {
            throw fail("expected 'in', got " + describe(current()));
        }
        Expr iterable = parseTuple(false, false, List.of("recursive"), false);
        boolean saved = conditional;
        conditional = false;
        Expr filter;
        try {
            filter = skipName("if") ? parseExpression(true) : null;
        } finally {
            conditional = saved;
        }
        boolean recursive = skipName("recursive");
        loopDepth++;
        List<Stmt> body;
        try {
            body = parseInnerStatements(List.of("endfor", "else"), false);
        } finally {
            loopDepth--;
        }
        List<Stmt> otherwise = List.of();
        if (next().text().equals("else")) {
            otherwise = parseInnerStatements(List.of("endfor"), true);
        }
        return new Stmt.For(target, iterable, filter, recursive, body, new FrameEntry(), otherwise, new FrameEntry(),
                line);
    }

    private Stmt parseSet() {
        int line = next().line();
        Target target = parseAssignTarget(List.of(), true);
        if (skipOperator("=")) {
            return new Stmt.Assign(target, parseTuple(false, true, List.of(), false), line);
        }
        List<FilterCall> filters = parseFilterCalls(false);
        List<Stmt> body = parseInnerStatements(List.of("endset"), true);
        return new Stmt.Assign(target, applyFilters(new Expr.BlockOutput(body, new FrameEntry()), filters), line);
    }

    private Stmt parseMacro() {
        int line = next().line();
        String name = expectName();
        return new Stmt.MacroDefinition(parseSignatureAndBody(name, true, -1, "endmacro"), line);
    }

    private Stmt parseCallBlock() {
        int line = next().line();
        boolean hasSignature = current().isOperator("(");
        int signatureStart = index;
        if (hasSignature) {
            skipParenthesised();
        }
        Expr call = parseExpression(true);
        if (!(call instanceof Expr.Call callExpr)) {
            throw fail("expected call");
        }
        int afterCall = index;
        index = signatureStart;
        Macro.Signature caller = parseSignatureAndBody("caller", hasSignature, afterCall, "endcall");
        return new Stmt.CallBlock(callExpr, caller, line);
    }

    private void skipParenthesised() {
        int depth = 0;
        do {
            if (current().isOperator("(")) {
                depth++;
            } else if (current().isOperator(")")) {
                depth--;
            } else if (current().kind() == Kind.EOF) {
                throw fail("unexpected end of template");
            }
            next();
        } while (depth > 0);
    }

    /**
     * Parses {@code (a, b=1)} when present, then the body up to {@code endTag}.
     *
     * @param resumeAt where the body's block end starts when something sits between signature and body (the call
     *     of a call block), or -1
     */
    private Macro.Signature parseSignatureAndBody(String name, boolean hasParameters, int resumeAt, String endTag) {
        List<String> parameters = new ArrayList<>();
        List<Expr> defaults = new ArrayList<>();
        if (hasParameters) {
            expectOperator("(");
            while (!current().isOperator(")")) {
                if (!parameters.isEmpty()) {
                    expectOperator(",");
                }
                String parameter = expectName();
                if (skipOperator("=")) {
                    defaults.add(parseExpression(true));
                } else if (!defaults.isEmpty()) {
                    throw fail("non-default argument follows default argument");
                }
                parameters.add(parameter);
            }
            expectOperator(")");
        }
        if (resumeAt >= 0) {
            index = resumeAt;
        }
        Set<String> used = new HashSet<>();
        macroNameUsage.push(used);
        int savedLoopDepth = loopDepth;
        loopDepth = 0;
        List<Stmt> body;
        try {
            body = parseInnerStatements(List.of(endTag), true);
        } finally {
            macroNameUsage.pop();
            loopDepth = savedLoopDepth;
        }
        return new Macro.Signature(name, parameters, defaults, body, used.contains("varargs"),
                used.contains("kwargs"), used.contains("caller"), new FrameEntry());
    }

    private Stmt parseFilterBlock() {
        int line = next().line();
        List<FilterCall> filters = parseFilterCalls(true);
        List<Stmt> body = parseInnerStatements(List.of("endfilter"), true);
        return new Stmt.Print(applyFilters(new Expr.BlockOutput(body, new FrameEntry()), filters), line);
    }

    private Stmt parseWith() {
        int line = next().line();
        List<Target> targets = new ArrayList<>();
        List<Expr> values = new ArrayList<>();
        while (current().kind() != Kind.BLOCK_END) {
            if (!targets.isEmpty()) {
                expectOperator(",");
            }
            targets.add(parseAssignTarget(List.of(), false));
            expectOperator("=");
            values.add(parseExpression(true));
        }
        return new Stmt.With(targets, values, parseInnerStatements(List.of("endwith"), true), new FrameEntry(),
                line);
    }

    private Target parseAssignTarget(List<String> extraEndNames, boolean withNamespace) {
        if (withNamespace && current().kind() == Kind.NAME && peek().isOperator(".")) {
            String namespace = next().text();
            next();
            return new Target.NamespaceAttribute(namespace, expectName());
        }
        return toTarget(parseTuple(true, true, extraEndNames, false));
    }

    private Target toTarget(Expr expr) {
        if (expr instanceof Expr.Name name) {
            return new Target.Name(name.name());
        }
        if (expr instanceof Expr.TupleLiteral tuple) {
            List<Target> items = new ArrayList<>();
            for (Expr item : tuple.items()) {
                items.add(toTarget(item));
            }
            return new Target.Unpack(items);
        }
        throw fail("can't assign to " + Py.repr(expr.getClass().getSimpleName().toLowerCase(java.util.Locale.ROOT)));
    }

    // ---------------------------------------------------------------- expressions

    private Expr parseExpression(boolean withConditional) {
        return withConditional ? parseConditional() : parseOr();
    }

    private Expr parseConditional() {
        int unknownBefore = unknownNames.size();
        Expr expr = parseOr();
        while (current().isName("if")) {
            int line = next().line();
            Expr test = parseOr();
            Expr otherwise = skipName("else") ? parseConditional() : null;
            expr = new Expr.Conditional(test, expr, otherwise, line);
            // Jinja compiles every part of an inline if-expression as conditional code.
            for (int i = unknownBefore; i < unknownNames.size(); i++) {
                UnknownName unknown = unknownNames.get(i);
                unknownNames.set(i, new UnknownName(unknown.kind(), unknown.name(), unknown.line(), true));
            }
        }
        return expr;
    }

    private Expr parseOr() {
        Expr left = parseAnd();
        while (skipName("or")) {
            left = new Expr.Or(left, parseAnd());
        }
        return left;
    }

    private Expr parseAnd() {
        Expr left = parseNot();
        while (skipName("and")) {
            left = new Expr.And(left, parseNot());
        }
        return left;
    }

    private Expr parseNot() {
        if (skipName("not")) {
            return new Expr.Not(parseNot());
        }
        return parseCompare();
    }

    private Expr parseCompare() {
        Expr first = parseMath1();
        List<String> operators = new ArrayList<>();
        List<Expr> operands = new ArrayList<>();
        while (true) {
            Token token = current();
            if (token.kind() == Kind.OPERATOR && COMPARE_OPERATORS.contains(token.text())) {
                next();
                operators.add(token.text());
            } else if (skipName("in")) {
                operators.add("in");
            } else if (token.isName("not") && peek().isName("in")) {
                next();
                next();
                operators.add("not in");
            } else {
                break;
            }
            operands.add(parseMath1());
        }
        return operators.isEmpty() ? first : new Expr.Compare(first, operators, operands);
    }

    private Expr parseMath1() {
        Expr left = parseConcat();
        while (current().isOperator("+") || current().isOperator("-")) {
            Expr.Operator operator = next().text().equals("+") ? Expr.Operator.ADD : Expr.Operator.SUB;
            left = new Expr.Binary(operator, left, parseConcat());
        }
        return left;
    }

    private Expr parseConcat() {
        List<Expr> parts = new ArrayList<>();
        parts.add(parseMath2());
        while (skipOperator("~")) {
            parts.add(parseMath2());
        }
        return parts.size() == 1 ? parts.get(0) : new Expr.Concat(parts);
    }

    private Expr parseMath2() {
        Expr left = parsePow();
        while (true) {
            Expr.Operator operator;
            if (current().isOperator("*")) {
                operator = Expr.Operator.MUL;
            } else if (current().isOperator("/")) {
                operator = Expr.Operator.DIV;
            } else if (current().isOperator("//")) {
                operator = Expr.Operator.FLOORDIV;
            } else if (current().isOperator("%")) {
                operator = Expr.Operator.MOD;
            } else {
                return left;
            }
            next();
            left = new Expr.Binary(operator, left, parsePow());
        }
    }

    private Expr parsePow() {
        Expr left = parseUnary(true);
        while (skipOperator("**")) {
            left = new Expr.Binary(Expr.Operator.POW, left, parseUnary(true));
        }
        return left;
    }

    private Expr parseUnary(boolean withFilter) {
        Expr node;
        if (skipOperator("-")) {
            node = new Expr.Negate(parseUnary(false));
        } else if (skipOperator("+")) {
            node = new Expr.Plus(parseUnary(false));
        } else {
            node = parsePrimary();
        }
        node = parsePostfix(node);
        return withFilter ? parseFilterExpression(node) : node;
    }

    private Expr parsePrimary() {
        Token token = current();
        switch (token.kind()) {
            case NAME -> {
                next();
                return switch (token.text()) {
                    case "true", "True" -> new Expr.Const(true);
                    case "false", "False" -> new Expr.Const(false);
                    case "none", "None" -> new Expr.Const(null);
                    default -> {
                        for (Set<String> used : macroNameUsage) {
                            used.add(token.text());
                        }
                        yield new Expr.Name(token.text());
                    }
                };
            }
            case STRING -> {
                StringBuilder joined = new StringBuilder();
                while (current().kind() == Kind.STRING) {
                    joined.append((String) next().value());
                }
                return new Expr.Const(joined.toString());
            }
            case INTEGER, FLOAT -> {
                return new Expr.Const(next().value());
            }
            case OPERATOR -> {
                switch (token.text()) {
                    case "(" -> {
                        next();
                        Expr inner = parseTuple(false, true, List.of(), true);
                        expectOperator(")");
                        return inner;
                    }
                    case "[" -> {
                        return parseList();
                    }
                    case "{" -> {
                        return parseDict();
                    }
                    default -> throw fail("unexpected " + describe(token));
                }
            }
            default -> throw fail("unexpected " + describe(token));
        }
    }

    /**
     * Jinja's parse_tuple: one expression, or a tuple when commas separate several.
     *
     * @param simplified only primaries (assignment targets)
     * @param explicitParentheses inside "( )", where an empty tuple is allowed
     */
    private Expr parseTuple(boolean simplified, boolean withConditional, List<String> extraEndNames,
                            boolean explicitParentheses) {
        List<Expr> items = new ArrayList<>();
        boolean isTuple = false;
        while (true) {
            if (!items.isEmpty()) {
                expectOperator(",");
            }
            if (isTupleEnd(extraEndNames)) {
                break;
            }
            items.add(simplified ? parsePrimary() : parseExpression(withConditional));
            if (current().isOperator(",")) {
                isTuple = true;
            } else {
                break;
            }
        }
        if (!isTuple) {
            if (!items.isEmpty()) {
                return items.get(0);
            }
            if (!explicitParentheses) {
                throw fail("Expected an expression, got " + describe(current()));
            }
        }
        return new Expr.TupleLiteral(items);
    }

    private boolean isTupleEnd(List<String> extraEndNames) {
        Token token = current();
        return token.kind() == Kind.VARIABLE_END || token.kind() == Kind.BLOCK_END || token.isOperator(")")
                || (token.kind() == Kind.NAME && extraEndNames.contains(token.text()));
    }

    private Expr parseList() {
        expectOperator("[");
        List<Expr> items = new ArrayList<>();
        while (!current().isOperator("]")) {
            if (!items.isEmpty()) {
                expectOperator(",");
            }
            if (current().isOperator("]")) {
                break;
            }
            items.add(parseExpression(true));
        }
        expectOperator("]");
        return new Expr.ListLiteral(items);
    }

    private Expr parseDict() {
        expectOperator("{");
        List<Expr> keys = new ArrayList<>();
        List<Expr> values = new ArrayList<>();
        while (!current().isOperator("}")) {
            if (!keys.isEmpty()) {
                expectOperator(",");
            }
            if (current().isOperator("}")) {
                break;
            }
            keys.add(parseExpression(true));
            expectOperator(":");
            values.add(parseExpression(true));
        }
        expectOperator("}");
        return new Expr.DictLiteral(keys, values);
    }

    private Expr parsePostfix(Expr node) {
        while (true) {
            if (current().isOperator(".") || current().isOperator("[")) {
                node = parseSubscript(node);
            } else if (current().isOperator("(")) {
                node = new Expr.Call(node, parseCallArgs());
            } else {
                return node;
            }
        }
    }

    private Expr parseFilterExpression(Expr node) {
        while (true) {
            if (current().isOperator("|")) {
                node = applyFilters(node, parseFilterCalls(false));
            } else if (current().isName("is")) {
                node = parseTest(node);
            } else if (current().isOperator("(")) {
                node = new Expr.Call(node, parseCallArgs());
            } else {
                return node;
            }
        }
    }

    private Expr parseSubscript(Expr node) {
        Token token = next();
        if (token.isOperator(".")) {
            Token attribute = next();
            if (attribute.kind() == Kind.NAME) {
                return new Expr.Getattr(node, attribute.text());
            }
            if (attribute.kind() != Kind.INTEGER) {
                throw fail("expected name or number");
            }
            return new Expr.Getitem(node, new Expr.Const(attribute.value()));
        }
        List<Expr> keys = new ArrayList<>();
        while (!current().isOperator("]")) {
            if (!keys.isEmpty()) {
                expectOperator(",");
            }
            keys.add(parseSubscribed());
        }
        expectOperator("]");
        return new Expr.Getitem(node, keys.size() == 1 ? keys.get(0) : new Expr.TupleLiteral(keys));
    }

    private Expr parseSubscribed() {
        Expr start = null;
        if (!current().isOperator(":")) {
            start = parseExpression(true);
            if (!current().isOperator(":")) {
                return start;
            }
        }
        next();
        Expr stop = null;
        if (!current().isOperator(":") && !current().isOperator("]") && !current().isOperator(",")) {
            stop = parseExpression(true);
        }
        Expr step = null;
        if (skipOperator(":") && !current().isOperator("]") && !current().isOperator(",")) {
            step = parseExpression(true);
        }
        return new Expr.Slice(start, stop, step);
    }

    private Expr.CallArgs parseCallArgs() {
        expectOperator("(");
        List<Expr> positional = new ArrayList<>();
        List<String> keywordNames = new ArrayList<>();
        List<Expr> keywordValues = new ArrayList<>();
        Expr starArgs = null;
        Expr starKwargs = null;
        boolean requireComma = false;
        while (!current().isOperator(")")) {
            if (requireComma) {
                expectOperator(",");
                if (current().isOperator(")")) {
                    break;
                }
            }
            if (skipOperator("*")) {
                ensure(starArgs == null && starKwargs == null);
                starArgs = parseExpression(true);
            } else if (skipOperator("**")) {
                ensure(starKwargs == null);
                starKwargs = parseExpression(true);
            } else if (current().kind() == Kind.NAME && peek().isOperator("=")) {
                ensure(starKwargs == null);
                keywordNames.add(next().text());
                next();
                keywordValues.add(parseExpression(true));
            } else {
                ensure(starArgs == null && starKwargs == null && keywordNames.isEmpty());
                positional.add(parseExpression(true));
            }
            requireComma = true;
        }
        expectOperator(")");
        Expr.CallArgs args = new Expr.CallArgs(positional, keywordNames, keywordValues, starArgs, starKwargs);
        return args.isEmpty() ? Expr.CallArgs.NONE : args;
    }

    private void ensure(boolean valid) {
        if (!valid) {
            throw fail("invalid syntax for function call expression");
        }
    }

    private record FilterCall(String name, Expr.CallArgs args, int line) {
    }

    /** {@code | name(args) | name ...}; with {@code startInline} the first filter has no leading pipe. */
    private List<FilterCall> parseFilterCalls(boolean startInline) {
        List<FilterCall> calls = new ArrayList<>();
        while (current().isOperator("|") || startInline) {
            if (!startInline) {
                next();
            }
            startInline = false;
            int line = current().line();
            StringBuilder name = new StringBuilder(expectName());
            while (skipOperator(".")) {
                name.append('.').append(expectName());
            }
            Expr.CallArgs args = current().isOperator("(") ? parseCallArgs() : Expr.CallArgs.NONE;
            calls.add(new FilterCall(name.toString(), args, line));
        }
        return calls;
    }

    private Expr applyFilters(Expr input, List<FilterCall> calls) {
        Expr node = input;
        for (FilterCall call : calls) {
            Filters.Filter filter = Filters.get(call.name());
            if (filter == null) {
                unknownNames.add(new UnknownName("filter", call.name(), call.line(), conditional));
            }
            node = new Expr.Filter(node, call.name(), filter, call.args());
        }
        return node;
    }

    private Expr parseTest(Expr node) {
        next();
        boolean negated = skipName("not");
        StringBuilder name = new StringBuilder(expectName());
        while (skipOperator(".")) {
            name.append('.').append(expectName());
        }
        Expr.CallArgs args = Expr.CallArgs.NONE;
        Token token = current();
        if (token.isOperator("(")) {
            args = parseCallArgs();
        } else if ((token.kind() == Kind.NAME || token.kind() == Kind.STRING || token.kind() == Kind.INTEGER
                || token.kind() == Kind.FLOAT || token.isOperator("[") || token.isOperator("{"))
                && !token.isName("else") && !token.isName("or") && !token.isName("and")) {
            if (token.isName("is")) {
                throw fail("You cannot chain multiple tests with is");
            }
            Expr argument = parsePostfix(parsePrimary());
            args = new Expr.CallArgs(List.of(argument), List.of(), List.of(), null, null);
        }
        Tests.Test function = Tests.get(name.toString());
        if (function == null) {
            unknownNames.add(new UnknownName("test", name.toString(), previous().line(), conditional));
        }
        Expr test = new Expr.Test(node, name.toString(), function, args);
        return negated ? new Expr.Not(test) : test;
    }
}
