package dev.crucible.api.io;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Writes safetensors files and sharded Hugging Face model folders.
 *
 * <p>The header is what the reference implementation writes: compact JSON with {@code __metadata__} first,
 * {@code dtype}, {@code shape}, {@code data_offsets} per tensor, padded with spaces to a multiple of 8 bytes so
 * the data section is aligned. Tensors keep the order they are given in (the reference sorts them by dtype and
 * name instead; readers do not care, and callers may want their own order). Output depends only on the input,
 * so the same export has the same SHA-256.
 *
 * <p>Every file is written to a temporary file in the target folder, flushed to disk and renamed over the target,
 * so a crash or an error never leaves a half-written checkpoint behind.
 */
public final class SafetensorsWriter {

    /** transformers' shard names: {@code model-00001-of-00003.safetensors}. */
    private static final Pattern SHARD_NAME = Pattern.compile("model-\\d{5}-of-\\d{5}\\.safetensors");
    private static final int WRITE_CHUNK_BYTES = 8 << 20;

    private SafetensorsWriter() {
    }

    /** Writes one safetensors file; {@code metadata} may be empty (then there is no {@code __metadata__}). */
    public static void write(Path file, List<WritableTensor> tensors, Map<String, String> metadata) {
        Objects.requireNonNull(file, "file is null");
        checkUniqueNames(tensors);
        byte[] header = header(tensors, metadata);
        AtomicFiles.write(file, channel -> {
            ByteBuffer prefix = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(header.length).flip();
            writeFully(channel, prefix);
            writeFully(channel, ByteBuffer.wrap(header));
            for (WritableTensor tensor : tensors) {
                writeSegment(channel, tensor.bytes());
            }
        });
    }

    /**
     * Writes {@code tensors} into {@code directory} the way transformers' {@code save_pretrained} does: one
     * {@code model.safetensors} when everything fits in {@code maxShardBytes}, otherwise shards named
     * {@code model-00001-of-0000N.safetensors} plus {@code model.safetensors.index.json}. Weight files of an earlier
     * export that the new one does not replace (other shards, a stale index or single file) are removed, so the
     * folder never mixes two exports.
     *
     * @return the files written, shards first, then the index if there is one
     */
    public static List<Path> writeModel(Path directory, List<WritableTensor> tensors, Map<String, String> metadata,
                                        long maxShardBytes) {
        Objects.requireNonNull(directory, "directory is null");
        if (maxShardBytes <= 0) {
            throw new IllegalArgumentException("maxShardBytes must be positive, got " + maxShardBytes);
        }
        checkUniqueNames(tensors);
        try {
            Files.createDirectories(directory);
        } catch (IOException e) {
            throw WriteFailure.of(directory, e);
        }
        List<List<WritableTensor>> shards = planShards(tensors, maxShardBytes);
        List<Path> written = new ArrayList<>();
        if (shards.size() <= 1) {
            Path single = directory.resolve(Checkpoint.SINGLE_FILE);
            write(single, tensors, metadata);
            written.add(single);
        } else {
            List<String> fileNames = new ArrayList<>();
            for (int i = 0; i < shards.size(); i++) {
                String name = shardName(i + 1, shards.size());
                write(directory.resolve(name), shards.get(i), metadata);
                written.add(directory.resolve(name));
                fileNames.add(name);
            }
            Path index = directory.resolve(Checkpoint.INDEX_FILE);
            byte[] json = ShardIndex.json(shards, fileNames).getBytes(StandardCharsets.UTF_8);
            AtomicFiles.write(index, json);
            written.add(index);
        }
        removeStaleWeights(directory, written);
        return List.copyOf(written);
    }

    /**
     * huggingface_hub's {@code split_state_dict_into_shards_factory}: tensors fill a shard in order until the next
     * one would push it past the limit; a tensor larger than the limit gets a shard of its own, placed at once
     * (before the shard being filled, exactly as the Python code orders them).
     */
    static List<List<WritableTensor>> planShards(List<WritableTensor> tensors, long maxShardBytes) {
        List<List<WritableTensor>> shards = new ArrayList<>();
        List<WritableTensor> current = new ArrayList<>();
        long currentBytes = 0;
        for (WritableTensor tensor : tensors) {
            long size = tensor.byteSize();
            if (size > maxShardBytes) {
                shards.add(List.of(tensor));
                continue;
            }
            if (currentBytes + size > maxShardBytes) {
                shards.add(current);
                current = new ArrayList<>();
                currentBytes = 0;
            }
            current.add(tensor);
            currentBytes += size;
        }
        if (!current.isEmpty()) {
            shards.add(current);
        }
        return shards;
    }

    static String shardName(int index, int count) {
        return String.format("model-%05d-of-%05d.safetensors", index, count);
    }

    static byte[] header(List<WritableTensor> tensors, Map<String, String> metadata) {
        StringBuilder json = new StringBuilder("{");
        if (!metadata.isEmpty()) {
            Json.appendSerdeString(json, SafetensorsHeader.METADATA_KEY);
            json.append(":{");
            boolean first = true;
            for (Map.Entry<String, String> entry : metadata.entrySet()) {
                if (!first) {
                    json.append(',');
                }
                first = false;
                Json.appendSerdeString(json, entry.getKey());
                json.append(':');
                Json.appendSerdeString(json, entry.getValue());
            }
            json.append('}');
        }
        long offset = 0;
        for (WritableTensor tensor : tensors) {
            if (json.length() > 1) {
                json.append(',');
            }
            Json.appendSerdeString(json, tensor.name());
            json.append(":{\"dtype\":\"").append(SafetensorsDTypes.nameOf(tensor.dtype())).append("\",\"shape\":[");
            long[] shape = tensor.shape();
            for (int i = 0; i < shape.length; i++) {
                json.append(i == 0 ? "" : ",").append(shape[i]);
            }
            long end = offset + tensor.byteSize();
            json.append("],\"data_offsets\":[").append(offset).append(',').append(end).append("]}");
            offset = end;
        }
        json.append('}');
        byte[] bytes = json.toString().getBytes(StandardCharsets.UTF_8);
        int padding = (8 - bytes.length % 8) % 8;
        byte[] padded = Arrays.copyOf(bytes, bytes.length + padding);
        Arrays.fill(padded, bytes.length, padded.length, (byte) ' ');
        return padded;
    }

    private static void checkUniqueNames(List<WritableTensor> tensors) {
        Set<String> seen = new HashSet<>();
        for (WritableTensor tensor : tensors) {
            if (!seen.add(tensor.name())) {
                throw new IllegalArgumentException("tensor name " + tensor.name() + " appears twice");
            }
        }
    }

    private static void removeStaleWeights(Path directory, List<Path> written) {
        try (Stream<Path> entries = Files.list(directory)) {
            for (Path entry : entries.toList()) {
                String name = entry.getFileName().toString();
                boolean weights = name.equals(Checkpoint.SINGLE_FILE) || name.equals(Checkpoint.INDEX_FILE)
                        || SHARD_NAME.matcher(name).matches();
                if (weights && !written.contains(entry) && Files.isRegularFile(entry)) {
                    Files.delete(entry);
                }
            }
        } catch (IOException e) {
            throw WriteFailure.of(directory, e);
        }
    }

    private static void writeSegment(FileChannel channel, MemorySegment segment) throws IOException {
        // ByteBuffers stop at 2 GiB, so large tensors go out in slices. A segment over a float[] or short[] (host
        // tensors made from Java arrays) cannot be viewed as a ByteBuffer: its bytes are copied out chunk by chunk.
        boolean viewable = segment.isNative() || segment.heapBase().map(base -> base instanceof byte[]).orElse(false);
        byte[] chunk = viewable ? null : new byte[(int) Math.min(WRITE_CHUNK_BYTES, segment.byteSize())];
        for (long offset = 0; offset < segment.byteSize(); offset += WRITE_CHUNK_BYTES) {
            long length = Math.min(WRITE_CHUNK_BYTES, segment.byteSize() - offset);
            if (viewable) {
                writeFully(channel, segment.asSlice(offset, length).asByteBuffer());
            } else {
                MemorySegment.copy(segment, offset, MemorySegment.ofArray(chunk), 0, length);
                writeFully(channel, ByteBuffer.wrap(chunk, 0, (int) length));
            }
        }
    }

    private static void writeFully(FileChannel channel, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
    }
}
