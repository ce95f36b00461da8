package dev.crucible.huggingface.hub;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/** A Hugging Face hub stand-in on loopback: canned answers by raw path, and a log of every request. */
final class FakeHub implements AutoCloseable {

    record Answer(int status, Map<String, String> headers, byte[] body) {
        static Answer json(String json) {
            return new Answer(200, Map.of("Content-Type", "application/json"), json.getBytes(StandardCharsets.UTF_8));
        }

        static Answer bytes(byte[] body, Map<String, String> headers) {
            return new Answer(200, headers, body);
        }

        static Answer status(int status, Map<String, String> headers) {
            return new Answer(status, headers, new byte[0]);
        }
    }

    record Request(String method, String rawPath, String authorization) {
    }

    private final HttpServer server;
    private final Map<String, Answer> answers = new ConcurrentHashMap<>();
    private final List<Request> requests = new CopyOnWriteArrayList<>();

    FakeHub() {
        try {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        server.createContext("/", this::handle);
        server.start();
    }

    String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    FakeHub answer(String rawPath, Answer answer) {
        answers.put(rawPath, answer);
        return this;
    }

    List<Request> requests() {
        return List.copyOf(requests);
    }

    private void handle(HttpExchange exchange) throws IOException {
        String rawPath = exchange.getRequestURI().getRawPath();
        requests.add(new Request(exchange.getRequestMethod(), rawPath,
                exchange.getRequestHeaders().getFirst("Authorization")));
        Answer answer = answers.getOrDefault(rawPath, Answer.status(404, Map.of("X-Error-Code", "EntryNotFound")));
        answer.headers().forEach((name, value) -> exchange.getResponseHeaders().add(name, value));
        boolean noBody = answer.body().length == 0;
        exchange.sendResponseHeaders(answer.status(), noBody ? -1 : answer.body().length);
        if (!noBody) {
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(answer.body());
            }
        }
        exchange.close();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
