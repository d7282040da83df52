"""Reading published Florence-2 checkpoints: pytorch_model.bin or model.safetensors.

The safetensors package is not in Debian, so the format (u64 header size, JSON header, raw
little-endian data) is read here directly.
"""
import json
import os
import struct
from typing import Dict

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


def read_safetensors(path: str) -> Dict[str, torch.Tensor]:
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            raise CheckpointError(f"{path}: truncated safetensors file (no header)")
        (header_len,) = struct.unpack("<Q", raw)
        if header_len <= 0 or 8 + header_len > size:
            raise CheckpointError(f"{path}: header size {header_len} does not fit a {size}-byte file")
        try:
            header = json.loads(f.read(header_len))
        except ValueError as e:
            raise CheckpointError(f"{path}: header is not JSON ({e})") from None
        data = f.read()
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: header is not a JSON object")
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        # The header is a stranger's JSON: check every field's type before using it, so a
        # malformed file gives this message rather than a bare KeyError or TypeError.
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
        if not 0 <= begin <= end <= len(data):
            raise CheckpointError(f"{path}: tensor {name} lies outside the file (truncated?)")
        expected = 1
        for s in shape:
            expected *= s
        itemsize = torch.empty(0, dtype=dtype).element_size()
        if end - begin != expected * itemsize:
            raise CheckpointError(f"{path}: tensor {name} holds {end - begin} bytes, shape {shape} "
                                  f"needs {expected * itemsize}")
        buf = bytearray(data[begin:end])
        t = torch.frombuffer(buf, dtype=dtype) if end > begin else torch.empty(0, dtype=dtype)
        tensors[name] = t.reshape(shape)
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


def load_state_dict(folder: str) -> Dict[str, torch.Tensor]:
    """The checkpoint's tensors as fp32, with tied embeddings filled in under every name."""
    st = os.path.join(folder, "model.safetensors")
    pt = os.path.join(folder, "pytorch_model.bin")
    if os.path.exists(st):
        sd = read_safetensors(st)
    elif os.path.exists(pt):
        try:
            # weights_only: a pickle can run any code while it is read; this unpickler builds
            # only tensors and plain containers and refuses anything else, so a checkpoint
            # from a stranger is data, never code.
            sd = torch.load(pt, map_location="cpu", weights_only=True)
        except Exception as e:  # a truncated, foreign or code-carrying file: say which
            raise CheckpointError(checkpoint_error(pt, e)) from None
        if not isinstance(sd, dict) or not all(
                isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in sd.items()):
            raise CheckpointError(f"{pt}: does not hold a state dict (names to tensors)")
    else:
        raise CheckpointError(
            f"{folder}: no weights found: expected model.safetensors or pytorch_model.bin")
    sd = {k: v.float() if v.is_floating_point() else v for k, v in sd.items()}
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
