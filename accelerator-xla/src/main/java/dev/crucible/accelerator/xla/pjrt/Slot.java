package dev.crucible.accelerator.xla.pjrt;

/**
 * The PJRT C API functions this bridge calls: each one's slot in {@code PJRT_Api} (the function pointer sits at
 * byte {@code 40 + 8 * index}; the table is append-only, so a slot never moves) and the layout of its argument
 * struct, field names as in {@code xla/pjrt/c/pjrt_c_api.h} (API 0.112, the version libtpu 0.0.42.1 reports).
 *
 * <p>The slots and sizes are checked against libtpu at run time ({@code PjrtLibtpuTest}): libtpu answers a call
 * whose {@code struct_size} is too small with "expected N", and N must not exceed the size laid out here.
 */
enum Slot {
    ERROR_DESTROY(0, Struct.args("PJRT_Error_Destroy_Args").word("error")),
    ERROR_MESSAGE(1, Struct.args("PJRT_Error_Message_Args").word("error").word("message").word("message_size")),
    ERROR_GET_CODE(2, Struct.args("PJRT_Error_GetCode_Args").word("error").int32("code")),
    PLUGIN_INITIALIZE(3, Struct.args("PJRT_Plugin_Initialize_Args")),
    PLUGIN_ATTRIBUTES(4, Struct.args("PJRT_Plugin_Attributes_Args").word("attributes").word("num_attributes")),
    EVENT_DESTROY(5, Struct.args("PJRT_Event_Destroy_Args").word("event")),
    EVENT_AWAIT(8, Struct.args("PJRT_Event_Await_Args").word("event")),
    CLIENT_CREATE(10, Struct.args("PJRT_Client_Create_Args").word("create_options").word("num_options")
            .word("kv_get_callback").word("kv_get_user_arg").word("kv_put_callback").word("kv_put_user_arg")
            .word("client").word("kv_try_get_callback").word("kv_try_get_user_arg")),
    CLIENT_DESTROY(11, Struct.args("PJRT_Client_Destroy_Args").word("client")),
    CLIENT_PLATFORM_NAME(12, Struct.args("PJRT_Client_PlatformName_Args").word("client").word("platform_name")
            .word("platform_name_size")),
    CLIENT_PLATFORM_VERSION(14, Struct.args("PJRT_Client_PlatformVersion_Args").word("client")
            .word("platform_version").word("platform_version_size")),
    CLIENT_DEVICES(15, Struct.args("PJRT_Client_Devices_Args").word("client").word("devices").word("num_devices")),
    CLIENT_ADDRESSABLE_DEVICES(16, Struct.args("PJRT_Client_AddressableDevices_Args").word("client")
            .word("addressable_devices").word("num_addressable_devices")),
    CLIENT_COMPILE(20, Struct.args("PJRT_Client_Compile_Args").word("client").word("program")
            .word("compile_options").word("compile_options_size").word("executable")),
    CLIENT_BUFFER_FROM_HOST_BUFFER(22, Struct.args("PJRT_Client_BufferFromHostBuffer_Args").word("client")
            .word("data").int32("type").word("dims").word("num_dims").word("byte_strides").word("num_byte_strides")
            .int32("host_buffer_semantics").word("device").word("memory").word("device_layout")
            .word("done_with_host_buffer").word("buffer")),
    DEVICE_DESCRIPTION_ID(23, Struct.args("PJRT_DeviceDescription_Id_Args").word("device_description").int32("id")),
    DEVICE_DESCRIPTION_KIND(26, Struct.args("PJRT_DeviceDescription_Kind_Args").word("device_description")
            .word("device_kind").word("device_kind_size")),
    DEVICE_GET_DESCRIPTION(29, Struct.args("PJRT_Device_GetDescription_Args").word("device")
            .word("device_description")),
    DEVICE_IS_ADDRESSABLE(30, Struct.args("PJRT_Device_IsAddressable_Args").word("device").bool("is_addressable")),
    DEVICE_LOCAL_HARDWARE_ID(31, Struct.args("PJRT_Device_LocalHardwareId_Args").word("device")
            .int32("local_hardware_id")),
    DEVICE_ADDRESSABLE_MEMORIES(32, Struct.args("PJRT_Device_AddressableMemories_Args").word("device")
            .word("memories").word("num_memories")),
    DEVICE_MEMORY_STATS(34, Struct.args("PJRT_Device_MemoryStats_Args").word("device").word("bytes_in_use")
            .word("peak_bytes_in_use").bool("peak_bytes_in_use_is_set")
            .word("num_allocs").bool("num_allocs_is_set")
            .word("largest_alloc_size").bool("largest_alloc_size_is_set")
            .word("bytes_limit").bool("bytes_limit_is_set")
            .word("bytes_reserved").bool("bytes_reserved_is_set")
            .word("peak_bytes_reserved").bool("peak_bytes_reserved_is_set")
            .word("bytes_reservable_limit").bool("bytes_reservable_limit_is_set")
            .word("largest_free_block_bytes").bool("largest_free_block_bytes_is_set")
            .word("pool_bytes").bool("pool_bytes_is_set")
            .word("peak_pool_bytes").bool("peak_pool_bytes_is_set")),
    MEMORY_ID(35, Struct.args("PJRT_Memory_Id_Args").word("memory").int32("id")),
    MEMORY_KIND(36, Struct.args("PJRT_Memory_Kind_Args").word("memory").word("kind").word("kind_size")),
    EXECUTABLE_DESTROY(40, Struct.args("PJRT_Executable_Destroy_Args").word("executable")),
    EXECUTABLE_NAME(41, Struct.args("PJRT_Executable_Name_Args").word("executable").word("executable_name")
            .word("executable_name_size")),
    EXECUTABLE_NUM_REPLICAS(42, Struct.args("PJRT_Executable_NumReplicas_Args").word("executable")
            .word("num_replicas")),
    EXECUTABLE_NUM_PARTITIONS(43, Struct.args("PJRT_Executable_NumPartitions_Args").word("executable")
            .word("num_partitions")),
    EXECUTABLE_NUM_OUTPUTS(44, Struct.args("PJRT_Executable_NumOutputs_Args").word("executable").word("num_outputs")),
    EXECUTABLE_SIZE_OF_GENERATED_CODE(45, Struct.args("PJRT_Executable_SizeOfGeneratedCodeInBytes_Args")
            .word("executable").word("size_in_bytes")),
    EXECUTABLE_SERIALIZE(49, Struct.args("PJRT_Executable_Serialize_Args").word("executable")
            .word("serialized_bytes").word("serialized_bytes_size").word("serialized_executable")
            .word("serialized_executable_deleter")),
    LOADED_EXECUTABLE_DESTROY(50, Struct.args("PJRT_LoadedExecutable_Destroy_Args").word("executable")),
    LOADED_EXECUTABLE_GET_EXECUTABLE(51, Struct.args("PJRT_LoadedExecutable_GetExecutable_Args")
            .word("loaded_executable").word("executable")),
    LOADED_EXECUTABLE_ADDRESSABLE_DEVICES(52, Struct.args("PJRT_LoadedExecutable_AddressableDevices_Args")
            .word("executable").word("addressable_devices").word("num_addressable_devices")),
    LOADED_EXECUTABLE_EXECUTE(55, Struct.args("PJRT_LoadedExecutable_Execute_Args").word("executable")
            .word("options").word("argument_lists").word("num_devices").word("num_args").word("output_lists")
            .word("device_complete_events").word("execute_device")),
    EXECUTABLE_DESERIALIZE_AND_LOAD(56, Struct.args("PJRT_Executable_DeserializeAndLoad_Args").word("client")
            .word("serialized_executable").word("serialized_executable_size").word("loaded_executable")
            .word("overridden_serialized_compile_options").word("overridden_serialized_compile_options_size")
            .word("load_options")),
    BUFFER_DESTROY(58, Struct.args("PJRT_Buffer_Destroy_Args").word("buffer")),
    BUFFER_ELEMENT_TYPE(59, Struct.args("PJRT_Buffer_ElementType_Args").word("buffer").int32("type")),
    BUFFER_DIMENSIONS(60, Struct.args("PJRT_Buffer_Dimensions_Args").word("buffer").word("dims").word("num_dims")),
    BUFFER_ON_DEVICE_SIZE_IN_BYTES(64, Struct.args("PJRT_Buffer_OnDeviceSizeInBytes_Args").word("buffer")
            .word("on_device_size_in_bytes")),
    BUFFER_DEVICE(65, Struct.args("PJRT_Buffer_Device_Args").word("buffer").word("device")),
    BUFFER_IS_DELETED(68, Struct.args("PJRT_Buffer_IsDeleted_Args").word("buffer").bool("is_deleted")),
    BUFFER_TO_HOST_BUFFER(70, Struct.args("PJRT_Buffer_ToHostBuffer_Args").word("src").word("host_layout")
            .word("dst").word("dst_size").word("event")),
    TOPOLOGY_CREATE(82, Struct.args("PJRT_TopologyDescription_Create_Args").word("topology_name")
            .word("topology_name_size").word("create_options").word("num_options").word("topology")),
    TOPOLOGY_DESTROY(83, Struct.args("PJRT_TopologyDescription_Destroy_Args").word("topology")),
    TOPOLOGY_PLATFORM_NAME(84, Struct.args("PJRT_TopologyDescription_PlatformName_Args").word("topology")
            .word("platform_name").word("platform_name_size")),
    TOPOLOGY_PLATFORM_VERSION(85, Struct.args("PJRT_TopologyDescription_PlatformVersion_Args").word("topology")
            .word("platform_version").word("platform_version_size")),
    TOPOLOGY_GET_DEVICE_DESCRIPTIONS(86, Struct.args("PJRT_TopologyDescription_GetDeviceDescriptions_Args")
            .word("topology").word("descriptions").word("num_descriptions")),
    COMPILE(89, Struct.args("PJRT_Compile_Args").word("topology").word("program").word("compile_options")
            .word("compile_options_size").word("client").word("executable")),
    EXECUTABLE_OUTPUT_ELEMENT_TYPES(90, Struct.args("PJRT_Executable_OutputElementTypes_Args").word("executable")
            .word("output_types").word("num_output_types")),
    EXECUTABLE_OUTPUT_DIMENSIONS(91, Struct.args("PJRT_Executable_OutputDimensions_Args").word("executable")
            .word("num_outputs").word("dims").word("dim_sizes")),
    EXECUTABLE_GET_COMPILED_MEMORY_STATS(96, Struct.args("PJRT_Executable_GetCompiledMemoryStats_Args")
            .word("executable").word("generated_code_size_in_bytes").word("argument_size_in_bytes")
            .word("output_size_in_bytes").word("alias_size_in_bytes").word("temp_size_in_bytes")
            .word("host_generated_code_size_in_bytes").word("host_argument_size_in_bytes")
            .word("host_output_size_in_bytes").word("host_alias_size_in_bytes").word("host_temp_size_in_bytes")
            .word("peak_memory_in_bytes").word("total_size_in_bytes").word("total_allocation_bytes")
            .word("indefinite_allocations").word("peak_unpadded_heap_bytes"));

    /** Byte offset of slot 0 in {@code PJRT_Api}: struct_size, extension_start, then PJRT_Api_Version (24 bytes). */
    static final long FIRST_SLOT_OFFSET = 40;

    /** {@code PJRT_NamedValue}: the union sits at {@code value}; {@code value_size} counts elements. */
    static final Struct NAMED_VALUE = Struct.args("PJRT_NamedValue").word("name").word("name_size").int32("type")
            .word("value").word("value_size").build();

    /** {@code PJRT_Program}: code and format are not NUL-terminated; their sizes say where they end. */
    static final Struct PROGRAM = Struct.args("PJRT_Program").word("code").word("code_size").word("format")
            .word("format_size").build();

    /** {@code PJRT_ExecuteOptions}; only the donation fields are filled, the rest stay zero. */
    static final Struct EXECUTE_OPTIONS = Struct.args("PJRT_ExecuteOptions").word("send_callbacks")
            .word("recv_callbacks").word("num_send_ops").word("num_recv_ops").int32("launch_id")
            .word("non_donatable_input_indices").word("num_non_donatable_input_indices").word("context")
            .word("call_location").word("num_tasks").word("task_ids").word("incarnation_ids")
            .word("multi_slice_config").bool("use_major_to_minor_data_layout_for_callbacks")
            .word("hlo_output_callbacks").word("num_hlo_output_callbacks").build();

    final int index;
    final Struct args;

    Slot(int index, Struct.Builder args) {
        this.index = index;
        this.args = args.build();
    }

    long offset() {
        return FIRST_SLOT_OFFSET + 8L * index;
    }

    /** The C name, e.g. {@code PJRT_Client_Create}, for error messages. */
    String functionName() {
        String struct = args.name();
        return struct.endsWith("_Args") ? struct.substring(0, struct.length() - "_Args".length()) : struct;
    }
}
