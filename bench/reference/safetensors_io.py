"""safetensors_io.py: read and write safetensors files with json and numpy only.

The format (as core/safetensors.h writes it): an 8-byte little-endian header length N,
N bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
"__metadata__": {str: str}}, then the raw little-endian data. Only F32 and F64 are
handled here (F64 is converted to F32 on writing: the C side reads F32 only).
"""
import json
import struct

import numpy as np

_DTYPES = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8")}


def load(path):
    """Returns (tensors, metadata): a dict name -> numpy array and a dict of strings."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    data = raw[8 + n:]
    out = {}
    for name, info in header.items():
        dt = _DTYPES.get(info["dtype"])
        if dt is None:
            raise ValueError(f"{path}: tensor {name} has dtype {info['dtype']}, not F32/F64")
        b, e = info["data_offsets"]
        arr = np.frombuffer(data[b:e], dtype=dt).reshape(info["shape"]).copy()
        out[name] = arr
    return out, meta


def save(path, tensors, metadata=None):
    """Writes tensors (name -> array-like) as F32, in sorted name order, with metadata."""
    header = {}
    chunks = []
    offset = 0
    for name in sorted(tensors):
        arr = np.ascontiguousarray(np.asarray(tensors[name], dtype="<f4"))
        buf = arr.tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(buf)]}
        chunks.append(buf)
        offset += len(buf)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((8 - len(hjson) % 8) % 8)  # keep the data 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for c in chunks:
            f.write(c)
