package dev.crucible.torch.policy;

import dev.crucible.api.UserInputException;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.ModelCost;
import dev.crucible.api.tensor.DType;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Where each part of a model goes when it is split by layers over several local devices of one kind (pipeline
 * placement, as Hugging Face accelerate's {@code device_map="auto"} does): the embedding on the first device, the
 * layers in order, each device filled before the next is used, the final norm and head after the last layer. A
 * model that fits the first device stays on it whole. A tied head is the embedding itself, so it stays where the
 * embedding is.
 *
 * @param embeddingDevice the device the embedding table is on (index into the devices given)
 * @param layerDevices    each layer's device
 * @param headDevice      the device of the final norm and output head
 * @param bytesPerDevice  weights and reserve planned onto each device
 */
public record LayerPlan(int embeddingDevice, int[] layerDevices, int headDevice, long[] bytesPerDevice) {

    public LayerPlan {
        layerDevices = layerDevices.clone();
        bytesPerDevice = bytesPerDevice.clone();
    }

    /**
     * What must fit.
     *
     * @param embeddingBytes      the embedding table
     * @param layerBytes          each layer's weights
     * @param headBytes           the final norm and, unless tied to the embedding, the output head
     * @param tiedHead            whether the head is the embedding table (then it goes where the embedding is)
     * @param reservePerLayer     what each layer needs beside its weights while it runs (its share of the KV cache)
     */
    public record Demand(long embeddingBytes, long[] layerBytes, long headBytes, boolean tiedHead, long reservePerLayer) {
        public Demand {
            layerBytes = layerBytes.clone();
        }

        /**
         * What {@code config} needs in {@code dtype}: its weights part by part (the layers' shared equally) and, as
         * each layer's reserve, its share of a KV cache of {@code cacheTokens} tokens (all rows together).
         */
        public static Demand of(ModelConfig config, DType dtype, long cacheTokens) {
            ModelCost cost = ModelCost.of(config, dtype);
            int layers = config.numLayers();
            long perLayer = layers == 0 ? 0 : (cost.linearParams() + cost.normParams()) / layers * dtype.byteSize();
            long[] layerBytes = new long[layers];
            Arrays.fill(layerBytes, perLayer);
            long embedding = (long) config.vocabSize() * config.hiddenSize() * dtype.byteSize();
            long head = (config.tieWordEmbeddings() ? 0 : embedding) + (long) config.hiddenSize() * dtype.byteSize();
            long reservePerLayer = layers == 0 ? 0 : cost.cacheRowBytes() / layers * cacheTokens;
            return new Demand(embedding, layerBytes, head, config.tieWordEmbeddings(), reservePerLayer);
        }

        long total() {
            long sum = embeddingBytes + headBytes;
            for (long layer : layerBytes) {
                sum += layer + reservePerLayer;
            }
            return sum;
        }
    }

    /**
     * Plans {@code demand} onto devices with {@code freeBytes} each, keeping {@code headroom} (a fraction, e.g. 0.1)
     * of every device free for activations and the allocator's fragmentation. Fails with one line when the devices
     * together cannot hold the model.
     */
    public static LayerPlan plan(Demand demand, long[] freeBytes, double headroom) {
        Objects.requireNonNull(demand, "demand is null");
        if (freeBytes.length == 0) {
            throw new IllegalArgumentException("no device to plan onto");
        }
        if (!(headroom >= 0 && headroom < 1)) {
            throw new IllegalArgumentException("headroom must be in [0, 1), got " + headroom);
        }
        long[] budget = new long[freeBytes.length];
        for (int i = 0; i < budget.length; i++) {
            budget[i] = (long) (freeBytes[i] * (1 - headroom));
        }
        long[] used = new long[freeBytes.length];
        int device = 0;
        used[0] += demand.embeddingBytes();
        if (used[0] > budget[0]) {
            throw doesNotFit(demand, budget);
        }
        int[] layers = new int[demand.layerBytes().length];
        for (int layer = 0; layer < layers.length; layer++) {
            long need = demand.layerBytes()[layer] + demand.reservePerLayer();
            while (used[device] + need > budget[device]) {
                device++;
                if (device == budget.length) {
                    throw doesNotFit(demand, budget);
                }
            }
            used[device] += need;
            layers[layer] = device;
        }
        // A tied head multiplies by the embedding table, so the last hidden state goes back to its device.
        int head = demand.tiedHead() ? 0 : device;
        while (used[head] + demand.headBytes() > budget[head]) {
            if (demand.tiedHead() || ++head == budget.length) {
                throw doesNotFit(demand, budget);
            }
        }
        used[head] += demand.headBytes();
        return new LayerPlan(0, layers, head, used);
    }

    private static UserInputException doesNotFit(Demand demand, long[] budget) {
        long total = Arrays.stream(budget).sum();
        return new UserInputException(String.format(Locale.ROOT, "the model needs %s of weights and cache, more"
                        + " than the %d device%s can hold (%s usable); use a 4-bit quantization or a smaller model",
                gib(demand.total()), budget.length, budget.length == 1 ? "" : "s", gib(total)));
    }

    /** The number of devices the plan uses. */
    public int devicesUsed() {
        int last = headDevice;
        for (int device : layerDevices) {
            last = Math.max(last, device);
        }
        return Math.max(last, embeddingDevice) + 1;
    }

    /** One line, e.g. {@code cuda:0 embedding, layers 0-13 (12.10 GiB); cuda:1 layers 14-27, head (11.80 GiB)}. */
    public String describe(String devicePrefix) {
        List<String> names = new ArrayList<>();
        for (int device = 0; device < devicesUsed(); device++) {
            names.add(devicePrefix + device);
        }
        return describe(names);
    }

    /** {@link #describe(String)} with plan device i named {@code names.get(i)}. */
    public String describe(List<String> names) {
        List<String> parts = new ArrayList<>();
        for (int device = 0; device < devicesUsed(); device++) {
            List<String> holds = new ArrayList<>();
            if (embeddingDevice == device) {
                holds.add("embedding");
            }
            int first = -1;
            int last = -1;
            for (int layer = 0; layer < layerDevices.length; layer++) {
                if (layerDevices[layer] == device) {
                    first = first < 0 ? layer : first;
                    last = layer;
                }
            }
            if (first >= 0) {
                holds.add(first == last ? "layer " + first : "layers " + first + "-" + last);
            }
            if (headDevice == device) {
                holds.add("head");
            }
            parts.add(names.get(device) + " " + String.join(", ", holds) + " (" + gib(bytesPerDevice[device]) + ")");
        }
        return String.join("; ", parts);
    }

    static String gib(long bytes) {
        return String.format(Locale.ROOT, "%.2f GiB", bytes / (double) (1L << 30));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LayerPlan p && embeddingDevice == p.embeddingDevice && headDevice == p.headDevice
                && Arrays.equals(layerDevices, p.layerDevices) && Arrays.equals(bytesPerDevice, p.bytesPerDevice);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(layerDevices) + Arrays.hashCode(bytesPerDevice) + embeddingDevice + 7 * headDevice;
    }

    @Override
    public String toString() {
        return "LayerPlan[" + describe("#") + "]";
    }
}
