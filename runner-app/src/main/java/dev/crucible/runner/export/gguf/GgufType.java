package dev.crucible.runner.export.gguf;

import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.WeightFormat;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * What {@code --gguf-type} asks for: the type of the file's matrices, as llama.cpp's {@code llama_ftype} names it. One-
 * dimensional tensors (norms, biases, rope factors) are always F32, as llama.cpp keeps them.
 */
public enum GgufType {
    F32("f32", 0), F16("f16", 1), BF16("bf16", 32), Q8_0("q8_0", 7), Q4_0("q4_0", 2), Q4_K_M("q4_k_m", 15),
    Q6_K("q6_k", 18);

    /** ggml type numbers of the dense types. */
    static final int GGML_F32 = 0;
    static final int GGML_F16 = 1;
    static final int GGML_BF16 = 30;

    private final String userName;
    private final int fileType;

    GgufType(String userName, int fileType) {
        this.userName = userName;
        this.fileType = fileType;
    }

    public String userName() {
        return userName;
    }

    /** {@code general.file_type}: llama.cpp's {@code llama_ftype}. */
    int fileType() {
        return fileType;
    }

    public static GgufType parse(String text, String flag) {
        String wanted = text.strip().toLowerCase(Locale.ROOT);
        for (GgufType type : values()) {
            if (type.userName.equals(wanted)) {
                return type;
            }
        }
        throw new UserInputException(flag + " '" + text + "' is not one of "
                + Arrays.stream(values()).map(GgufType::userName).collect(Collectors.joining(", ")));
    }

    /**
     * The ggml type of a matrix: the file's type, with llama.cpp's Q4_K_M mix (Q6_K for the output head, and for
     * attn_v and ffn_down in the layers its {@code use_more_bits} picks) and Q6_K for the head of a Q4_0 file;
     * a block type whose blocks do not divide the rows falls back as llama.cpp's does (Q4_K to Q5_0, Q6_K to Q8_0,
     * then F16).
     *
     * @param role    the matrix's role: {@code output}, {@code token_embd}, {@code attn_v}, {@code ffn_down}, ...
     * @param layer   its layer, or -1
     * @param layers  the model's layer count
     * @param columns the row width
     */
    TensorType matrixType(String role, int layer, int layers, long columns) {
        return switch (this) {
            case F32 -> TensorType.dense(GGML_F32);
            case F16 -> TensorType.dense(GGML_F16);
            case BF16 -> TensorType.dense(GGML_BF16);
            case Q8_0 -> TensorType.block(WeightFormat.GgufType.Q8_0, columns);
            case Q4_0 -> TensorType.block(role.equals("output") ? WeightFormat.GgufType.Q6_K : WeightFormat.GgufType.Q4_0,
                    columns);
            case Q6_K -> TensorType.block(WeightFormat.GgufType.Q6_K, columns);
            case Q4_K_M -> TensorType.block(role.equals("output")
                    || ((role.equals("attn_v") || role.equals("ffn_down")) && useMoreBits(layer, layers))
                    ? WeightFormat.GgufType.Q6_K : WeightFormat.GgufType.Q4_K, columns);
        };
    }

    /** llama.cpp's {@code use_more_bits}: the first and last eighth of the layers, and every third between. */
    static boolean useMoreBits(int layer, int layers) {
        return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
    }

    /** A tensor's ggml type: dense, or a block format. */
    record TensorType(int ggmlType, WeightFormat.GgufType block) {
        static TensorType dense(int ggmlType) {
            return new TensorType(ggmlType, null);
        }

        static TensorType block(WeightFormat.GgufType type, long columns) {
            WeightFormat.GgufType chosen = type;
            while (chosen != null && columns % chosen.blockSize() != 0) {
                chosen = switch (chosen) {
                    case Q4_K -> WeightFormat.GgufType.Q5_0;
                    case Q6_K -> WeightFormat.GgufType.Q8_0;
                    default -> null;
                };
            }
            return chosen == null ? dense(GGML_F16) : new TensorType(chosen.ggmlType(), chosen);
        }

        long bytes(long elements) {
            if (block != null) {
                return elements / block.blockSize() * block.blockBytes();
            }
            return elements * (ggmlType == GGML_F32 ? 4 : 2);
        }

        String describe() {
            return block != null ? block.name() : ggmlType == GGML_F32 ? "F32" : ggmlType == GGML_F16 ? "F16" : "BF16";
        }
    }
}
