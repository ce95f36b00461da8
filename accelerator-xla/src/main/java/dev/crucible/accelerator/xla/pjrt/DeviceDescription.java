package dev.crucible.accelerator.xla.pjrt;

/**
 * A device as a topology or client describes it.
 *
 * @param id   the global device id ({@code PJRT_DeviceDescription_Id}): what a device assignment names
 * @param kind e.g. {@code TPU v5 lite}
 */
public record DeviceDescription(int id, String kind) {
}
