/*
 * A stand-in PJRT plugin for the bridge's tests (not a product, not XLA): it answers the PJRT C API calls the
 * bridge makes, with the struct layouts of API 0.112, on fake devices that live in host memory. Its "compiler"
 * reads one directive from the program text, `stub.op=NAME stub.shape=AxB`, and its executions do what the op says:
 *
 *   add             out0 = arg0 + arg1 (f32)
 *   accumulate      out0 = arg0 + arg1, arg0 aliased to out0 (donated unless listed as non-donatable)
 *   fail_execute    PJRT_LoadedExecutable_Execute itself fails with RESOURCE_EXHAUSTED
 *   fail_on_device  Execute succeeds, but the last device's completion event carries INTERNAL and its outputs are
 *                   error buffers (a failure in the middle of a run)
 *
 * An executable serializes to "stubexe1" and what its compile read (op, shape, partitions); the plugin's copy of
 * those bytes is an object of its own, freed by the deleter it hands out.
 *
 * It keeps count of every object it hands out (stub_live_objects) so tests can check that the bridge destroys
 * each one, and it is strict where real plugins are: struct_size checks, Plugin_Initialize first, options by name
 * and type, device memory limits, and a client may not be destroyed while its buffers or executables live.
 *
 * Built by the tests with: gcc -shared -fPIC -O1 -o libstub_pjrt_plugin.so stub_pjrt_plugin.c
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 8
#define MAX_RANK 8
#define NUM_SLOTS 138

/* ---- status codes (absl) ---- */
enum { OK = 0, INVALID_ARGUMENT = 3, NOT_FOUND = 5, RESOURCE_EXHAUSTED = 8, FAILED_PRECONDITION = 9,
       UNIMPLEMENTED = 12, INTERNAL = 13 };

/* ---- our objects ---- */
typedef struct Error { int code; char *message; size_t size; } Error;
typedef struct Event { Error *error_template; } Event;
typedef struct Client Client;
typedef struct Memory { int id; } Memory;
typedef struct Device { int id; Client *client; Memory memory; long bytes_in_use; long peak; } Device;
typedef struct Buffer {
  Device *device; int type; int64_t dims[MAX_RANK]; size_t rank; float *data; size_t bytes;
  bool deleted; Error *poison;
} Buffer;
typedef struct Loaded {
  Client *client; char op[32]; int64_t dims[MAX_RANK]; size_t rank; int partitions;
} Loaded;
typedef struct Executable { Loaded *loaded; } Executable;
struct Client {
  Device devices[MAX_DEVICES]; Device *device_list[MAX_DEVICES]; int num_devices;
  long memory_limit; char version[512]; int live_children;
};

static long live_objects;
static bool initialized;

long stub_live_objects(void) { return live_objects; }

/* ---- argument structs (PJRT API 0.112 layouts) ---- */
typedef struct { size_t struct_size; void *ext; } Header;
#define END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

typedef struct { size_t struct_size; void *ext; const char *name; size_t name_size; int type;
                 union { const char *s; int64_t i; const int64_t *list; float f; bool b; } v; size_t value_size; } NamedValue;
typedef struct { size_t struct_size; void *ext; Error *error; } ErrorDestroyArgs;
typedef struct { size_t struct_size; void *ext; const Error *error; const char *message; size_t message_size; } ErrorMessageArgs;
typedef struct { size_t struct_size; void *ext; const Error *error; int code; } ErrorGetCodeArgs;
typedef struct { size_t struct_size; void *ext; const NamedValue *attributes; size_t num_attributes; } AttributesArgs;
typedef struct { size_t struct_size; void *ext; Event *event; } EventArgs;
typedef struct { size_t struct_size; void *ext; const NamedValue *options; size_t num_options; void *kv[4];
                 Client *client; void *kv_try[2]; } ClientCreateArgs;
typedef struct { size_t struct_size; void *ext; Client *client; } ClientArgs;
typedef struct { size_t struct_size; void *ext; Client *client; const char *text; size_t size; } ClientStringArgs;
typedef struct { size_t struct_size; void *ext; Client *client; Device *const *devices; size_t num; } ClientDevicesArgs;
typedef struct { size_t struct_size; void *ext; char *code; size_t code_size; const char *format; size_t format_size; } Program;
typedef struct { size_t struct_size; void *ext; Client *client; const Program *program; const char *options;
                 size_t options_size; Loaded *executable; } CompileArgs;
typedef struct { size_t struct_size; void *ext; Client *client; const void *data; int type; const int64_t *dims;
                 size_t num_dims; const int64_t *byte_strides; size_t num_byte_strides; int semantics; Device *device;
                 Memory *memory; void *device_layout; Event *done; Buffer *buffer; } FromHostArgs;
typedef struct { size_t struct_size; void *ext; Device *description; int value; } DescriptionIntArgs;
typedef struct { size_t struct_size; void *ext; Device *description; const char *text; size_t size; } DescriptionStringArgs;
typedef struct { size_t struct_size; void *ext; Device *device; Device *description; } GetDescriptionArgs;
typedef struct { size_t struct_size; void *ext; Device *device; bool value; } DeviceBoolArgs;
typedef struct { size_t struct_size; void *ext; Device *device; int value; } DeviceIntArgs;
typedef struct { size_t struct_size; void *ext; Device *device; Memory *const *memories; size_t num; } DeviceMemoriesArgs;
typedef struct { size_t struct_size; void *ext; Device *device; int64_t bytes_in_use;
                 int64_t peak; bool peak_set; int64_t allocs; bool allocs_set; int64_t largest; bool largest_set;
                 int64_t limit; bool limit_set; int64_t reserved; bool reserved_set; int64_t peak_reserved;
                 bool peak_reserved_set; int64_t reservable; bool reservable_set; int64_t free_block; bool free_block_set;
                 int64_t pool; bool pool_set; int64_t peak_pool; bool peak_pool_set; } MemoryStatsArgs;
typedef struct { size_t struct_size; void *ext; Memory *memory; int id; } MemoryIdArgs;
typedef struct { size_t struct_size; void *ext; Memory *memory; const char *kind; size_t size; } MemoryKindArgs;
typedef struct { size_t struct_size; void *ext; Executable *executable; } ExecutableArgs;
typedef struct { size_t struct_size; void *ext; Executable *executable; const char *name; size_t size; } ExecutableNameArgs;
typedef struct { size_t struct_size; void *ext; Executable *executable; size_t value; } ExecutableCountArgs;
typedef struct { size_t struct_size; void *ext; Executable *executable; int *types; size_t num; } OutputTypesArgs;
typedef struct { size_t struct_size; void *ext; Executable *executable; size_t num_outputs; const int64_t *dims;
                 const size_t *dim_sizes; } OutputDimsArgs;
typedef struct { size_t struct_size; void *ext; Loaded *executable; } LoadedArgs;
typedef struct { size_t struct_size; void *ext; Loaded *loaded; Executable *executable; } GetExecutableArgs;
typedef struct { size_t struct_size; void *ext; Loaded *executable; Device *const *devices; size_t num; } LoadedDevicesArgs;
typedef struct { size_t struct_size; void *ext; void *send, *recv; size_t num_send, num_recv; int launch_id;
                 const int64_t *non_donatable; size_t num_non_donatable; void *context; const char *call_location;
                 size_t num_tasks; int *task_ids; int64_t *incarnations; void *multi_slice; bool major_to_minor;
                 void *hlo_callbacks; size_t num_hlo_callbacks; } ExecuteOptions;
typedef struct { size_t struct_size; void *ext; Loaded *executable; ExecuteOptions *options;
                 Buffer *const *const *argument_lists; size_t num_devices; size_t num_args; Buffer **const *output_lists;
                 Event **complete_events; Device *execute_device; } ExecuteArgs;
typedef struct { size_t struct_size; void *ext; Buffer *buffer; } BufferArgs;
typedef struct { size_t struct_size; void *ext; Buffer *buffer; int type; } BufferTypeArgs;
typedef struct { size_t struct_size; void *ext; Buffer *buffer; const int64_t *dims; size_t num_dims; } BufferDimsArgs;
typedef struct { size_t struct_size; void *ext; Buffer *buffer; size_t size; } BufferSizeArgs;
typedef struct { size_t struct_size; void *ext; Buffer *buffer; Device *device; } BufferDeviceArgs;
typedef struct { size_t struct_size; void *ext; Buffer *buffer; bool deleted; } BufferDeletedArgs;
typedef struct { size_t struct_size; void *ext; size_t tiled_struct_size; void *tiled_ext; const int64_t *minor_to_major;
                 size_t minor_to_major_size; const int64_t *tile_dims; const size_t *tile_dim_sizes; size_t num_tiles;
                 int type; } MemoryLayout;
typedef struct { size_t struct_size; void *ext; Buffer *src; MemoryLayout *host_layout; void *dst; size_t dst_size;
                 Event *event; } ToHostArgs;

/* ---- helpers ---- */
static Error *error(int code, const char *format, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static Error *error(int code, const char *format, ...) {
  Error *e = calloc(1, sizeof(Error));
  char text[512];
  va_list args;
  va_start(args, format);
  vsnprintf(text, sizeof text, format, args);
  va_end(args);
  e->code = code;
  e->message = strdup(text);
  e->size = strlen(text);
  live_objects++;
  return e;
}

static Error *copy_error(const Error *e) { return e ? error(e->code, "%s", e->message) : NULL; }

static Event *event(Error *template) {
  Event *ev = calloc(1, sizeof(Event));
  ev->error_template = template;
  live_objects++;
  return ev;
}

#define CHECK_SIZE(args, type, last)                                                                       \
  do {                                                                                                     \
    if ((args)->struct_size < END(type, last))                                                             \
      return error(INVALID_ARGUMENT, "Unexpected %s size: expected %zu, got %zu. (stub plugin, API 0.112)", \
                   #type, (size_t)END(type, last), (args)->struct_size);                                   \
    if (!initialized) return error(FAILED_PRECONDITION, "PJRT_Plugin_Initialize was not called");          \
  } while (0)

static size_t element_count(const int64_t *dims, size_t rank) {
  size_t n = 1;
  for (size_t i = 0; i < rank; i++) n *= (size_t)dims[i];
  return n;
}

static size_t type_size(int type) {
  switch (type) {
    case 1: case 2: case 6: return 1;  /* PRED S8 U8 */
    case 10: case 13: return 2;        /* F16 BF16 */
    case 4: case 11: return 4;         /* S32 F32 */
    case 5: return 8;                  /* S64 */
    default: return 0;
  }
}

static Error *allocate(Buffer **out, Device *device, int type, const int64_t *dims, size_t rank) {
  size_t bytes = element_count(dims, rank) * type_size(type);
  if (device->bytes_in_use + (long)bytes > device->client->memory_limit)
    return error(RESOURCE_EXHAUSTED, "Out of memory while trying to allocate %zu bytes on stub device %d "
                 "(%ld of %ld bytes in use)", bytes, device->id, device->bytes_in_use, device->client->memory_limit);
  Buffer *b = calloc(1, sizeof(Buffer));
  b->device = device;
  b->type = type;
  b->rank = rank;
  memcpy(b->dims, dims, rank * sizeof(int64_t));
  b->bytes = bytes;
  b->data = calloc(1, bytes ? bytes : 1);
  device->bytes_in_use += (long)bytes;
  if (device->bytes_in_use > device->peak) device->peak = device->bytes_in_use;
  device->client->live_children++;
  live_objects++;
  *out = b;
  return NULL;
}

static void free_data(Buffer *b) {
  if (b->data) {
    free(b->data);
    b->data = NULL;
    b->device->bytes_in_use -= (long)b->bytes;
  }
}

/* ---- errors ---- */
static void Error_Destroy(ErrorDestroyArgs *a) {
  if (a->error) {
    free(a->error->message);
    free(a->error);
    live_objects--;
  }
}
static void Error_Message(ErrorMessageArgs *a) { a->message = a->error->message; a->message_size = a->error->size; }
static Error *Error_GetCode(ErrorGetCodeArgs *a) { a->code = a->error->code; return NULL; }

/* ---- plugin ---- */
static Error *Plugin_Initialize(Header *a) {
  if (a->struct_size < 16) return error(INVALID_ARGUMENT, "Unexpected PJRT_Plugin_Initialize_Args size");
  initialized = true;
  return NULL;
}

static const int64_t stablehlo_version[] = {1, 17, 0};
static NamedValue attributes[5];
static Error *Plugin_Attributes(AttributesArgs *a) {
  CHECK_SIZE(a, AttributesArgs, num_attributes);
  NamedValue v[5] = {
      {sizeof(NamedValue), NULL, "xla_version", 11, 1, {.i = 2}, 1},
      {sizeof(NamedValue), NULL, "stablehlo_current_version", 25, 2, {.list = stablehlo_version}, 3},
      {sizeof(NamedValue), NULL, "stub", 4, 0, {.s = "yes"}, 3},
      {sizeof(NamedValue), NULL, "fraction", 8, 3, {.f = 0.5f}, 1},
      {sizeof(NamedValue), NULL, "flag", 4, 4, {.b = true}, 1},
  };
  memcpy(attributes, v, sizeof v);
  a->attributes = attributes;
  a->num_attributes = 5;
  return NULL;
}

/* ---- events ---- */
static Error *Event_Destroy(EventArgs *a) {
  CHECK_SIZE(a, EventArgs, event);
  if (a->event) {
    Error_Destroy(&(ErrorDestroyArgs){sizeof(ErrorDestroyArgs), NULL, a->event->error_template});
    free(a->event);
    live_objects--;
  }
  return NULL;
}
static Error *Event_Await(EventArgs *a) {
  CHECK_SIZE(a, EventArgs, event);
  return copy_error(a->event->error_template);
}

/* ---- client ---- */
static bool named(const NamedValue *v, const char *name) {
  return v->name_size == strlen(name) && memcmp(v->name, name, v->name_size) == 0;
}

static Error *Client_Create(ClientCreateArgs *a) {
  CHECK_SIZE(a, ClientCreateArgs, kv_try);
  Client *c = calloc(1, sizeof(Client));
  c->num_devices = 2;
  c->memory_limit = 1 << 20;
  size_t used = (size_t)snprintf(c->version, sizeof c->version, "stub 0.112; options:");
  for (size_t i = 0; i < a->num_options; i++) {
    const NamedValue *v = &a->options[i];
    char value[128];
    if (named(v, "num_devices") && v->type == 1) {
      c->num_devices = (int)v->v.i;
    } else if (named(v, "memory_limit") && v->type == 1) {
      c->memory_limit = (long)v->v.i;
    } else if (named(v, "memory_fraction") && v->type == 3) {
    } else if (named(v, "preallocate") && v->type == 4) {
    } else if (named(v, "platform_name") && v->type == 0) {
    } else if (named(v, "visible_devices") && v->type == 2) {
    } else {
      Error *e = error(INVALID_ARGUMENT, "Unexpected option name or type passed to PJRT_Client_Create: %.*s (type %d)",
                       (int)v->name_size, v->name, v->type);
      free(c);
      return e;
    }
    switch (v->type) {
      case 0: snprintf(value, sizeof value, "\"%.*s\"", (int)v->value_size, v->v.s); break;
      case 1: snprintf(value, sizeof value, "%lld", (long long)v->v.i); break;
      case 2: {
        size_t at = (size_t)snprintf(value, sizeof value, "[");
        for (size_t j = 0; j < v->value_size && at < sizeof value; j++)
          at += (size_t)snprintf(value + at, sizeof value - at, j ? ",%lld" : "%lld", (long long)v->v.list[j]);
        snprintf(value + at, sizeof value - at, "]");
        break;
      }
      case 3: snprintf(value, sizeof value, "%g", v->v.f); break;
      default: snprintf(value, sizeof value, "%s", v->v.b ? "true" : "false"); break;
    }
    used += (size_t)snprintf(c->version + used, sizeof c->version - used, " %.*s=%s", (int)v->name_size, v->name, value);
  }
  if (c->num_devices < 1 || c->num_devices > MAX_DEVICES) {
    free(c);
    return error(NOT_FOUND, "stub plugin: no devices (num_devices must be 1 to %d)", MAX_DEVICES);
  }
  for (int i = 0; i < c->num_devices; i++) {
    c->devices[i] = (Device){.id = i, .client = c, .memory = {.id = i}};
    c->device_list[i] = &c->devices[i];
  }
  live_objects++;
  a->client = c;
  return NULL;
}

static Error *Client_Destroy(ClientArgs *a) {
  CHECK_SIZE(a, ClientArgs, client);
  if (a->client->live_children)
    return error(FAILED_PRECONDITION, "stub client destroyed while %d of its buffers and executables live",
                 a->client->live_children);
  free(a->client);
  live_objects--;
  return NULL;
}

static Error *Client_PlatformName(ClientStringArgs *a) {
  CHECK_SIZE(a, ClientStringArgs, size);
  a->text = "stub";
  a->size = 4;
  return NULL;
}
static Error *Client_PlatformVersion(ClientStringArgs *a) {
  CHECK_SIZE(a, ClientStringArgs, size);
  a->text = a->client->version;
  a->size = strlen(a->client->version);
  return NULL;
}
static Error *Client_Devices(ClientDevicesArgs *a) {
  CHECK_SIZE(a, ClientDevicesArgs, num);
  a->devices = a->client->device_list;
  a->num = (size_t)a->client->num_devices;
  return NULL;
}

/* Reads num_partitions (field 5) from executable_build_options (field 3) of a CompileOptionsProto. */
static uint64_t varint(const unsigned char **p, const unsigned char *end) {
  uint64_t v = 0;
  for (int shift = 0; *p < end; shift += 7) {
    unsigned char byte = *(*p)++;
    v |= (uint64_t)(byte & 0x7F) << shift;
    if (!(byte & 0x80)) break;
  }
  return v;
}
static long field(const unsigned char *p, const unsigned char *end, unsigned number, const unsigned char **body) {
  while (p < end) {
    uint64_t tag = varint(&p, end);
    unsigned wire = tag & 7;
    if (wire == 0) {
      uint64_t v = varint(&p, end);
      if ((tag >> 3) == number) return (long)v;
    } else if (wire == 2) {
      uint64_t n = varint(&p, end);
      if ((tag >> 3) == number && body) { *body = p; return (long)n; }
      p += n;
    } else {
      return -2;
    }
  }
  return -1;
}

static Error *Client_Compile(CompileArgs *a) {
  CHECK_SIZE(a, CompileArgs, executable);
  const Program *p = a->program;
  if (p->struct_size < END(Program, format_size)) return error(INVALID_ARGUMENT, "Unexpected PJRT_Program size");
  if (p->format_size != 4 || memcmp(p->format, "mlir", 4) != 0) return error(INVALID_ARGUMENT, "format must be mlir");
  const unsigned char *options = (const unsigned char *)a->options, *build = NULL;
  long build_size = field(options, options + a->options_size, 3, &build);
  long replicas = build_size > 0 ? field(build, build + build_size, 4, NULL) : -1;
  long partitions = build_size > 0 ? field(build, build + build_size, 5, NULL) : -1;
  if (replicas < 1) return error(INVALID_ARGUMENT, "Number of replicas (%ld) must be at least 1", replicas < 0 ? 0 : replicas);
  if (partitions < 1 || partitions > a->client->num_devices)
    return error(INVALID_ARGUMENT, "stub compiler: %ld partitions on %d devices", partitions, a->client->num_devices);
  char code[1024];
  size_t n = p->code_size < sizeof code - 1 ? p->code_size : sizeof code - 1;
  memcpy(code, p->code, n);
  code[n] = 0;
  const char *op = strstr(code, "stub.op=");
  if (!op) return error(INVALID_ARGUMENT, "stub compiler: the program has no stub.op= directive");
  Loaded *l = calloc(1, sizeof(Loaded));
  sscanf(op + 8, "%31[a-z_]", l->op);
  const char *shape = strstr(code, "stub.shape=");
  if (shape) {
    shape += 11;
    while (l->rank < MAX_RANK && *shape >= '0' && *shape <= '9') {
      l->dims[l->rank++] = strtoll(shape, (char **)&shape, 10);
      if (*shape == 'x') shape++;
    }
  }
  l->client = a->client;
  l->partitions = (int)partitions;
  a->client->live_children++;
  live_objects++;
  a->executable = l;
  return NULL;
}

static Error *Client_BufferFromHostBuffer(FromHostArgs *a) {
  CHECK_SIZE(a, FromHostArgs, buffer);
  if (type_size(a->type) == 0) return error(INVALID_ARGUMENT, "stub plugin: element type %d", a->type);
  if (a->num_dims > MAX_RANK) return error(INVALID_ARGUMENT, "stub plugin: rank %zu", a->num_dims);
  if (a->byte_strides) return error(UNIMPLEMENTED, "stub plugin: byte strides");
  if (a->semantics != 1) return error(INVALID_ARGUMENT, "stub plugin expects kImmutableUntilTransferCompletes");
  Buffer *b;
  Error *e = allocate(&b, a->device, a->type, a->dims, a->num_dims);
  if (e) return e;
  memcpy(b->data, a->data, b->bytes);
  a->buffer = b;
  a->done = event(NULL);
  return NULL;
}

/* ---- devices and memory ---- */
static Error *DeviceDescription_Id(DescriptionIntArgs *a) {
  CHECK_SIZE(a, DescriptionIntArgs, value);
  a->value = a->description->id;
  return NULL;
}
static Error *DeviceDescription_Kind(DescriptionStringArgs *a) {
  CHECK_SIZE(a, DescriptionStringArgs, size);
  a->text = "stub device";
  a->size = 11;
  return NULL;
}
static Error *Device_GetDescription(GetDescriptionArgs *a) {
  CHECK_SIZE(a, GetDescriptionArgs, description);
  a->description = a->device;
  return NULL;
}
static Error *Device_IsAddressable(DeviceBoolArgs *a) {
  CHECK_SIZE(a, DeviceBoolArgs, value);
  a->value = true;
  return NULL;
}
static Error *Device_LocalHardwareId(DeviceIntArgs *a) {
  CHECK_SIZE(a, DeviceIntArgs, value);
  a->value = a->device->id;
  return NULL;
}
static Memory *memory_lists[MAX_DEVICES * 64];
static Error *Device_AddressableMemories(DeviceMemoriesArgs *a) {
  CHECK_SIZE(a, DeviceMemoriesArgs, num);
  Memory **slot = &memory_lists[a->device->id];
  *slot = &a->device->memory;
  a->memories = slot;
  a->num = 1;
  return NULL;
}
static Error *Device_MemoryStats(MemoryStatsArgs *a) {
  CHECK_SIZE(a, MemoryStatsArgs, peak_pool_set);
  a->bytes_in_use = a->device->bytes_in_use;
  a->peak = a->device->peak;
  a->peak_set = true;
  a->limit = a->device->client->memory_limit;
  a->limit_set = true;
  return NULL;
}
static Error *Memory_Id(MemoryIdArgs *a) {
  CHECK_SIZE(a, MemoryIdArgs, id);
  a->id = a->memory->id;
  return NULL;
}
static Error *Memory_Kind(MemoryKindArgs *a) {
  CHECK_SIZE(a, MemoryKindArgs, size);
  a->kind = "device";
  a->size = 6;
  return NULL;
}

/* ---- executables ---- */
static int outputs_of(const Loaded *l) { (void)l; return 1; }

static Error *Executable_Destroy(ExecutableArgs *a) {
  CHECK_SIZE(a, ExecutableArgs, executable);
  free(a->executable);
  live_objects--;
  return NULL;
}
static Error *Executable_Name(ExecutableNameArgs *a) {
  CHECK_SIZE(a, ExecutableNameArgs, size);
  a->name = a->executable->loaded->op;
  a->size = strlen(a->name);
  return NULL;
}
static Error *Executable_NumReplicas(ExecutableCountArgs *a) {
  CHECK_SIZE(a, ExecutableCountArgs, value);
  a->value = 1;
  return NULL;
}
static Error *Executable_NumPartitions(ExecutableCountArgs *a) {
  CHECK_SIZE(a, ExecutableCountArgs, value);
  a->value = (size_t)a->executable->loaded->partitions;
  return NULL;
}
static Error *Executable_NumOutputs(ExecutableCountArgs *a) {
  CHECK_SIZE(a, ExecutableCountArgs, value);
  a->value = (size_t)outputs_of(a->executable->loaded);
  return NULL;
}
static Error *Executable_SizeOfGeneratedCode(ExecutableCountArgs *a) {
  CHECK_SIZE(a, ExecutableCountArgs, value);
  a->value = 0;
  return NULL;
}
static int f32_types[1] = {11};
static Error *Executable_OutputElementTypes(OutputTypesArgs *a) {
  CHECK_SIZE(a, OutputTypesArgs, num);
  a->types = f32_types;
  a->num = 1;
  return NULL;
}
static size_t rank_of_output[1];
static Error *Executable_OutputDimensions(OutputDimsArgs *a) {
  CHECK_SIZE(a, OutputDimsArgs, dim_sizes);
  rank_of_output[0] = a->executable->loaded->rank;
  a->num_outputs = 1;
  a->dims = a->executable->loaded->dims;
  a->dim_sizes = rank_of_output;
  return NULL;
}
static Error *Executable_GetCompiledMemoryStats(ExecutableArgs *a) {
  CHECK_SIZE(a, ExecutableArgs, executable);
  return error(UNIMPLEMENTED, "the stub compiler keeps no memory statistics");
}

static Error *LoadedExecutable_Destroy(LoadedArgs *a) {
  CHECK_SIZE(a, LoadedArgs, executable);
  a->executable->client->live_children--;
  free(a->executable);
  live_objects--;
  return NULL;
}
static Error *LoadedExecutable_GetExecutable(GetExecutableArgs *a) {
  CHECK_SIZE(a, GetExecutableArgs, executable);
  Executable *e = calloc(1, sizeof(Executable));
  e->loaded = a->loaded;
  live_objects++;
  a->executable = e;
  return NULL;
}
typedef struct { size_t struct_size; void *ext; Executable *executable; const char *bytes; size_t size;
                 char *backing; void (*deleter)(char *); } SerializeArgs;
typedef struct { size_t struct_size; void *ext; Client *client; const char *serialized; size_t size; Loaded *executable;
                 const char *overridden_options; size_t overridden_options_size; void *load_options; } DeserializeArgs;
#define SERIALIZED_MAGIC "stubexe1"
#define SERIALIZED_SIZE (8 + sizeof(Loaded))

static void free_serialized(char *backing) {
  free(backing);
  live_objects--;
}
static Error *Executable_Serialize(SerializeArgs *a) {
  CHECK_SIZE(a, SerializeArgs, deleter);
  char *backing = malloc(SERIALIZED_SIZE);
  memcpy(backing, SERIALIZED_MAGIC, 8);
  memcpy(backing + 8, a->executable->loaded, sizeof(Loaded));
  live_objects++;
  a->bytes = backing;
  a->size = SERIALIZED_SIZE;
  a->backing = backing;
  a->deleter = free_serialized;
  return NULL;
}
static Error *Executable_DeserializeAndLoad(DeserializeArgs *a) {
  CHECK_SIZE(a, DeserializeArgs, executable);
  if (a->size != SERIALIZED_SIZE || memcmp(a->serialized, SERIALIZED_MAGIC, 8) != 0)
    return error(INVALID_ARGUMENT, "stub: %zu bytes are not a serialized stub executable", a->size);
  Loaded *l = calloc(1, sizeof(Loaded));
  memcpy(l, a->serialized + 8, sizeof(Loaded));
  if (l->partitions > a->client->num_devices) {
    int partitions = l->partitions;
    free(l);
    return error(INVALID_ARGUMENT, "stub: a serialized executable of %d partitions on %d devices", partitions,
                 a->client->num_devices);
  }
  l->client = a->client;
  a->client->live_children++;
  live_objects++;
  a->executable = l;
  return NULL;
}
static Error *LoadedExecutable_AddressableDevices(LoadedDevicesArgs *a) {
  CHECK_SIZE(a, LoadedDevicesArgs, num);
  a->devices = a->executable->client->device_list;
  a->num = (size_t)a->executable->partitions;
  return NULL;
}

static bool listed(const ExecuteOptions *o, int64_t index) {
  for (size_t i = 0; o && i < o->num_non_donatable; i++)
    if (o->non_donatable[i] == index) return true;
  return false;
}

static Error *LoadedExecutable_Execute(ExecuteArgs *a) {
  CHECK_SIZE(a, ExecuteArgs, execute_device);
  Loaded *l = a->executable;
  if (a->options && a->options->struct_size < END(ExecuteOptions, num_hlo_callbacks))
    return error(INVALID_ARGUMENT, "Unexpected PJRT_ExecuteOptions size: expected %zu, got %zu",
                 (size_t)END(ExecuteOptions, num_hlo_callbacks), a->options->struct_size);
  if ((int)a->num_devices != l->partitions)
    return error(INVALID_ARGUMENT, "stub: %zu argument lists for %d partitions", a->num_devices, l->partitions);
  if (strcmp(l->op, "fail_execute") == 0)
    return error(RESOURCE_EXHAUSTED, "Out of memory while trying to allocate 4096 bytes for the stub's temporaries");
  if (a->num_args != 2) return error(INVALID_ARGUMENT, "stub op %s takes 2 arguments, got %zu", l->op, a->num_args);
  for (size_t d = 0; d < a->num_devices; d++) {
    for (size_t i = 0; i < a->num_args; i++) {
      Buffer *b = a->argument_lists[d][i];
      if (b->deleted) return error(INVALID_ARGUMENT, "stub: argument %zu on device %zu was deleted or donated", i, d);
      if (b->device != &l->client->devices[d])
        return error(INVALID_ARGUMENT, "stub: argument %zu of list %zu is on device %d", i, d, b->device->id);
    }
  }
  bool fail = strcmp(l->op, "fail_on_device") == 0;
  for (size_t d = 0; d < a->num_devices; d++) {
    Buffer *x = a->argument_lists[d][0], *y = a->argument_lists[d][1];
    Buffer *out;
    bool donate = strcmp(l->op, "accumulate") == 0 && !listed(a->options, 0);
    if (donate) {
      out = calloc(1, sizeof(Buffer));
      *out = *x;  /* the output takes over the donated argument's memory */
      x->data = NULL;
      x->deleted = true;
      l->client->live_children++;
      live_objects++;
    } else {
      Error *e = allocate(&out, x->device, x->type, x->dims, x->rank);
      if (e) return e;
      memcpy(out->data, x->data, x->bytes);
    }
    size_t n = out->bytes / 4;
    for (size_t k = 0; k < n; k++) out->data[k] += y->data[k];
    bool last = d + 1 == a->num_devices;
    Error *failure = fail && last ? error(INTERNAL, "stub device %zu halted in the middle of the run", d) : NULL;
    out->poison = copy_error(failure);
    a->output_lists[d][0] = out;
    if (a->complete_events) a->complete_events[d] = event(failure);
  }
  return NULL;
}

/* ---- buffers ---- */
static Error *Buffer_Destroy(BufferArgs *a) {
  CHECK_SIZE(a, BufferArgs, buffer);
  Buffer *b = a->buffer;
  free_data(b);
  if (b->poison) Error_Destroy(&(ErrorDestroyArgs){sizeof(ErrorDestroyArgs), NULL, b->poison});
  b->device->client->live_children--;
  free(b);
  live_objects--;
  return NULL;
}
static Error *Buffer_ElementType(BufferTypeArgs *a) {
  CHECK_SIZE(a, BufferTypeArgs, type);
  a->type = a->buffer->type;
  return NULL;
}
static Error *Buffer_Dimensions(BufferDimsArgs *a) {
  CHECK_SIZE(a, BufferDimsArgs, num_dims);
  a->dims = a->buffer->dims;
  a->num_dims = a->buffer->rank;
  return NULL;
}
static Error *Buffer_OnDeviceSizeInBytes(BufferSizeArgs *a) {
  CHECK_SIZE(a, BufferSizeArgs, size);
  a->size = a->buffer->bytes;
  return NULL;
}
static Error *Buffer_Device(BufferDeviceArgs *a) {
  CHECK_SIZE(a, BufferDeviceArgs, device);
  a->device = a->buffer->device;
  return NULL;
}
static Error *Buffer_IsDeleted(BufferDeletedArgs *a) {
  CHECK_SIZE(a, BufferDeletedArgs, deleted);
  a->deleted = a->buffer->deleted;
  return NULL;
}
static Error *Buffer_ToHostBuffer(ToHostArgs *a) {
  CHECK_SIZE(a, ToHostArgs, event);
  Buffer *b = a->src;
  if (b->deleted) return error(INVALID_ARGUMENT, "stub: the buffer was deleted or donated");
  if (!a->dst) {
    a->dst_size = b->bytes;
    return NULL;
  }
  if (a->dst_size < b->bytes) return error(INVALID_ARGUMENT, "stub: dst_size %zu < %zu", a->dst_size, b->bytes);
  if (a->host_layout) {
    MemoryLayout *layout = a->host_layout;
    if (layout->type != 0 || layout->tiled_struct_size < 56 || layout->num_tiles != 0 ||
        layout->minor_to_major_size != b->rank)
      return error(UNIMPLEMENTED, "stub: only dense row-major host layouts");
    for (size_t i = 0; i < b->rank; i++)
      if (layout->minor_to_major[i] != (int64_t)(b->rank - 1 - i))
        return error(UNIMPLEMENTED, "stub: only dense row-major host layouts");
  }
  if (!b->poison) memcpy(a->dst, b->data, b->bytes);
  a->event = event(copy_error(b->poison));
  return NULL;
}

/* ---- the table ---- */
typedef struct { size_t struct_size; void *ext; size_t version_struct_size; void *version_ext; int major; int minor;
                 void *slots[NUM_SLOTS]; } Api;
static Api api;

const Api *GetPjrtApi(void) {
  api.struct_size = offsetof(Api, slots) + sizeof api.slots;
  api.version_struct_size = 24;
  api.major = 0;
  api.minor = 112;
  void **s = api.slots;
  s[0] = Error_Destroy; s[1] = Error_Message; s[2] = Error_GetCode;
  s[3] = Plugin_Initialize; s[4] = Plugin_Attributes;
  s[5] = Event_Destroy; s[8] = Event_Await;
  s[10] = Client_Create; s[11] = Client_Destroy; s[12] = Client_PlatformName; s[14] = Client_PlatformVersion;
  s[15] = Client_Devices; s[16] = Client_Devices; s[20] = Client_Compile; s[22] = Client_BufferFromHostBuffer;
  s[23] = DeviceDescription_Id; s[26] = DeviceDescription_Kind;
  s[29] = Device_GetDescription; s[30] = Device_IsAddressable; s[31] = Device_LocalHardwareId;
  s[32] = Device_AddressableMemories; s[34] = Device_MemoryStats; s[35] = Memory_Id; s[36] = Memory_Kind;
  s[40] = Executable_Destroy; s[41] = Executable_Name; s[42] = Executable_NumReplicas;
  s[43] = Executable_NumPartitions; s[44] = Executable_NumOutputs; s[45] = Executable_SizeOfGeneratedCode;
  s[49] = Executable_Serialize;
  s[50] = LoadedExecutable_Destroy; s[51] = LoadedExecutable_GetExecutable;
  s[52] = LoadedExecutable_AddressableDevices; s[55] = LoadedExecutable_Execute;
  s[56] = Executable_DeserializeAndLoad;
  s[58] = Buffer_Destroy; s[59] = Buffer_ElementType; s[60] = Buffer_Dimensions; s[64] = Buffer_OnDeviceSizeInBytes;
  s[65] = Buffer_Device; s[68] = Buffer_IsDeleted; s[70] = Buffer_ToHostBuffer;
  s[90] = Executable_OutputElementTypes; s[91] = Executable_OutputDimensions;
  s[96] = Executable_GetCompiledMemoryStats;
  return &api;
}
