"""Reads an F32 .safetensors file without numpy or torch, for the MPI tests' checks.

read(path) -> {name: tuple of floats}; metadata(path) -> the __metadata__ dict.
"""
import json
import struct


def _header(blob):
    n = struct.unpack("<Q", blob[:8])[0]
    return json.loads(blob[8:8 + n]), blob[8 + n:]


def read(path):
    header, data = _header(open(path, "rb").read())
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", f"{path}: {name} is {info['dtype']}, not F32"
        begin, end = info["data_offsets"]
        out[name] = struct.unpack(f"<{(end - begin) // 4}f", data[begin:end])
    return out


def metadata(path):
    return _header(open(path, "rb").read())[0].get("__metadata__", {})
