"""safetensors_io.py: read and write safetensors files with json and numpy only.

The format (as core/safetensors.h writes it): an 8-byte little-endian header length N,
N bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
"__metadata__": {str: str}}, then the raw little-endian data. Read: F32, F64, F16, BF16
(as float32 arrays) and I64 (int64). Written: F32 by default; save(..., dtypes={name: "F16"
| "BF16" | "I64"}) stores a tensor in another dtype (BF16 rounds to nearest even, as
PyTorch's .to(torch.bfloat16) does).
"""
import json
import struct

import numpy as np

_DTYPES = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "F16": np.dtype("<f2"),
           "I64": np.dtype("<i8")}


def _bf16_bits(a):
    """float32 array -> uint16 bfloat16 bits, round to nearest even (NaN kept a NaN)."""
    bits = np.ascontiguousarray(a, dtype="<f4").view("<u4").astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(np.asarray(a, dtype=np.float32))
    rounded = np.where(nan, (bits >> 16) | 0x40, rounded)
    return rounded.astype("<u2")


def bf16_round(a):
    """float32 values rounded to bfloat16 and back (what a BF16 tensor will hold)."""
    return (_bf16_bits(a).astype("<u4") << 16).view("<f4").reshape(np.shape(a))


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
        b, e = info["data_offsets"]
        if info["dtype"] == "BF16":
            bits = np.frombuffer(data[b:e], dtype="<u2").astype("<u4") << 16
            arr = bits.view("<f4").reshape(info["shape"]).copy()
        else:
            dt = _DTYPES.get(info["dtype"])
            if dt is None:
                raise ValueError(f"{path}: tensor {name} has dtype {info['dtype']}")
            arr = np.frombuffer(data[b:e], dtype=dt).reshape(info["shape"]).copy()
            if arr.dtype.kind == "f":
                arr = arr.astype(np.float32)
        out[name] = arr
    return out, meta


def save(path, tensors, metadata=None, dtypes=None):
    """Writes tensors (name -> array-like), in sorted name order, with metadata; every tensor
    F32 unless dtypes names another dtype for it ("F16", "BF16", "I64")."""
    dtypes = dtypes or {}
    header = {}
    chunks = []
    offset = 0
    for name in sorted(tensors):
        dt = dtypes.get(name, "F32")
        if dt == "BF16":
            arr = _bf16_bits(np.asarray(tensors[name], dtype=np.float32))
            shape = list(np.shape(tensors[name]))
        else:
            arr = np.asarray(tensors[name], dtype={"F32": "<f4", "F16": "<f2", "I64": "<i8"}[dt])
            shape = list(arr.shape)
        buf = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [offset, offset + len(buf)]}
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
