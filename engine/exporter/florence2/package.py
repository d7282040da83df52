"""Loads an exported package's TorchScript modules in Python the way the C++ engine does.

    from florence2.package import load_modules
    manifest, modules = load_modules("/tmp/demo-pkg")   # {"vision": ..., "text_encoder": ...,
    text = modules["text_encoder"]                        #  "decoder": ...}, float32, eval

A tensor used by two modules is stored once: manifest.json's "shared_parameters" lists, for
example, the text encoder's token embedding as the decoder's, and text_encoder.pt then holds an
empty tensor in its place. Loading puts the decoder's tensor back into the text encoder (one
tensor in memory, as in the engine). Packages without the entry load as before.

An architecture package (format version 3, the speed demos) holds no weight data: its
"generated_parameters" are filled here as the engine fills them (engine/runtime/ModelLoad.cpp), one
seeded generator per tensor, so the Python baseline runs the weights the engine runs.
"""
import os
from typing import Dict, List, Tuple

import torch

from . import files, ops

ROLES = ("vision", "text_encoder", "decoder")


def get_parameter(module, name: str) -> torch.Tensor:
    *path, last = name.split(".")
    for part in path:
        module = getattr(module, part)
    return getattr(module, last)


def set_parameter(module, name: str, value: torch.Tensor) -> None:
    *path, last = name.split(".")
    for part in path:
        module = getattr(module, part)
    setattr(module, last, value)


def mix_seed(seed: int, name: str) -> int:
    """The engine's mixSeed: the package's seed and a tensor's name as one 64-bit seed."""
    mask = (1 << 64) - 1
    h = 1469598103934665603
    for c in name.encode():
        h = ((h ^ c) * 1099511628211) & mask
    z = seed ^ h
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & mask
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & mask
    return z ^ (z >> 31)


def generate_parameters(modules: Dict[str, torch.nn.Module], generated: dict) -> None:
    """Fills an architecture package's empty placeholders from their recipe."""
    seed = int(generated["seed"])
    for entry in generated["parameters"]:
        gen = torch.Generator().manual_seed(
            mix_seed(seed, entry["module"] + "/" + entry["names"][0]))
        value = torch.normal(float(entry["mean"]), float(entry["std"]), tuple(entry["shape"]),
                             generator=gen)
        for name in entry["names"]:
            set_parameter(modules[entry["module"]], name, value)


def restore_shared(modules: Dict[str, torch.nn.Module], shared: List[dict]) -> None:
    """Puts every shared tensor into the module that was saved without it."""
    for entry in shared:
        value = get_parameter(modules[entry["from_module"]], entry["from_name"])
        set_parameter(modules[entry["module"]], entry["name"], value)


def load_modules(folder: str, dtype: torch.dtype = torch.float32
                 ) -> Tuple[dict, Dict[str, torch.nn.Module]]:
    manifest = files.read_json(os.path.join(folder, "manifest.json"))
    entries = manifest["files"]
    # Modules exported since model.py calls florence's operators need their library to load
    # (older packages load either way); found as the exporter finds it (ops.py). Not at import:
    # a program that names its library (--ops-library) loads that one first.
    ops.try_load_library()
    modules = {}
    for role in ROLES:
        modules[role] = torch.jit.load(os.path.join(folder, entries[role]["name"])).to(dtype).eval()
    if "generated_parameters" in manifest:
        generate_parameters(modules, manifest["generated_parameters"])
        if dtype != torch.float32:
            modules = {role: m.to(dtype) for role, m in modules.items()}
    restore_shared(modules, manifest.get("shared_parameters", []))
    return manifest, modules
