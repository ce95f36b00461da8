package dev.crucible.api.io;

import dev.crucible.api.tensor.Shapes;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.DType;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The parsed and checked JSON header of a safetensors file.
 *
 * <p>The checks follow the reference implementation (huggingface/safetensors): a header of at most 100 MB that
 * is a UTF-8 JSON object; {@code __metadata__} a map of strings; per tensor a known dtype, a shape of
 * non-negative integers and {@code [start, end]} offsets whose length is exactly elements × dtype size; and the
 * tensors, sorted by offset, must tile the data section from 0 to its end with neither gaps nor overlaps. The
 * reference rejects gaps too (its "MetadataIncompleteBuffer" and "InvalidOffset" errors), so a file we accept
 * is one every other reader accepts.
 */
record SafetensorsHeader(Map<String, TensorInfo> tensors, Map<String, String> metadata) {

    /** The reference implementation's limit; real headers are at most a few MB. */
    static final long MAX_HEADER_BYTES = 100_000_000L;
    static final String METADATA_KEY = "__metadata__";

    private static final JsonMapper JSON = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    SafetensorsHeader {
        tensors = Collections.unmodifiableMap(new LinkedHashMap<>(tensors));
        metadata = Collections.unmodifiableMap(new LinkedHashMap<>(metadata));
    }

    /**
     * Parses {@code headerBytes} and checks it against a data section of {@code dataLength} bytes.
     *
     * @param file what to name in error messages
     */
    static SafetensorsHeader parse(String file, byte[] headerBytes, long dataLength) {
        JsonNode root = parseJson(file, headerBytes);
        Map<String, TensorInfo> tensors = new LinkedHashMap<>();
        Map<String, String> metadata = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> entry : root.properties()) {
            if (entry.getKey().equals(METADATA_KEY)) {
                metadata.putAll(parseMetadata(file, entry.getValue()));
            } else {
                TensorInfo info = parseTensor(file, entry.getKey(), entry.getValue(), dataLength);
                tensors.put(info.name(), info);
            }
        }
        checkTiling(file, tensors.values(), dataLength);
        return new SafetensorsHeader(tensors, metadata);
    }

    private static JsonNode parseJson(String file, byte[] headerBytes) {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(headerBytes))
                    .toString();
        } catch (CharacterCodingException e) {
            throw bad(file, "the header is not valid UTF-8");
        }
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw bad(file, "the header is not valid JSON (" + oneLine(e.getOriginalMessage()) + ")");
        }
        if (root == null || !root.isObject()) {
            throw bad(file, "the header is not a JSON object");
        }
        return root;
    }

    private static Map<String, String> parseMetadata(String file, JsonNode node) {
        if (!node.isObject()) {
            throw bad(file, "__metadata__ is not a JSON object of strings");
        }
        Map<String, String> metadata = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> entry : node.properties()) {
            if (!entry.getValue().isTextual()) {
                throw bad(file, "__metadata__ value for " + quote(entry.getKey()) + " is not a string");
            }
            metadata.put(entry.getKey(), entry.getValue().textValue());
        }
        return metadata;
    }

    private static TensorInfo parseTensor(String file, String name, JsonNode node, long dataLength) {
        String tensor = "tensor " + quote(name);
        if (!node.isObject()) {
            throw bad(file, tensor + " is not a JSON object with dtype, shape and data_offsets");
        }
        JsonNode dtypeNode = node.get("dtype");
        if (dtypeNode == null || !dtypeNode.isTextual()) {
            throw bad(file, tensor + " has no dtype string");
        }
        DType dtype = SafetensorsDTypes.fromName(dtypeNode.textValue());
        if (dtype == null) {
            throw bad(file, tensor + " has dtype " + quote(dtypeNode.textValue())
                    + ", which Crucible does not read (it reads " + SafetensorsDTypes.supportedNames() + ")");
        }
        long[] shape = integers(file, tensor, "shape", node.get("shape"), -1);
        long[] offsets = integers(file, tensor, "data_offsets", node.get("data_offsets"), 2);
        long start = offsets[0];
        long end = offsets[1];
        if (start > end) {
            throw bad(file, tensor + " has data_offsets [" + start + ", " + end + "]: start after end");
        }
        if (end > dataLength) {
            throw bad(file, tensor + " has data_offsets [" + start + ", " + end
                    + "] outside the data section of " + dataLength + " bytes (truncated file?)");
        }
        long expectedBytes;
        try {
            expectedBytes = Math.multiplyExact(Shapes.elementCount(shape), dtype.byteSize());
        } catch (ArithmeticException e) {
            throw bad(file, tensor + " has shape " + Arrays.toString(shape) + " whose size overflows");
        }
        if (end - start != expectedBytes) {
            throw bad(file, tensor + " is " + dtype + Arrays.toString(shape) + " (" + expectedBytes
                    + " bytes) but its data_offsets [" + start + ", " + end + "] span " + (end - start) + " bytes");
        }
        return new TensorInfo(name, dtype, shape, start, end);
    }

    /** Reads an array of non-negative integers; {@code length} -1 accepts any length. */
    private static long[] integers(String file, String tensor, String field, JsonNode node, int length) {
        if (node == null || !node.isArray()) {
            throw bad(file, tensor + " has no " + field + " array");
        }
        if (length >= 0 && node.size() != length) {
            throw bad(file, tensor + " has " + field + " with " + node.size() + " entries, expected " + length);
        }
        long[] values = new long[node.size()];
        for (int i = 0; i < values.length; i++) {
            JsonNode value = node.get(i);
            if (!value.isIntegralNumber() || !value.canConvertToLong()) {
                throw bad(file, tensor + " has " + field + " entry " + oneLine(value.toString())
                        + " that is not a 64-bit integer");
            }
            values[i] = value.longValue();
            if (values[i] < 0) {
                throw bad(file, tensor + " has negative " + field + " entry " + values[i]);
            }
        }
        return values;
    }

    /** Sorted by offset, the tensors must cover [0, dataLength) exactly once. */
    private static void checkTiling(String file, Iterable<TensorInfo> tensors, long dataLength) {
        List<TensorInfo> sorted = new ArrayList<>();
        tensors.forEach(sorted::add);
        sorted.sort(Comparator.comparingLong(TensorInfo::dataStart).thenComparingLong(TensorInfo::dataEnd));
        long covered = 0;
        TensorInfo previous = null;
        for (TensorInfo info : sorted) {
            if (info.dataStart() < covered) {
                throw bad(file, "tensors " + quote(previous.name()) + " and " + quote(info.name())
                        + " overlap in the data section");
            }
            if (info.dataStart() > covered) {
                throw bad(file, "data bytes [" + covered + ", " + info.dataStart() + ") before tensor "
                        + quote(info.name()) + " belong to no tensor");
            }
            covered = info.dataEnd();
            previous = info;
        }
        if (covered != dataLength) {
            throw bad(file, "data bytes [" + covered + ", " + dataLength + ") at the end belong to no tensor");
        }
    }

    static UserInputException bad(String file, String problem) {
        return new UserInputException(file + ": invalid safetensors file: " + problem);
    }

    /** Names come from the file, so keep them on one line and of sane length. */
    static String quote(String text) {
        String flat = oneLine(text);
        return "'" + (flat.length() > 200 ? flat.substring(0, 200) + "…" : flat) + "'";
    }

    private static String oneLine(String text) {
        return text == null ? "" : text.replaceAll("\\p{Cntrl}", " ");
    }
}
