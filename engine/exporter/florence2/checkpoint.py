"""Reading published Florence-2 checkpoints: pytorch_model.bin or model.safetensors.

The safetensors package is not in Debian, so the format (u64 header size, JSON header, raw
little-endian data) is read here directly.
"""
import json
import os
import struct
from typing import Dict, Tuple

import torch

from . import files

SAFETENSORS_DTYPES = {
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "F32": torch.float32,
    "F64": torch.float64,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}

TIED_NAMES = (
    "language_model.model.encoder.embed_tokens.weight",
    "language_model.model.decoder.embed_tokens.weight",
    "language_model.lm_head.weight",
)
SHARED_NAME = "language_model.model.shared.weight"


class CheckpointError(Exception):
    """A checkpoint folder or file that cannot be used, with a message a user can act on."""


def refused_reason(raw: str) -> str:
    """What torch.load(weights_only=True) found in a checkpoint, without its advice to load the
    file unsafely. PyTorch 1.13 puts it after "WeightsUnpickler error:"; 2.6 on a line of its own
    ("Trying to load unsupported GLOBAL posix.system ...") among lines about weights_only."""
    if "WeightsUnpickler error:" in raw:
        what = raw.split("WeightsUnpickler error:", 1)[-1]
    else:
        lines = [line.strip() for line in raw.splitlines() if line.strip()]
        what = next((line for line in lines if "weights_only" not in line and
                     "torch.load" not in line and not line.startswith("Weights only load failed")),
                    "")
    what = " ".join(what.split())
    return "" if "weights_only" in what else what


def checkpoint_error(pt: str, e: Exception) -> str:
    """One line saying why torch.load(weights_only=True) refused `pt`, without torch's advice to
    load it unsafely."""
    text = " ".join(str(e).split()) or type(e).__name__
    try:
        with files.open_regular(pt, 1 << 62) as f:  # never blocks on a FIFO
            head = f.read(2)
    except files.FileError as err:
        return str(err)
    except OSError as err:
        return files.os_error_message(pt, err)
    if head != b"PK" and head[:1] != b"\x80":
        return (f"{pt}: not a PyTorch checkpoint (neither a zip archive nor a pickle): a damaged "
                "file or another kind of file")
    if "Weights only load failed" in text:
        what = refused_reason(str(e))
        detail = f" ({what[:120]})" if what else ""
        return (f"{pt}: refused: it holds more than plain weights{detail}, and loading it "
                "could run code; only checkpoints of plain weights are imported")
    return (f"{pt}: cannot be read as a PyTorch checkpoint of plain weights ({text[:200]}): the "
            "file is damaged or incomplete")


# Far above any Florence-2 header (large: about 1,200 tensors, some 150 KB of JSON) and the
# limit the safetensors format itself sets; a header is a stranger's JSON, read whole.
MAX_HEADER_BYTES = 100 << 20


def safetensors_header(f, path: str, size: int) -> Tuple[dict, int]:
    """The header of an open safetensors file and where its data begins."""
    raw = f.read(8)
    if len(raw) < 8:
        raise CheckpointError(f"{path}: truncated safetensors file (no header)")
    (header_len,) = struct.unpack("<Q", raw)
    if header_len <= 0 or 8 + header_len > size:
        raise CheckpointError(f"{path}: header size {header_len} does not fit a {size}-byte file")
    if header_len > MAX_HEADER_BYTES:
        raise CheckpointError(f"{path}: header of {header_len} bytes, more than the "
                              f"{MAX_HEADER_BYTES >> 20} MB any checkpoint needs")
    try:
        header = json.loads(f.read(header_len))
    except ValueError as e:
        raise CheckpointError(f"{path}: header is not JSON ({e})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: header is not a JSON object")
    return header, 8 + header_len


def tensor_entry(path: str, name: str, info, data_size: int) -> Tuple[torch.dtype, list, int, int]:
    """dtype, shape and byte range of one header entry, every field checked: the header is a
    stranger's JSON, so a malformed file gives this message rather than a KeyError."""
    offsets = info.get("data_offsets") if isinstance(info, dict) else None
    shape = info.get("shape") if isinstance(info, dict) else None
    if (not isinstance(offsets, list) or len(offsets) != 2
            or not all(type(v) is int for v in offsets)
            or not isinstance(shape, list)
            or not all(type(v) is int and v >= 0 for v in shape)):
        raise CheckpointError(f"{path}: tensor {name} has a malformed header entry "
                              "(needs dtype, shape and data_offsets)")
    dtype = SAFETENSORS_DTYPES.get(info.get("dtype"))
    if dtype is None:
        raise CheckpointError(f"{path}: tensor {name} has unsupported dtype {info.get('dtype')}")
    begin, end = offsets
    if not 0 <= begin <= end <= data_size:
        raise CheckpointError(f"{path}: tensor {name} lies outside the file (truncated?)")
    expected = 1
    for s in shape:
        expected *= s
    itemsize = torch.empty(0, dtype=dtype).element_size()
    if end - begin != expected * itemsize:
        raise CheckpointError(f"{path}: tensor {name} holds {end - begin} bytes, shape {shape} "
                              f"needs {expected * itemsize}")
    return dtype, shape, begin, end


def read_safetensors(path: str, as_float32: bool = False) -> Dict[str, torch.Tensor]:
    """Every tensor of a safetensors file, each read from its own byte range (a shard of a large
    checkpoint is never held whole next to its tensors). as_float32 turns each floating tensor
    to float32 as it is read."""
    tensors = {}
    with open_weights(path) as f:
        size = os.fstat(f.fileno()).st_size
        header, start = safetensors_header(f, path, size)
        for name, info in header.items():
            if name == "__metadata__":
                continue
            dtype, shape, begin, end = tensor_entry(path, name, info, size - start)
            f.seek(start + begin)
            buf = bytearray(f.read(end - begin))
            if len(buf) != end - begin:
                raise CheckpointError(f"{path}: tensor {name} lies outside the file (truncated?)")
            t = torch.frombuffer(buf, dtype=dtype) if buf else torch.empty(0, dtype=dtype)
            t = t.reshape(shape)
            tensors[name] = t.float() if as_float32 and t.is_floating_point() else t
    return tensors


def write_safetensors(path: str, tensors: Dict[str, torch.Tensor]) -> None:
    names = {v: k for k, v in SAFETENSORS_DTYPES.items()}
    header = {}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        t = t.contiguous()
        raw = t.view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * ((8 - len(head) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for b in blobs:
            f.write(b)


# The index of a sharded checkpoint names every tensor once: some 100 KB for Florence-2-large.
MAX_INDEX_BYTES = 16 << 20
# A bound for weight files, which are read by ranges, never whole: far above Florence-2 large's
# 1.5 GB, it only keeps the arithmetic of a stranger's sizes sane.
MAX_WEIGHTS_BYTES = 1 << 40


def open_weights(path: str):
    """A weight file opened as a regular file (a FIFO would block the exporter, a device would
    never end): FileError naming it otherwise."""
    return files.open_regular(path, MAX_WEIGHTS_BYTES)
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")


def read_pytorch_bin(pt: str) -> Dict[str, torch.Tensor]:
    with open_weights(pt) as f:
        try:
            # weights_only: a pickle can run any code while it is read; this unpickler builds
            # only tensors and plain containers and refuses anything else, so a checkpoint
            # from a stranger is data, never code.
            sd = torch.load(f, map_location="cpu", weights_only=True)
        except Exception as e:  # a truncated, foreign or code-carrying file: say which
            raise CheckpointError(checkpoint_error(pt, e)) from None
    if not isinstance(sd, dict) or not all(
            isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in sd.items()):
        raise CheckpointError(f"{pt}: does not hold a state dict (names to tensors)")
    return {k: v.float() if v.is_floating_point() else v for k, v in sd.items()}


def shard_map(folder: str, index: str) -> Dict[str, str]:
    """name -> shard file of a sharded checkpoint's index; every shard a plain file name in
    `folder` (an index is a stranger's JSON: it must not point elsewhere)."""
    try:
        data = json.loads(files.read_bytes(index, MAX_INDEX_BYTES))
    except files.FileError as e:
        raise CheckpointError(str(e)) from None
    except RecursionError:
        raise CheckpointError(f"{index}: not a usable JSON file (nested too deeply)") from None
    except ValueError as e:
        raise CheckpointError(f"{index}: not valid JSON ({e})") from None
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise CheckpointError(f"{index}: has no weight_map (tensor names to shard files)")
    for name, shard in weight_map.items():
        if (not isinstance(shard, str) or os.path.basename(shard) != shard
                or shard in ("", ".", "..") or shard.startswith(".")):
            raise CheckpointError(f"{index}: tensor {name} is mapped to {shard!r}, not a file "
                                  "name in the checkpoint's folder")
        if not os.path.isfile(os.path.join(folder, shard)):
            raise CheckpointError(f"{index}: shard {shard} of tensor {name} is missing from "
                                  f"{folder}")
    return weight_map


def read_shards(folder: str, index: str) -> Dict[str, torch.Tensor]:
    weight_map = shard_map(folder, index)
    sd: Dict[str, torch.Tensor] = {}
    for shard in sorted(set(weight_map.values())):
        path = os.path.join(folder, shard)
        part = (read_safetensors(path, as_float32=True) if shard.endswith(".safetensors")
                else read_pytorch_bin(path))
        for name, value in part.items():
            if name in sd:
                raise CheckpointError(f"{path}: tensor {name} is also in another shard")
            if weight_map.get(name) != shard:
                raise CheckpointError(f"{path}: holds {name}, which {os.path.basename(index)} "
                                      f"does not place in this shard")
            sd[name] = value
    missing = [n for n in weight_map if n not in sd]
    if missing:
        raise CheckpointError(f"{index}: {len(missing)} tensors it lists are in no shard, e.g. "
                              + ", ".join(missing[:3]))
    return sd


def read_weights(folder: str) -> Tuple[Dict[str, torch.Tensor], str]:
    """The checkpoint's tensors under their own names, floating ones as float32, and the file
    they came from: model.safetensors, pytorch_model.bin or either sharded with an index."""
    for name in WEIGHT_FILES:
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        if name == "model.safetensors":
            return read_safetensors(path, as_float32=True), name
        if name == "pytorch_model.bin":
            return read_pytorch_bin(path), name
        sd = read_shards(folder, path)
        shards = len(set(shard_map(folder, path).values()))
        return sd, f"{name} ({shards} shard{'s' if shards != 1 else ''})"
    raise CheckpointError(f"{folder}: no weights found: expected model.safetensors, "
                          "pytorch_model.bin or a sharded model.safetensors.index.json")


def tie_embeddings(sd: Dict[str, torch.Tensor], folder: str) -> Dict[str, torch.Tensor]:
    """Fills in the tied token embedding under every name (published files store it once)."""
    if SHARED_NAME not in sd:
        for name in TIED_NAMES:
            if name in sd:
                sd[SHARED_NAME] = sd[name]
                break
    if SHARED_NAME not in sd:
        raise CheckpointError(f"{folder}: the checkpoint has no token embedding ({SHARED_NAME})")
    for name in TIED_NAMES:
        sd.setdefault(name, sd[SHARED_NAME])
    return sd


def load_state_dict(folder: str) -> Dict[str, torch.Tensor]:
    """An original-layout checkpoint's tensors as float32, tied embeddings under every name."""
    return tie_embeddings(read_weights(folder)[0], folder)
