package dev.crucible.huggingface.template;

import static dev.crucible.huggingface.template.Templates.map;
import static dev.crucible.huggingface.template.Templates.render;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Python semantics of the values: printing, slicing, str methods, operators, undefined values. */
class ChatTemplateValuesTest {

    @Test
    void valuesPrintAsPythonStrDoes() {
        assertEquals("None|True|1.0|1.5e+20|1e-05|0.30000000000000004|1.5|[1, 'a', None, True, {'k': \"it's\"}]"
                + "|(1,)", render("{{ none }}|{{ true }}|{{ 1.0 }}|{{ 1.5e20 }}|{{ 0.00001 }}|{{ 0.1 + 0.2 }}"
                + "|{{ 3 / 2 }}|{{ [1, 'a', none, true, {'k': \"it's\"}] }}|{{ (1,) }}"));
        assertEquals("None", render("{{ content }}", "content", null));
    }

    @Test
    void integerArithmeticFollowsPython() {
        assertEquals("3|-4|2|-2|1024|2.0|18446744073709551616", render(
                "{{ 7 // 2 }}|{{ -7 // 2 }}|{{ -7 % 3 }}|{{ 7 % -3 }}|{{ 2 ** 10 }}|{{ 4 / 2 }}|{{ 2 ** 64 }}"));
        assertEquals("True|False|True", render("{{ 1 == 1.0 }}|{{ 1 < 3 < 2 }}|{{ 1 == true }}"));
    }

    @Test
    void slicingWorksOnListsAndStringsByCodePoint() {
        List<Object> items = List.of(1, 2, 3);
        assertEquals("[3, 2, 1]|[2, 3]|[2, 3]|3|", render(
                "{{ x[::-1] }}|{{ x[1:] }}|{{ x[-2:] }}|{{ x[-1] }}|{{ x[10] }}", "x", items));
        assertEquals("cba|ab|ec|😀|ol😀h|h😀|4", render("{{ 'abc'[::-1] }}|{{ 'abc'[:-1] }}|{{ 'abcde'[4:1:-2] }}"
                + "|{{ s[1] }}|{{ s[::-1] }}|{{ s[:2] }}|{{ s|length }}", "s", "h😀lo"));
    }

    @Test
    void stringMethodsBehaveAsInPython() {
        assertEquals("True|True|a b|a|\nx", render("{{ 'Hello'.startswith('He') }}|{{ 'Hello'.endswith(('x', 'lo')) }}"
                + "|{{ '  a b  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\\n\\nx\\n'.strip('\\n').rjust(2, '\\n') }}"));
        assertEquals("c|['a', 'b', '', 'c']|['a', 'b c']|They'Re 3Rd", render(
                "{{ 'a</think>b</think>c'.split('</think>')[-1] }}|{{ 'a,b,,c'.split(',') }}"
                        + "|{{ ' a  b c'.split(None, 1) }}|{{ \"they're 3rd\".title() }}"));
        // Python's whitespace includes U+00A0, Java's String.strip() does not.
        assertEquals("[x]", render("[{{ s.strip() }}]", "s", "\u00a0x\u2003"));
    }

    @Test
    void filtersBindTighterThanOperators() {
        assertEquals("<x>", render("{{ '<' + s | trim + '>' }}", "s", "  x  "));
    }

    @Test
    void attributeLookupPrefersDictMethodsThenKeys() {
        assertEquals("I|R|True", render("{{ d['items'] }}|{{ d.role }}|{{ d.items is callable }}",
                "d", map("items", "I", "role", "R")));
    }

    @Test
    void membershipAndEquality() {
        assertEquals("True|True|False|True", render("{{ '</think>' in c }}|{{ 'tool_calls' in m }}"
                + "|{{ 'x' in m }}|{{ m == {'tool_calls': [], 'role': 'a'} }}",
                "c", "a</think>b", "m", map("role", "a", "tool_calls", List.of())));
    }

    @Test
    void undefinedValuesPrintNothingAndAreFalsy() {
        assertEquals("[]|False|0|True|x|", render("[{{ missing }}]|{{ missing is defined }}|{{ missing|length }}"
                + "|{{ not missing }}|{{ missing|default('x') }}|{% for i in missing %}{{ i }}{% endfor %}"));
        assertEquals("False", render("{{ m.tool_calls is defined }}", "m", map("role", "user")));
    }

    @Test
    void usingAnUndefinedValueFailsWithJinjasMessage() {
        ChatTemplateException missingKey = assertThrows(ChatTemplateException.class,
                () -> render("{{ m.tool_calls[0] }}", "m", map("role", "user")));
        assertEquals("UndefinedError: 'dict object' has no attribute 'tool_calls' (chat template line 1)",
                missingKey.getMessage());
        assertEquals(ChatTemplateException.Reason.RUNTIME_ERROR, missingKey.reason());
        ChatTemplateException concat = assertThrows(ChatTemplateException.class,
                () -> render("\n{{ 'a' + missing }}"));
        assertEquals("UndefinedError: 'missing' is undefined (chat template line 2)", concat.getMessage());
    }

    @Test
    void noneIsDefinedButNotAString() {
        assertEquals("True|True|False|", render("{{ tools is defined }}|{{ tools is none }}|{{ tools is string }}|"
                + "{{ none.anything }}", "tools", null));
        ChatTemplateException concat = assertThrows(ChatTemplateException.class,
                () -> render("{{ 'x' + c }}", "c", null));
        assertEquals("TypeError: can only concatenate str (not \"NoneType\") to str (chat template line 1)",
                concat.getMessage());
    }

    @Test
    void testsFollowJinja() {
        assertEquals("True|True|False|True|True|False|True", render("{{ 'text' is iterable }}|{{ m is mapping }}"
                + "|{{ m is string }}|{{ 3 is odd }}|{{ false is false }}|{{ 0 is false }}|{{ 2 is divisibleby 2 }}",
                "m", map()));
    }

    @Test
    void selectattrMapAndJoin() {
        List<Object> messages = List.of(map("role", "user", "content", "a"), map("role", "assistant", "content", "b"),
                map("role", "user", "content", "c"));
        assertEquals("2|a,c|assistant", render("{{ ms|selectattr('role', 'equalto', 'user')|list|length }}"
                + "|{{ ms|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }}"
                + "|{{ (ms|rejectattr('role', 'eq', 'user')|first).role }}", "ms", messages));
    }

    @Test
    void filterGeneratorsAreAlwaysTrueAndUsedUpOnce() {
        List<Object> messages = List.of(map("role", "user"), map("role", "assistant"));
        // selectattr returns a generator: truthy even when it would yield nothing.
        assertEquals("yes|0", render("{% if ms|selectattr('role', 'equalto', 'system') %}yes{% else %}no{% endif %}"
                + "|{{ ms|selectattr('role', 'equalto', 'system')|list|length }}", "ms", messages));
        assertEquals("user||[]", render("{% set u = ms|selectattr('role', 'equalto', 'user') %}"
                + "{% for m in u %}{{ m.role }}{% endfor %}|{% for m in u %}{{ m.role }}{% endfor %}|{{ u|list }}",
                "ms", messages));
        ChatTemplateException noLength = assertThrows(ChatTemplateException.class,
                () -> render("{{ ms|selectattr('role')|length }}", "ms", messages));
        assertEquals("TypeError: object of type 'generator' has no len() (chat template line 1)",
                noLength.getMessage());
    }

    @Test
    void dictViewsPrintAsPythonAndCannotBeIndexed() {
        assertEquals("dict_items([('a', 1), ('b', 2)])|['a', 'b']|True|3|2|False", render(
                "{{ d.items() }}|{{ d.keys()|list }}|{{ 'a' in d.keys() }}|{{ d.values()|sum }}"
                        + "|{{ d.items()|length }}|{{ d.keys()[0] is defined }}", "d", map("a", 1, "b", 2)));
    }

    @Test
    void javaNumbersAndNullsFromCallersAreAccepted() {
        assertEquals("3|None", render("{{ a + b }}|{{ c[0] }}", "a", 1, "b", 2L, "c", Arrays.asList((Object) null)));
    }
}
