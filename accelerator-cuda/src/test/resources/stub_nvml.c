/*
 * A stand-in for the driver's NVML (libnvidia-ml.so.1) with the entry points the cuda probe calls, for tests on a
 * machine without an NVIDIA driver. It reports two GPUs: an H200 (compute capability 9.0) and a T4 (7.5).
 * Signatures and the nvmlMemory_t layout follow nvml.h.
 */
#include <string.h>

typedef int nvmlReturn_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { int index; } *nvmlDevice_t;

static struct { int index; } devices[2] = {{0}, {1}};
static int initialized;

nvmlReturn_t nvmlInit_v2(void) { initialized = 1; return 0; }
nvmlReturn_t nvmlShutdown(void) { initialized = 0; return 0; }

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    strncpy(version, "580.65.06", length);
    return 0;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) { *version = 13000; return 0; }

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    if (!initialized) return 1;
    *count = 2;
    return 0;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    if (index > 1) return 2;
    *device = (nvmlDevice_t) &devices[index];
    return 0;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    strncpy(name, device->index == 0 ? "NVIDIA H200" : "Tesla T4", length);
    return 0;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    memory->total = device->index == 0 ? 150754820096ULL : 16106127360ULL;
    memory->free = device->index == 0 ? 150000000000ULL : 15000000000ULL;
    memory->used = memory->total - memory->free;
    return 0;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor) {
    *major = device->index == 0 ? 9 : 7;
    *minor = device->index == 0 ? 0 : 5;
    return 0;
}
