package dev.crucible.runner.finetune;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.crucible.runner.Main;
import dev.crucible.runner.RunnerEnvironment;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;

/** The runner in-process with one compute thread (two threads on a shared two-core machine are much slower). */
record Cli(int exit, String out, String err) {

    static Cli run(Map<String, String> env, String... args) {
        Map<String, String> all = new HashMap<>(env);
        all.putIfAbsent("CRUCIBLE_THREADS", "1");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = Main.run(args, new RunnerEnvironment(all, Optional.empty()), new PrintWriter(out, true),
                new PrintWriter(err, true));
        return new Cli(exit, out.toString(), err.toString());
    }

    static Cli run(String... args) {
        return run(Map.of(), args);
    }

    static JsonNode json(Path file) {
        try {
            return JsonMapper.builder().build().readTree(file.toFile());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String sha256(Path file) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    String all() {
        return out + err;
    }
}
