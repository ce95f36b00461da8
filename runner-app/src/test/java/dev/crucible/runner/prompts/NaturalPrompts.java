package dev.crucible.runner.prompts;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The hand-written natural prompt sets in data/demo: {@code heldout-natural} (the demo model is judged on it and
 * its recipe never reads it) and {@code dev-natural} (for developing the recipe). Also what "the same words" means
 * when tests compare prompts with the corpus or replies with their prompts.
 */
public final class NaturalPrompts {
    public static final String HELD_OUT = "heldout-natural";
    public static final String DEV = "dev-natural";

    /**
     * Words that say how something is asked, not what: question words, pronouns, the frames' verbs ("tell", "give",
     * "help", "make"), fillers. Two prompts that share only these ask for different things.
     */
    private static final Set<String> FRAME_WORDS = Set.of(("a an the i me my you your u ur how do does did can "
            + "could would should what whats is are am was be to of for in on at with and or it its this that these "
            + "those please pls tell explain give show help write some any there way ways best easiest easy quick "
            + "quickly good step steps instructions tips need want wanna like just so im ive id dont get make here "
            + "course by from into out up off about as if not no all more very much them they their him her his she "
            + "he we us our who which when where why will than then also really even still someone anyone "
            + "something").split(" "));
    private static final Pattern WORD = Pattern.compile("[a-z]+");

    private NaturalPrompts() {
    }

    public static Path folder(String set) {
        return Path.of(System.getProperty("crucible.repo.root", ".."), "data", "demo", set).toAbsolutePath().normalize();
    }

    /** The prompts of one set and class ("harmful" or "harmless"), one per line. */
    public static List<String> read(String set, String kind) {
        try {
            return Files.readAllLines(folder(set).resolve(kind + ".txt"), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The words of a text that say what it is about: lowercase letters, apostrophes dropped, no frame words. */
    public static Set<String> contentWords(String text) {
        Set<String> words = new LinkedHashSet<>();
        Matcher m = WORD.matcher(text.toLowerCase(Locale.ROOT).replace("'", ""));
        while (m.find()) {
            String w = m.group();
            if (w.length() > 1 && !FRAME_WORDS.contains(w)) {
                words.add(w);
            }
        }
        return words;
    }
}
