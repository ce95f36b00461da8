package dev.crucible.huggingface.template;

import static dev.crucible.huggingface.template.Templates.map;
import static dev.crucible.huggingface.template.Templates.render;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Jinja's scoping: loops isolate assignments, if-blocks do not, namespaces carry values out. */
class ChatTemplateScopingTest {

    @Test
    void setInsideALoopDoesNotLeakOut() {
        assertEquals("23|1", render("{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + 1 %}{{ x + i - 1 }}"
                + "{% endfor %}|{{ x }}"));
    }

    @Test
    void eachIterationStartsFromTheOuterValue() {
        // The second iteration does not see the first iteration's assignment.
        assertEquals("22|", render("{% for i in [1, 2] %}{% set y = (y or 0) + 2 %}{{ y }}{% endfor %}|{{ y }}"));
    }

    @Test
    void setInsideAnIfIsVisibleAfterIt() {
        assertEquals("5", render("{% if true %}{% set z = 5 %}{% endif %}{{ z }}"));
    }

    @Test
    void namespaceAttributesSurviveTheLoop() {
        assertEquals("6|true", render("{% set ns = namespace(total=0, seen=false) %}"
                + "{% for i in [1, 2, 3] %}{% set ns.total = ns.total + i %}{% set ns.seen = true %}{% endfor %}"
                + "{{ ns.total }}|{{ ns.seen|lower }}"));
    }

    @Test
    void topLevelSetMayRebindARenderVariable() {
        assertEquals("2:b", render("{% set messages = messages[1:] %}{{ messages|length }}:{{ messages[0] }}",
                "messages", List.of("a", "b", "c")));
    }

    @Test
    void nestedLoopsSeeOuterLoopVariablesButNotTheirAssignmentsLater() {
        assertEquals("3|", render("{% for a in [1] %}{% for b in [2] %}{% set c = a + b %}{{ c }}{% endfor %}"
                + "{% endfor %}|{{ c }}"));
    }

    @Test
    void aNameTheTemplateAssignsLaterIsUndefinedBeforeThatAssignmentRuns() {
        // Jinja decides at compile time that "a" belongs to the template body (its first use there is an
        // assignment), so the loop and the macro that run earlier do not see the render variable of that name.
        assertEquals("[]9", render("{% for i in [1] %}[{{ a }}]{% endfor %}{% set a = 9 %}{{ a }}", "a", "A"));
        assertEquals("[][9]", render("{% macro m() %}[{{ a }}]{% endmacro %}{{ m() }}{% set a = 9 %}{{ m() }}",
                "a", "A"));
        // Read first, or assigned only conditionally: looked up as usual.
        assertEquals("A[A]9", render("{{ a }}{% for i in [1] %}[{{ a }}]{% endfor %}{% set a = 9 %}{{ a }}",
                "a", "A"));
        assertEquals("[A]", render("{% for i in [1] %}[{{ a }}]{% endfor %}{% if true %}{% set a = 1 %}"
                + "{% else %}{% set a = 2 %}{% endif %}", "a", "A"));
        assertEquals("[][]", render("{% for i in [1, 2] %}{% for j in [1] %}[{{ a }}]{% endfor %}{% set a = 5 %}"
                + "{% endfor %}", "a", "A"));
    }

    @Test
    void macrosSeeTopLevelVariablesAtCallTime() {
        assertEquals("1-2-9|1-3-9", render("{% macro m(a, b=2) %}{{ a }}-{{ b }}-{{ x }}{% endmacro %}"
                + "{% set x = 9 %}{{ m(1) }}|{{ m(1, b=3) }}"));
    }

    @Test
    void loopVariablesCountTheFilteredItems() {
        assertEquals("a=1,c=3", render("{% for k, v in d.items() if k != 'b' %}{{ k }}={{ v }}"
                + "{{ ',' if not loop.last }}{% endfor %}", "d", map("a", 1, "b", 2, "c", 3)));
        assertEquals("1:0:3:True:False 2:1:2:False:False 3:2:1:False:True", render(
                "{% for x in 'abc' %}{{ loop.index }}:{{ loop.index0 }}:{{ loop.revindex }}:{{ loop.first }}:"
                        + "{{ loop.last }}{{ ' ' if not loop.last }}{% endfor %}"));
    }

    @Test
    void breakContinueAndElse() {
        assertEquals("13", render("{% for i in [1, 2, 3, 4] %}{% if i == 2 %}{% continue %}{% endif %}"
                + "{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}"));
        assertEquals("none", render("{% for i in [1, 2] if i > 5 %}x{% else %}none{% endfor %}"));
    }

    @Test
    void setBlocksCaptureRenderedText() {
        assertEquals("[INNER 2]", render("{% set s | upper | trim %}  inner {{ 1 + 1 }} {% endset %}[{{ s }}]"));
    }
}
