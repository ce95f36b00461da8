package dev.crucible.torch;

import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import java.util.List;
import java.util.Objects;

/**
 * The devices one model split by layers runs on (pipeline placement): one {@link TorchOps} per device, which of them
 * computes each decoder layer and which the final norm and head; the embedding is on the first. Every ops of the
 * split answers {@link TorchOps#forLayer} and {@link TorchOps#forHead} from here, refuses a tensor another device made
 * and moves one with {@link TorchOps#transfer}, which is reported to the {@link TransferListener}.
 *
 * <p>Why the seam is the ops: the model definition stays one, and its layer loop is the only place that knows where
 * one layer ends, so it asks its ops for each layer's and moves the residual stream where they change: one copy per
 * boundary and step. Ops that moved operands as they met them would copy per op; the residual hook only observes; a
 * placement alone would put the weights on their devices but could not run them there.
 */
final class DeviceSplit {

    /** Told of every copy between two devices of the split. */
    interface TransferListener {
        TransferListener NONE = (from, to, shape, dtype) -> { };

        void transferred(int from, int to, long[] shape, DType dtype);
    }

    private final List<TorchOps> devices;
    private final int[] layerDevices;
    private final int headDevice;
    private volatile TransferListener listener = TransferListener.NONE;

    /**
     * Makes {@code devices} one split: device 0 holds the embedding, layer i is on {@code layerDevices[i]}, the
     * final norm and head on {@code headDevice}.
     */
    DeviceSplit(List<TorchOps> devices, int[] layerDevices, int headDevice) {
        this.devices = List.copyOf(devices);
        this.layerDevices = layerDevices.clone();
        this.headDevice = Objects.checkIndex(headDevice, devices.size());
        for (int device : layerDevices) {
            Objects.checkIndex(device, devices.size());
        }
        for (int i = 0; i < this.devices.size(); i++) {
            this.devices.get(i).joinSplit(this, i);
        }
    }

    TorchOps layer(int layer) {
        return devices.get(layerDevices[layer]);
    }

    TorchOps head() {
        return devices.get(headDevice);
    }

    void listen(TransferListener listener) {
        this.listener = Objects.requireNonNull(listener, "listener is null");
    }

    void transferred(int from, int to, Tensor tensor) {
        listener.transferred(from, to, tensor.shape(), tensor.dtype());
    }
}
