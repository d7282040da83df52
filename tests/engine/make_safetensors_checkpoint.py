#!/usr/bin/python3
"""Copies a Hugging Face Florence-2 folder, converting pytorch_model.bin to model.safetensors.

The tied token embedding is written once, under language_model.model.shared.weight only, the
other way published checkpoints store it, so an import of the copy covers both that layout and
the safetensors reader. Used by the engine tests:

    /usr/bin/python3 tests/engine/make_safetensors_checkpoint.py SRC DST
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "engine", "exporter"))

import torch  # noqa: E402

from florence2.checkpoint import TIED_NAMES, write_safetensors  # noqa: E402


def main() -> int:
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(src):
        if name != "pytorch_model.bin" and not name.startswith("reference"):
            shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))
    sd = torch.load(os.path.join(src, "pytorch_model.bin"), map_location="cpu")
    tensors = {k: v for k, v in sd.items() if k not in TIED_NAMES}
    write_safetensors(os.path.join(dst, "model.safetensors"), tensors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
