#!/usr/bin/python3
"""Copies a model package, writing every shared tensor back into the module saved without it.

The copy is what the exporter wrote before it stored shared tensors once: format version 1, no
"shared_parameters" in manifest.json, the text encoder with its own copy of the token embedding.
Used by the engine tests to prove such packages still load and give the same tokens:

    /usr/bin/python3 tests/engine/unshare_package.py PKG DST
"""
import hashlib
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "engine", "exporter"))

import torch  # noqa: E402

from florence2 import ops, package  # noqa: E402


def main() -> int:
    src, dst = sys.argv[1], sys.argv[2]
    shutil.copytree(src, dst)
    with open(os.path.join(src, "manifest.json")) as f:
        manifest = json.load(f)
    shared = manifest.pop("shared_parameters")
    ops.try_load_library()  # the modules call florence's operators ($FLORENCE_OPS_LIBRARY)
    files = manifest["files"]
    modules = {role: torch.jit.load(os.path.join(src, files[role]["name"]))
               for role in package.ROLES}
    package.restore_shared(modules, shared)
    for role in {entry["module"] for entry in shared}:
        path = os.path.join(dst, files[role]["name"])
        modules[role].save(path)
        with open(path, "rb") as f:
            data = f.read()
        files[role]["size"] = len(data)
        files[role]["sha256"] = hashlib.sha256(data).hexdigest()
    manifest["format_version"] = 1
    with open(os.path.join(dst, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
