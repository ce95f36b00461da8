package dev.crucible.huggingface.template;

import java.math.BigInteger;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Splits template source into tokens the way Jinja's lexer does under transformers' settings, including the
 * whitespace rules that decide the exact output:
 * <ul>
 *   <li>all line breaks become {@code \n}, and one trailing newline of the source is dropped;</li>
 *   <li>{@code {%-}, {@code {{-}, {@code {#-} strip all whitespace before the tag; {@code -%}}, {@code -}}},
 *       {@code -#}} all whitespace after it;</li>
 *   <li>trim_blocks: the first newline after {@code %}} or {@code #}} is dropped (not after {@code }}}; {@code +%}}
 *       keeps it);</li>
 *   <li>lstrip_blocks: spaces and tabs between the start of a line and {@code {%} or {@code {#} are dropped (not
 *       before {@code {{}; {@code {%+} keeps them).</li>
 * </ul>
 * Inside tags, a {@code }}} or {@code %}} that closes an open bracket is an operator, not the end of the tag.
 */
final class Lexer {

    enum Kind {
        DATA, VARIABLE_BEGIN, VARIABLE_END, BLOCK_BEGIN, BLOCK_END, NAME, STRING, INTEGER, FLOAT, OPERATOR, EOF
    }

    record Token(Kind kind, String text, Object value, int line) {
        boolean isName(String name) {
            return kind == Kind.NAME && text.equals(name);
        }

        boolean isOperator(String operator) {
            return kind == Kind.OPERATOR && text.equals(operator);
        }
    }

    private static final Pattern FLOAT = Pattern.compile(
            "(?<!\\.)(\\d+_)*\\d+((\\.(\\d+_)*\\d+)?[eE][+\\-]?(\\d+_)*\\d+|\\.(\\d+_)*\\d+)");
    private static final Pattern INTEGER = Pattern.compile(
            "0[bB](_?[01])+|0[oO](_?[0-7])+|0[xX](_?[\\da-fA-F])+|[1-9](_?\\d)*|0(_?0)*");
    private static final String[] OPERATORS = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~",
        "[", "]", "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};

    private final String source;
    private final List<Token> tokens = new ArrayList<>();
    private int pos;
    private int line = 1;
    /** Whether the text after the previous tag starts a line (Jinja's line_starting), for lstrip_blocks. */
    private boolean lineStarting = true;

    private Lexer(String source) {
        this.source = source;
    }

    static List<Token> tokenize(String template) {
        Lexer lexer = new Lexer(normalizeNewlines(template));
        lexer.run();
        return lexer.tokens;
    }

    /** Line breaks become {@code \n}; one trailing newline is dropped (keep_trailing_newline=False). */
    private static String normalizeNewlines(String template) {
        String normalized = template.indexOf('\r') < 0 ? template
                : template.replace("\r\n", "\n").replace('\r', '\n');
        return normalized.endsWith("\n") ? normalized.substring(0, normalized.length() - 1) : normalized;
    }

    private void run() {
        int n = source.length();
        while (pos < n) {
            int tag = nextTagStart(pos);
            if (tag < 0) {
                emitData(source.substring(pos));
                break;
            }
            char kind = source.charAt(tag + 1);
            int rawEnd = kind == '%' ? matchRawTag(tag, "raw", false) : -1;
            int signAt = tag + 2;
            char sign = signAt < n && (source.charAt(signAt) == '-' || source.charAt(signAt) == '+')
                    ? source.charAt(signAt) : 0;
            emitData(stripBeforeTag(source.substring(pos, tag), sign, kind != '{'));
            pos = tag;
            if (rawEnd >= 0) {
                lexRaw(rawEnd);
                continue;
            }
            pos = signAt + (sign != 0 ? 1 : 0);
            if (kind == '#') {
                lexComment();
            } else {
                lexTag(kind == '{');
            }
        }
        tokens.add(new Token(Kind.EOF, "", null, line));
    }

    private int nextTagStart(int from) {
        int i = source.indexOf('{', from);
        while (i >= 0 && i + 1 < source.length()) {
            char next = source.charAt(i + 1);
            if (next == '{' || next == '%' || next == '#') {
                return i;
            }
            i = source.indexOf('{', i + 1);
        }
        return -1;
    }

    /**
     * Applies the whitespace control of the tag that follows {@code text}.
     *
     * @param sign '-', '+' or 0
     * @param lstripApplies whether lstrip_blocks applies (block and comment tags, not print tags)
     */
    private String stripBeforeTag(String text, char sign, boolean lstripApplies) {
        if (sign == '-') {
            String stripped = PyStr.rstripWhitespace(text);
            line += countNewlines(text, stripped.length(), text.length());
            return stripped;
        }
        if (sign != '+' && lstripApplies) {
            int lineStart = text.lastIndexOf('\n') + 1;
            if ((lineStart > 0 || lineStarting) && lineStart < text.length()
                    && allWhitespace(text, lineStart)) {
                return text.substring(0, lineStart);
            }
        }
        return text;
    }

    private static boolean allWhitespace(String text, int from) {
        for (int i = from; i < text.length(); ) {
            int cp = text.codePointAt(i);
            if (!PyStr.isSpace(cp)) {
                return false;
            }
            i += Character.charCount(cp);
        }
        return true;
    }

    private void emitData(String text) {
        if (!text.isEmpty()) {
            tokens.add(new Token(Kind.DATA, text, text, line));
            line += countNewlines(text, 0, text.length());
        }
    }

    private static int countNewlines(String text, int from, int to) {
        int count = 0;
        for (int i = from; i < to; i++) {
            if (text.charAt(i) == '\n') {
                count++;
            }
        }
        return count;
    }

    /** Moves past the end of a tag's closing delimiter match and records whether it ended a line. */
    private void finishTag(int end) {
        line += countNewlines(source, pos, end);
        lineStarting = end > 0 && source.charAt(end - 1) == '\n';
        pos = end;
    }

    private int skipWhitespace(int from) {
        int i = from;
        while (i < source.length() && PyStr.isSpace(source.codePointAt(i))) {
            i += Character.charCount(source.codePointAt(i));
        }
        return i;
    }

    private void lexComment() {
        int close = source.indexOf("#}", pos);
        if (close < 0) {
            throw ChatTemplateException.syntax("Missing end of comment tag", line);
        }
        char before = close - 1 >= pos ? source.charAt(close - 1) : 0;
        int end = close + 2;
        if (before == '-') {
            end = skipWhitespace(end);
        } else if (before != '+' && end < source.length() && source.charAt(end) == '\n') {
            end++;
        }
        finishTag(end);
    }

    /**
     * Matches {@code {% raw %}} (or {@code endraw}) with its whitespace control at {@code at}.
     *
     * @param trimsNewline whether the closing {@code %}} drops a following newline (trim_blocks; Jinja applies it
     *     to endraw but not to raw) and {@code +%}} is accepted
     * @return the end of the match, or -1
     */
    private int matchRawTag(int at, String word, boolean trimsNewline) {
        int i = at + 2;
        if (i < source.length() && (source.charAt(i) == '-' || source.charAt(i) == '+')) {
            i++;
        }
        i = skipWhitespace(i);
        if (!source.startsWith(word, i)) {
            return -1;
        }
        i = skipWhitespace(i + word.length());
        if (trimsNewline && source.startsWith("+%}", i)) {
            return i + 3;
        }
        if (source.startsWith("-%}", i)) {
            return skipWhitespace(i + 3);
        }
        if (source.startsWith("%}", i)) {
            return trimsNewline && i + 2 < source.length() && source.charAt(i + 2) == '\n' ? i + 3 : i + 2;
        }
        return -1;
    }

    private void lexRaw(int contentStart) {
        finishTag(contentStart);
        int search = contentStart;
        while (true) {
            int candidate = source.indexOf("{%", search);
            if (candidate < 0) {
                throw ChatTemplateException.syntax("Missing end of raw directive", line);
            }
            int end = matchRawTag(candidate, "endraw", true);
            if (end >= 0) {
                char after = source.charAt(candidate + 2);
                char sign = after == '-' || after == '+' ? after : 0;
                emitData(stripBeforeTag(source.substring(contentStart, candidate), sign, true));
                pos = candidate;
                finishTag(end);
                return;
            }
            search = candidate + 1;
        }
    }

    private void lexTag(boolean variable) {
        int beginLine = line;
        tokens.add(new Token(variable ? Kind.VARIABLE_BEGIN : Kind.BLOCK_BEGIN, "", null, line));
        Deque<Character> brackets = new ArrayDeque<>();
        int n = source.length();
        while (true) {
            if (pos >= n) {
                throw ChatTemplateException.syntax("unexpected end of template: the tag opened on line " + beginLine
                        + " is not closed", line);
            }
            if (brackets.isEmpty() && tagEnd(variable)) {
                return;
            }
            int cp = source.codePointAt(pos);
            if (PyStr.isSpace(cp)) {
                int end = skipWhitespace(pos);
                line += countNewlines(source, pos, end);
                pos = end;
                continue;
            }
            Matcher number = FLOAT.matcher(source).region(pos, n).useTransparentBounds(true);
            if (number.lookingAt()) {
                String text = number.group();
                tokens.add(new Token(Kind.FLOAT, text, Double.parseDouble(text.replace("_", "")), line));
                pos = number.end();
                continue;
            }
            number = INTEGER.matcher(source).region(pos, n);
            if (number.lookingAt()) {
                String text = number.group();
                tokens.add(new Token(Kind.INTEGER, text, parseInteger(text), line));
                pos = number.end();
                continue;
            }
            if (cp == '_' || Character.isUnicodeIdentifierStart(cp)) {
                int end = pos + Character.charCount(cp);
                while (end < n && isIdentifierPart(source.codePointAt(end))) {
                    end += Character.charCount(source.codePointAt(end));
                }
                String name = source.substring(pos, end);
                tokens.add(new Token(Kind.NAME, name, name, line));
                pos = end;
                continue;
            }
            if (cp == '\'' || cp == '"') {
                lexString((char) cp);
                continue;
            }
            String operator = operatorAt(pos);
            if (operator == null) {
                throw ChatTemplateException.syntax("unexpected char " + Py.repr(Character.toString(cp)) + " at "
                        + pos, line);
            }
            trackBrackets(operator, brackets);
            tokens.add(new Token(Kind.OPERATOR, operator, operator, line));
            pos += operator.length();
        }
    }

    private static boolean isIdentifierPart(int cp) {
        return cp == '_' || (Character.isUnicodeIdentifierPart(cp) && !Character.isIdentifierIgnorable(cp));
    }

    /** Recognises the closing delimiter at {@code pos}; on success emits the end token and moves past it. */
    private boolean tagEnd(boolean variable) {
        int end;
        if (variable) {
            if (source.startsWith("-}}", pos)) {
                end = skipWhitespace(pos + 3);
            } else if (source.startsWith("}}", pos)) {
                end = pos + 2;
            } else {
                return false;
            }
        } else if (source.startsWith("+%}", pos)) {
            end = pos + 3;
        } else if (source.startsWith("-%}", pos)) {
            end = skipWhitespace(pos + 3);
        } else if (source.startsWith("%}", pos)) {
            end = pos + 2;
            if (end < source.length() && source.charAt(end) == '\n') {
                end++;
            }
        } else {
            return false;
        }
        tokens.add(new Token(variable ? Kind.VARIABLE_END : Kind.BLOCK_END, "", null, line));
        finishTag(end);
        return true;
    }

    private String operatorAt(int at) {
        for (String operator : OPERATORS) {
            if (source.startsWith(operator, at)) {
                return operator;
            }
        }
        return null;
    }

    private void trackBrackets(String operator, Deque<Character> brackets) {
        switch (operator) {
            case "(" -> brackets.push(')');
            case "[" -> brackets.push(']');
            case "{" -> brackets.push('}');
            case ")", "]", "}" -> {
                if (brackets.isEmpty()) {
                    throw ChatTemplateException.syntax("unexpected " + Py.repr(operator), line);
                }
                char expected = brackets.pop();
                if (expected != operator.charAt(0)) {
                    throw ChatTemplateException.syntax("unexpected " + Py.repr(operator) + ", expected "
                            + Py.repr(String.valueOf(expected)), line);
                }
            }
            default -> { }
        }
    }

    private static Object parseInteger(String text) {
        String digits = text.replace("_", "");
        int radix = 10;
        if (digits.length() > 1 && Character.isLetter(digits.charAt(1))) {
            radix = switch (Character.toLowerCase(digits.charAt(1))) {
                case 'b' -> 2;
                case 'o' -> 8;
                default -> 16;
            };
            digits = digits.substring(2);
        }
        return Py.normalize(new BigInteger(digits, radix));
    }

    /** A quoted string with Python's unicode-escape rules ({@code \n}, {@code \u00e9}, unknown escapes kept). */
    private void lexString(char quote) {
        int start = pos;
        int i = pos + 1;
        while (i < source.length() && source.charAt(i) != quote) {
            i += source.charAt(i) == '\\' ? 2 : 1;
        }
        if (i >= source.length()) {
            throw ChatTemplateException.syntax("unexpected char " + Py.repr(String.valueOf(quote)) + " at " + start,
                    line);
        }
        String body = source.substring(start + 1, i);
        tokens.add(new Token(Kind.STRING, source.substring(start, i + 1), unescape(body), line));
        line += countNewlines(body, 0, body.length());
        pos = i + 1;
    }

    private String unescape(String body) {
        if (body.indexOf('\\') < 0) {
            return body;
        }
        StringBuilder out = new StringBuilder(body.length());
        int i = 0;
        while (i < body.length()) {
            char c = body.charAt(i++);
            if (c != '\\' || i >= body.length()) {
                out.append(c);
                continue;
            }
            char e = body.charAt(i++);
            switch (e) {
                case '\n' -> { }
                case '\\' -> out.append('\\');
                case '\'' -> out.append('\'');
                case '"' -> out.append('"');
                case 'a' -> out.append('\u0007');
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 't' -> out.append('\t');
                case 'v' -> out.append('\u000B');
                case 'x' -> i = appendHex(out, body, i, 2);
                case 'u' -> i = appendHex(out, body, i, 4);
                case 'U' -> i = appendHex(out, body, i, 8);
                case 'N' -> {
                    int close = body.indexOf('}', i);
                    if (i >= body.length() || body.charAt(i) != '{' || close < 0) {
                        throw ChatTemplateException.syntax("malformed \\N character escape", line);
                    }
                    try {
                        out.appendCodePoint(Character.codePointOf(body.substring(i + 1, close)));
                    } catch (IllegalArgumentException unknown) {
                        throw ChatTemplateException.syntax("unknown Unicode character name", line);
                    }
                    i = close + 1;
                }
                default -> {
                    if (e >= '0' && e <= '7') {
                        int value = e - '0';
                        for (int k = 0; k < 2 && i < body.length() && body.charAt(i) >= '0' && body.charAt(i) <= '7';
                             k++) {
                            value = value * 8 + (body.charAt(i++) - '0');
                        }
                        out.append((char) value);
                    } else if (e > 0x7F) {
                        // Jinja escapes non-ASCII text before decoding, so "\é" comes out as a literal "\xe9".
                        int cp = Character.isHighSurrogate(e) && i < body.length()
                                ? Character.toCodePoint(e, body.charAt(i++)) : e;
                        out.append('\\').append(cp < 0x100 ? String.format("x%02x", cp)
                                : cp < 0x10000 ? String.format("u%04x", cp) : String.format("U%08x", cp));
                    } else {
                        out.append('\\').append(e);
                    }
                }
            }
        }
        return out.toString();
    }

    private int appendHex(StringBuilder out, String body, int from, int digits) {
        if (from + digits > body.length()) {
            throw ChatTemplateException.syntax("truncated \\" + (digits == 2 ? "x" : digits == 4 ? "u" : "U")
                    + " escape", line);
        }
        int value;
        try {
            value = Integer.parseUnsignedInt(body.substring(from, from + digits), 16);
        } catch (NumberFormatException e) {
            throw ChatTemplateException.syntax("truncated escape in string literal", line);
        }
        if (!Character.isValidCodePoint(value)) {
            throw ChatTemplateException.syntax("illegal Unicode character", line);
        }
        out.appendCodePoint(value);
        return from + digits;
    }
}
