package dev.crucible.huggingface.template;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Python's str methods on Java strings, counting in code points as Python does (an emoji is one character,
 * not two UTF-16 units) and using Python's notion of whitespace, which includes U+00A0 and U+001C..U+001F.
 */
final class PyStr {

    private PyStr() {
    }

    /** Python's str.isspace() for one code point. */
    static boolean isSpace(int cp) {
        return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0
                || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F
                || cp == 0x205F || cp == 0x3000;
    }

    private static boolean isLineBreak(int cp) {
        return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) || cp == 0x85
                || cp == 0x2028 || cp == 0x2029;
    }

    private static boolean hasSurrogates(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (Character.isSurrogate(s.charAt(i))) {
                return true;
            }
        }
        return false;
    }

    static int length(String s) {
        return hasSurrogates(s) ? s.codePointCount(0, s.length()) : s.length();
    }

    /** Code-point offset to char offset. */
    private static int charIndex(String s, int codePoints) {
        return hasSurrogates(s) ? s.offsetByCodePoints(0, codePoints) : codePoints;
    }

    /** Char offset to code-point offset. */
    private static int codePointIndex(String s, int chars) {
        return hasSurrogates(s) ? s.codePointCount(0, chars) : chars;
    }

    /** The code point at a Python index (negative counts from the end), or null when out of range. */
    static String at(String s, long index) {
        int length = length(s);
        if (index < 0) {
            index += length;
        }
        if (index < 0 || index >= length) {
            return null;
        }
        int start = charIndex(s, (int) index);
        return s.substring(start, start + Character.charCount(s.codePointAt(start)));
    }

    static String slice(String s, PySlice slice) {
        int[] codePoints = s.codePoints().toArray();
        int[] indices = slice.indices(codePoints.length);
        StringBuilder out = new StringBuilder(indices.length);
        for (int index : indices) {
            out.appendCodePoint(codePoints[index]);
        }
        return out.toString();
    }

    static List<Object> characters(String s) {
        List<Object> characters = new ArrayList<>(s.length());
        s.codePoints().forEach(cp -> characters.add(Character.toString(cp)));
        return characters;
    }

    /** Python's string ordering: by code point (Java's compareTo orders UTF-16 units, which differs). */
    static int compare(String a, String b) {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            int x = a.codePointAt(i);
            int y = b.codePointAt(j);
            if (x != y) {
                return Integer.compare(x, y);
            }
            i += Character.charCount(x);
            j += Character.charCount(y);
        }
        return Integer.compare(a.length() - i, b.length() - j);
    }

    // ---------------------------------------------------------------- strip

    /**
     * Python's strip/lstrip/rstrip.
     *
     * @param chars the characters to remove, or null for whitespace
     */
    static String strip(String s, String chars, boolean left, boolean right) {
        int start = 0;
        int end = s.length();
        if (left) {
            while (start < end) {
                int cp = s.codePointAt(start);
                if (!stripped(cp, chars)) {
                    break;
                }
                start += Character.charCount(cp);
            }
        }
        if (right) {
            while (end > start) {
                int cp = s.codePointBefore(end);
                if (!stripped(cp, chars)) {
                    break;
                }
                end -= Character.charCount(cp);
            }
        }
        return s.substring(start, end);
    }

    private static boolean stripped(int cp, String chars) {
        return chars == null ? isSpace(cp) : chars.indexOf(Character.toString(cp)) >= 0;
    }

    /** Python's str.rstrip() without argument: used by the lexer for {@code {%-}. */
    static String rstripWhitespace(String s) {
        return strip(s, null, false, true);
    }

    // ---------------------------------------------------------------- split

    /** Python's str.split(sep, maxsplit); a null separator splits on runs of whitespace. */
    static List<Object> split(String s, String sep, long maxsplit) {
        List<Object> parts = new ArrayList<>();
        if (sep == null) {
            int i = 0;
            int n = s.length();
            while (true) {
                while (i < n && isSpace(s.codePointAt(i))) {
                    i += Character.charCount(s.codePointAt(i));
                }
                if (i >= n) {
                    return parts;
                }
                if (maxsplit >= 0 && parts.size() == maxsplit) {
                    parts.add(s.substring(i));
                    return parts;
                }
                int start = i;
                while (i < n && !isSpace(s.codePointAt(i))) {
                    i += Character.charCount(s.codePointAt(i));
                }
                parts.add(s.substring(start, i));
            }
        }
        if (sep.isEmpty()) {
            throw ChatTemplateException.valueError("empty separator");
        }
        int start = 0;
        while (maxsplit < 0 || parts.size() < maxsplit) {
            int found = s.indexOf(sep, start);
            if (found < 0) {
                break;
            }
            parts.add(s.substring(start, found));
            start = found + sep.length();
        }
        parts.add(s.substring(start));
        return parts;
    }

    /** Python's str.rsplit(sep, maxsplit). */
    static List<Object> rsplit(String s, String sep, long maxsplit) {
        List<Object> parts = new ArrayList<>();
        if (sep == null) {
            int i = s.length();
            while (true) {
                while (i > 0 && isSpace(s.codePointBefore(i))) {
                    i -= Character.charCount(s.codePointBefore(i));
                }
                if (i <= 0) {
                    break;
                }
                if (maxsplit >= 0 && parts.size() == maxsplit) {
                    parts.add(s.substring(0, i));
                    break;
                }
                int end = i;
                while (i > 0 && !isSpace(s.codePointBefore(i))) {
                    i -= Character.charCount(s.codePointBefore(i));
                }
                parts.add(s.substring(i, end));
            }
            return reversed(parts);
        }
        if (sep.isEmpty()) {
            throw ChatTemplateException.valueError("empty separator");
        }
        int end = s.length();
        while (maxsplit < 0 || parts.size() < maxsplit) {
            int found = s.lastIndexOf(sep, end - sep.length());
            if (found < 0) {
                break;
            }
            parts.add(s.substring(found + sep.length(), end));
            end = found;
        }
        parts.add(s.substring(0, end));
        return reversed(parts);
    }

    private static List<Object> reversed(List<Object> parts) {
        List<Object> result = new ArrayList<>(parts.size());
        for (int i = parts.size() - 1; i >= 0; i--) {
            result.add(parts.get(i));
        }
        return result;
    }

    static List<Object> splitlines(String s, boolean keepends) {
        List<Object> lines = new ArrayList<>();
        int start = 0;
        int i = 0;
        while (i < s.length()) {
            int cp = s.codePointAt(i);
            int next = i + Character.charCount(cp);
            if (isLineBreak(cp)) {
                if (cp == '\r' && next < s.length() && s.charAt(next) == '\n') {
                    next++;
                }
                lines.add(s.substring(start, keepends ? next : i));
                start = next;
            }
            i = next;
        }
        if (start < s.length()) {
            lines.add(s.substring(start));
        }
        return lines;
    }

    // ---------------------------------------------------------------- case

    static String upper(String s) {
        return s.toUpperCase(Locale.ROOT);
    }

    static String lower(String s) {
        return s.toLowerCase(Locale.ROOT);
    }

    /** Python's str.title(): a letter after a cased letter is lowered, any other letter title-cased. */
    static String title(String s) {
        StringBuilder out = new StringBuilder(s.length());
        boolean previousCased = false;
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            if (Character.isUpperCase(cp) || Character.isTitleCase(cp)) {
                out.appendCodePoint(previousCased ? Character.toLowerCase(cp) : cp);
                previousCased = true;
            } else if (Character.isLowerCase(cp)) {
                out.appendCodePoint(previousCased ? cp : Character.toTitleCase(cp));
                previousCased = true;
            } else {
                out.appendCodePoint(cp);
                previousCased = false;
            }
        }
        return out.toString();
    }

    /** Python's str.capitalize(): the first character title-cased, the rest lowered. */
    static String capitalize(String s) {
        if (s.isEmpty()) {
            return s;
        }
        int first = s.codePointAt(0);
        int rest = Character.charCount(first);
        return Character.toString(Character.toTitleCase(first)) + lower(s.substring(rest));
    }

    static String swapcase(String s) {
        StringBuilder out = new StringBuilder(s.length());
        s.codePoints().forEach(cp -> out.appendCodePoint(Character.isUpperCase(cp) ? Character.toLowerCase(cp)
                : Character.isLowerCase(cp) ? Character.toUpperCase(cp) : cp));
        return out.toString();
    }

    static boolean isLower(String s) {
        boolean cased = false;
        for (int cp : s.codePoints().toArray()) {
            if (Character.isUpperCase(cp) || Character.isTitleCase(cp)) {
                return false;
            }
            cased |= Character.isLowerCase(cp);
        }
        return cased;
    }

    static boolean isUpper(String s) {
        boolean cased = false;
        for (int cp : s.codePoints().toArray()) {
            if (Character.isLowerCase(cp) || Character.isTitleCase(cp)) {
                return false;
            }
            cased |= Character.isUpperCase(cp);
        }
        return cased;
    }

    static boolean isTitle(String s) {
        boolean cased = false;
        boolean previousCased = false;
        for (int cp : s.codePoints().toArray()) {
            if (Character.isUpperCase(cp) || Character.isTitleCase(cp)) {
                if (previousCased) {
                    return false;
                }
                previousCased = true;
                cased = true;
            } else if (Character.isLowerCase(cp)) {
                if (!previousCased) {
                    return false;
                }
                previousCased = true;
                cased = true;
            } else {
                previousCased = false;
            }
        }
        return cased;
    }

    // ---------------------------------------------------------------- search and replace

    /** Python's str.find/rfind with optional code-point bounds; -1 when absent. */
    static int find(String s, String sub, Object start, Object end, boolean fromRight) {
        int length = length(s);
        int[] range = bounds(length, start, end);
        if (range[1] - range[0] < length(sub)) {
            return -1;
        }
        int from = charIndex(s, range[0]);
        int to = charIndex(s, range[1]);
        String window = s.substring(from, to);
        int found = fromRight ? window.lastIndexOf(sub) : window.indexOf(sub);
        return found < 0 ? -1 : codePointIndex(s, from + found);
    }

    static int count(String s, String sub, Object start, Object end) {
        int[] range = bounds(length(s), start, end);
        if (range[1] - range[0] < length(sub)) {
            return 0;
        }
        String window = s.substring(charIndex(s, range[0]), charIndex(s, range[1]));
        if (sub.isEmpty()) {
            return length(window) + 1;
        }
        int count = 0;
        for (int i = window.indexOf(sub); i >= 0; i = window.indexOf(sub, i + sub.length())) {
            count++;
        }
        return count;
    }

    static boolean startsOrEndsWith(String s, Object affixes, Object start, Object end, boolean ends) {
        int[] range = bounds(length(s), start, end);
        if (range[0] > range[1]) {
            return false;
        }
        String window = s.substring(charIndex(s, range[0]), charIndex(s, range[1]));
        List<?> candidates = affixes instanceof PyTuple tuple ? tuple : java.util.Collections.singletonList(affixes);
        for (Object candidate : candidates) {
            if (!(candidate instanceof String affix)) {
                throw ChatTemplateException.typeError((ends ? "endswith" : "startswith")
                        + " first arg must be str or a tuple of str, not " + Py.typeName(candidate));
            }
            if (ends ? window.endsWith(affix) : window.startsWith(affix)) {
                return true;
            }
        }
        return false;
    }

    /** Python's slice-style bounds [start, end) clamped to [0, length]. */
    private static int[] bounds(int length, Object start, Object end) {
        long from = start == null ? 0 : Py.asLong(start);
        long to = end == null ? length : Py.asLong(end);
        if (from < 0) {
            from = Math.max(0, from + length);
        }
        if (to < 0) {
            to = Math.max(0, to + length);
        }
        return new int[] {(int) Math.min(from, length), (int) Math.min(to, length)};
    }

    /** Python's str.replace(old, new, count); an empty {@code old} inserts between every character. */
    static String replace(String s, String old, String replacement, long count) {
        if (count < 0) {
            count = Long.MAX_VALUE;
        }
        StringBuilder out = new StringBuilder(s.length());
        if (old.isEmpty()) {
            long done = 0;
            int i = 0;
            while (i <= s.length()) {
                if (done < count) {
                    out.append(replacement);
                    done++;
                }
                if (i == s.length()) {
                    break;
                }
                int cp = s.codePointAt(i);
                out.appendCodePoint(cp);
                i += Character.charCount(cp);
            }
            return out.toString();
        }
        int start = 0;
        long done = 0;
        while (done < count) {
            int found = s.indexOf(old, start);
            if (found < 0) {
                break;
            }
            out.append(s, start, found).append(replacement);
            start = found + old.length();
            done++;
        }
        return out.append(s, start, s.length()).toString();
    }

    // ---------------------------------------------------------------- padding

    static String center(String s, int width, String fill) {
        int margin = width - length(s);
        if (margin <= 0) {
            return s;
        }
        int left = margin / 2 + (margin & width & 1);
        return fill.repeat(left) + s + fill.repeat(margin - left);
    }

    static String ljust(String s, int width, String fill) {
        int margin = width - length(s);
        return margin <= 0 ? s : s + fill.repeat(margin);
    }

    static String rjust(String s, int width, String fill) {
        int margin = width - length(s);
        return margin <= 0 ? s : fill.repeat(margin) + s;
    }

    static String zfill(String s, int width) {
        int margin = width - length(s);
        if (margin <= 0) {
            return s;
        }
        if (!s.isEmpty() && (s.charAt(0) == '+' || s.charAt(0) == '-')) {
            return s.charAt(0) + "0".repeat(margin) + s.substring(1);
        }
        return "0".repeat(margin) + s;
    }
}
