package dev.crucible.huggingface.template;

import static dev.crucible.huggingface.template.Templates.render;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** trim_blocks, lstrip_blocks, the -/+ modifiers and newline handling, as transformers configures Jinja. */
class ChatTemplateWhitespaceTest {

    @Test
    void blockTagsOnTheirOwnLinesLeaveNoTrace() {
        // lstrip_blocks removes the indentation before {% %}, trim_blocks the newline after it.
        assertEquals("a\n  x\n b", render("a\n  {% if true %}\n  x\n  {% endif %}\n b"));
    }

    @Test
    void printTagsAreNeitherLstrippedNorTrimmed() {
        assertEquals("a\n  x  \n  b", render("a\n  {{ 'x' }}  \n  b"));
    }

    @Test
    void minusStripsAllWhitespaceIncludingNewlinesOnThatSide() {
        assertEquals("axb", render("a  \n {%- if true -%} \n x \n {%- endif -%}\n\n b"));
        assertEquals("a\nb", render("{{ 'a' -}}  \n  \n{{ '\\n' }}\n  {{- 'b' }}"));
    }

    @Test
    void plusKeepsWhatTrimAndLstripWouldRemove() {
        assertEquals("  x", render("  {%+ if true %}x{% endif %}"));
        assertEquals("\nx", render("{% if true +%}\nx{% endif %}"));
    }

    @Test
    void commentsFollowTheBlockRules() {
        assertEquals("line\nnext", render("line\n    {# comment #}\nnext"));
        assertEquals("linenext", render("line\n    {#- comment -#}   \n   next"));
    }

    @Test
    void lstripOnlyAppliesWhenTheTagStartsTheLine() {
        assertEquals("a  x", render("a  {% if true %}x{% endif %}"));
        // Python counts U+00A0 as whitespace, so it is stripped at the start of a line like a space.
        assertEquals("a\nx", render("a\n\u00a0{% if true %}x{% endif %}"));
    }

    @Test
    void oneTrailingNewlineOfTheSourceIsDropped() {
        assertEquals("x", render("x\n"));
        assertEquals("x\n", render("x\n\n"));
    }

    @Test
    void lineBreaksAreNormalisedToNewline() {
        assertEquals("x\ny\nz", render("x\r\ny\rz\r\n"));
    }

    @Test
    void loopTagsVanishButTheIndentationOfPrintTagsStays() {
        assertEquals("  0\n  1\n  2\n", render("{% for i in range(3) %}\n  {{ i }}\n{% endfor %}\n"));
        assertEquals("0,1,2,", render("{%- for i in range(3) -%}\n  {{ i }},\n{%- endfor %}\n"));
    }

    @Test
    void templateSyntaxInsideStringsAndRawBlocksStaysLiteral() {
        assertEquals("{{ x }} {% if %}", render("{{ '{{ x }}' }} {% raw %}{% if %}{% endraw %}"));
        assertEquals("{'a': {'b': 1}}", render("{{ {'a': {'b': 1}} }}"));
    }
}
