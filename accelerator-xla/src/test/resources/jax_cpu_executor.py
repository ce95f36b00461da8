"""The test tree's XLA runtime: jaxlib 0.10.2's CPU client behind a pipe, for JaxCpuExecutor (Java).

One process serves one executor. Requests are one JSON line each on stdin, followed by the raw little-endian bytes
of the payload they announce ("bytes"); replies are one JSON line on stdout, followed by raw bytes for a download.
Failures are replies too: {"error": "<exception type>: <message>"}; the process keeps serving.
These are jaxlib-internal APIs (jax._src.lib._jax): the version is pinned in scripts/oracle-requirements.txt.
"""
import json
import os
import sys

devices = int(sys.argv[1])
os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
os.environ["JAX_ENABLE_X64"] = "1"  # or device_put narrows our int64 arrays to int32

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.extend.backend  # noqa: E402
from jax._src.lib import _jax  # noqa: E402

DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16, "I64": np.int64, "I32": np.int32,
          "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
NAMES = {np.dtype(v): k for k, v in DTYPES.items()}

requests = sys.stdin.buffer
replies = sys.stdout.buffer
sys.stdout = sys.stderr  # nothing but replies on the pipe

backend = jax.extend.backend.get_backend("cpu")
local = backend.local_devices()
arrays = {}
programs = {}
next_id = [1]


def new_id():
    next_id[0] += 1
    return next_id[0]


def describe(handle):
    a = arrays[handle]
    return {"id": handle, "dtype": NAMES[np.dtype(a.dtype)], "shape": list(a.shape)}


def compile_program(req, payload):
    partitions = req["partitions"]
    options = _jax.CompileOptions.ParseFromString(payload)
    executable = backend.compile_and_load(req["text"], _jax.DeviceList(tuple(local[:partitions])), options)
    handle = new_id()
    programs[handle] = (executable, partitions)
    return {"id": handle}


def serialize(req, payload):
    executable, _ = programs[req["program"]]
    data = backend.serialize_executable(executable)
    return {"bytes": len(data)}, data


def deserialize(req, payload):
    partitions = req["partitions"]
    options = _jax.CompileOptions.ParseFromString(bytes.fromhex(req["options"]))
    executable = backend.deserialize_executable(payload, _jax.DeviceList(tuple(local[:partitions])), options)
    handle = new_id()
    programs[handle] = (executable, partitions)
    return {"id": handle}


def upload(req, payload):
    host = np.frombuffer(payload, dtype=DTYPES[req["dtype"]]).reshape(req["shape"])
    handle = new_id()
    arrays[handle] = jax.device_put(host, local[req["device"]])
    return {"id": handle}


def execute(req, payload):
    executable, partitions = programs[req["program"]]
    lists = req["args"]
    if partitions == 1:
        inputs = [arrays[h] for h in lists[0]]
    else:
        # execute_sharded takes one array per argument spanning the devices; its shards are ours, so any global
        # sharding with one equal-shaped shard per device carries them (the program's own shardings decide the math).
        mesh = jax.sharding.Mesh(np.array(local[:partitions]), ("p",))
        inputs = []
        for i in range(len(lists[0])):
            shards = [arrays[lists[d][i]] for d in range(partitions)]
            shape = (partitions * shards[0].shape[0],) + tuple(shards[0].shape[1:]) if shards[0].ndim else None
            if shape is None:
                raise ValueError("scalar arguments of SPMD programs are not supported by this harness")
            sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("p"))
            inputs.append(jax.make_array_from_single_device_arrays(shape, sharding, shards))
    results = executable.execute_sharded(inputs)
    outputs = [[] for _ in range(partitions)]
    for per_device in results.disassemble_into_single_device_arrays():
        for d, array in enumerate(per_device):
            handle = new_id()
            arrays[handle] = array
            outputs[d].append(describe(handle))
    released = []
    for d, handles in enumerate(lists):
        for h in handles:
            if arrays[h].is_deleted() or (partitions > 1 and inputs[handles.index(h)].is_deleted()):
                released.append(h)
    for h in released:
        arrays.pop(h, None)
    return {"outputs": outputs, "released": sorted(set(released))}


def download(req, payload):
    host = np.asarray(arrays[req["id"]])
    return {"dtype": NAMES[np.dtype(host.dtype)], "shape": list(host.shape), "bytes": host.nbytes}, host.tobytes()


def free(req, payload):
    for h in req.get("arrays", []):
        arrays.pop(h, None)
    for h in req.get("programs", []):
        programs.pop(h, None)
    return {}


def compile_options(req, payload):
    o = _jax.CompileOptions.ParseFromString(payload)
    b = o.executable_build_options
    return {"num_replicas": o.num_replicas, "num_partitions": o.num_partitions,
            "use_spmd_partitioning": b.use_spmd_partitioning, "use_shardy_partitioner": b.use_shardy_partitioner,
            "device_assignment": str(o.device_assignment) if b.device_assignment is not None else None}


OPS = {"compile": compile_program, "serialize": serialize, "deserialize": deserialize, "upload": upload,
       "execute": execute, "download": download, "free": free,
       "compile_options": compile_options}

replies.write((json.dumps({"ready": True, "devices": len(local), "platform": backend.platform}) + "\n").encode())
replies.flush()
for line in iter(requests.readline, b""):
    req = json.loads(line)
    payload = requests.read(req.get("bytes", 0)) if req.get("bytes") else b""
    raw = b""
    try:
        reply = OPS[req["op"]](req, payload)
        if isinstance(reply, tuple):
            reply, raw = reply
    except Exception as e:  # a reply, so the Java side can throw it
        reply = {"error": f"{type(e).__name__}: {e}"}
    replies.write((json.dumps(reply) + "\n").encode())
    replies.write(raw)
    replies.flush()
