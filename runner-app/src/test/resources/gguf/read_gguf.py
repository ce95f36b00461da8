"""Reads a GGUF file with llama.cpp's gguf package and writes what it found for GgufWriterTest to compare:
<out>/gguf.json (metadata, and per tensor its name, shape as gguf reports it (innermost first), type name and bytes),
<out>/<tensor>.f32 (its values dequantized by gguf.quants, little-endian float32) and <out>/<tensor>.raw (its bytes)."""
import json
import sys

import numpy as np
import gguf

path, out = sys.argv[1], sys.argv[2]
reader = gguf.GGUFReader(path)
metadata = {}
for name, field in reader.fields.items():
    if name.startswith("GGUF."):
        continue
    value = field.contents()
    if isinstance(value, (np.generic,)):
        value = value.item()
    metadata[name] = value
tensors = []
for tensor in reader.tensors:
    tensors.append({"name": tensor.name, "shape": [int(d) for d in tensor.shape],
                    "type": tensor.tensor_type.name, "bytes": int(tensor.n_bytes)})
    values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
    np.asarray(values, dtype="<f4").tofile(f"{out}/{tensor.name}.f32")
    np.asarray(tensor.data).tofile(f"{out}/{tensor.name}.raw")
with open(f"{out}/gguf.json", "w") as f:
    json.dump({"metadata": metadata, "tensors": tensors}, f)
