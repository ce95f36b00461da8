package dev.crucible.runner.export;

import dev.crucible.api.io.AtomicFiles;
import dev.crucible.huggingface.hub.ModelLocator;
import dev.crucible.huggingface.hub.ModelSpec;
import dev.crucible.runner.version.Version;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The {@code README.md} of a model Crucible made, in the Hugging Face model-card layout (YAML front matter, then
 * Markdown): the base model and its revision, the method and its parameters, the scores, the command that made it
 * and the SHA-256 of every file. It replaces the base's card, whose claims (scores, hashes) are about the base.
 * Nothing in it depends on the time or the machine, so the same export writes the same card.
 *
 * @param base       where the base model came from (a Hub id and revision, or a local folder)
 * @param summary    one sentence after the title: what was done to the base
 * @param method     a paragraph on how the weights were changed
 * @param parameters the method's settings for this model, shown as a table
 * @param scores     scorer rows (empty when nothing was measured)
 * @param command    the command line that made the folder
 * @param reproducing what else it takes to make the folder again (empty when the command line is all)
 * @param tags       hub tags besides {@code crucible}
 */
public record ModelCard(ModelLocator.Located base, String summary, String method, Map<String, String> parameters, List<Score> scores, String command,
                        String reproducing, List<String> tags) {

    public static final String FILE_NAME = "README.md";
    private static final Pattern SAFE_ARGUMENT = Pattern.compile("[A-Za-z0-9_./:=@%+,-]+");

    /** One scorer's value for the base and for this model, as displayed. */
    public record Score(String name, String base, String model) { }

    public ModelCard {
        parameters = new LinkedHashMap<>(parameters);
        scores = List.copyOf(scores);
        tags = List.copyOf(tags);
    }

    /** Writes the card into {@code folder}, listing the hashes of the files already there; {@code title} names the model. */
    public void writeInto(Path folder, String title, BaseFiles files) {
        AtomicFiles.write(folder.resolve(FILE_NAME), render(folder, title, files).getBytes(StandardCharsets.UTF_8));
    }

    String render(Path folder, String title, BaseFiles files) {
        Map<String, String> licence = files.licenceMetadata();
        StringBuilder md = new StringBuilder("---\n");
        base.hubModel().ifPresent(hub -> md.append("base_model: ").append(hub.repoId()).append('\n'));
        licence.forEach((key, value) -> md.append(key).append(": ").append(value).append('\n'));
        md.append("library_name: transformers\ntags:\n- crucible\n");
        tags.forEach(tag -> md.append("- ").append(tag).append('\n'));
        md.append("---\n\n# ").append(title).append("\n\n");
        md.append(summary).append("\n\n");

        md.append("## Base model\n\n");
        if (base.hubModel().isPresent()) {
            ModelSpec hub = base.hubModel().get();
            // The snapshot folder is named by the commit the revision pointed to when it was downloaded.
            md.append("[`").append(hub.repoId()).append("`](https://huggingface.co/").append(hub.repoId())
                    .append(") at revision `").append(hub.revision()).append("` (commit `")
                    .append(base.folder().toAbsolutePath().normalize().getFileName()).append("`).\n");
        } else {
            md.append("The local folder `").append(base.reference()).append("`.\n");
        }
        List<String> licenceFiles = files.copied().stream().map(p -> p.getFileName().toString()).filter(BaseFiles::isLicence).toList();
        md.append('\n');
        if (!licence.isEmpty() || !licenceFiles.isEmpty()) {
            md.append("The base model's licence terms apply to this model");
            if (licence.containsKey("license")) {
                md.append(" (`").append(licence.get("license")).append("`)");
            }
            md.append(licenceFiles.isEmpty() ? ".\n" : "; " + code(licenceFiles) + " " + (licenceFiles.size() == 1 ? "is" : "are")
                    + " copied from the base.\n");
        } else {
            md.append("The base folder has no licence file: the base model's own terms apply.\n");
        }

        md.append("\n## Method\n\n").append(method).append('\n');
        if (!parameters.isEmpty()) {
            md.append("\n| parameter | value |\n| --- | --- |\n");
            parameters.forEach((name, value) -> md.append("| ").append(name).append(" | ").append(cell(value)).append(" |\n"));
        }
        if (!scores.isEmpty()) {
            md.append("\n## Scores\n\n| scorer | base model | this model |\n| --- | --- | --- |\n");
            for (Score s : scores) {
                md.append("| ").append(s.name()).append(" | ").append(cell(s.base())).append(" | ").append(cell(s.model())).append(" |\n");
            }
        }

        md.append("\n## How it was made\n\nWith Crucible ").append(Version.current()).append(":\n\n```sh\n")
                .append(command).append("\n```\n");
        if (!reproducing.isEmpty()) {
            md.append('\n').append(reproducing).append('\n');
        }

        md.append("\n## Files\n\n| file | SHA-256 |\n| --- | --- |\n");
        FileHashes.ofFolder(folder).forEach((name, hash) -> md.append("| `").append(name).append("` | `").append(hash).append("` |\n"));
        if (!files.dropped().isEmpty()) {
            md.append("\nNot copied from the base folder, since they describe the base rather than this model: ")
                    .append(code(files.dropped())).append(".\n");
        }
        return md.toString();
    }

    /** The command line as a shell would take it back: arguments quoted where they need it. */
    public static String commandLine(String program, List<String> arguments) {
        List<String> words = new ArrayList<>(List.of(program));
        for (String argument : arguments) {
            words.add(SAFE_ARGUMENT.matcher(argument).matches() ? argument : "'" + argument.replace("'", "'\\''") + "'");
        }
        return String.join(" ", words);
    }

    /**
     * Top-level {@code key: value} lines of a model card's YAML front matter, for the given keys. Only scalars on
     * one line are read, which is how the hub writes licence fields; anything else is left out.
     */
    static Map<String, String> frontMatter(String readme, List<String> keys) {
        Map<String, String> found = new LinkedHashMap<>();
        List<String> lines = readme.lines().toList();
        if (lines.isEmpty() || !lines.getFirst().strip().equals("---")) {
            return found;
        }
        for (String line : lines.subList(1, lines.size())) {
            if (line.strip().equals("---")) {
                break;
            }
            int colon = line.indexOf(':');
            if (colon > 0 && !Character.isWhitespace(line.charAt(0))) {
                String key = line.substring(0, colon).strip();
                String value = line.substring(colon + 1).strip();
                if (keys.contains(key) && !value.isEmpty() && !value.contains("\n")) {
                    found.put(key, value);
                }
            }
        }
        return found;
    }

    private static String code(List<String> names) {
        return String.join(", ", names.stream().map(n -> "`" + n + "`").toList());
    }

    private static String cell(String text) {
        return text.replace("|", "\\|").replace("\n", " ");
    }
}
