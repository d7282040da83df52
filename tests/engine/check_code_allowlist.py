#!/usr/bin/python3
"""Proves engine/package/code-allowlist.txt is what this version's exporter writes: regenerates it
from the model families' configs (engine/exporter/florence2/codehash.py) and compares. A change
to the exporter's model code that changes the TorchScript it writes fails here until the list
is regenerated:

    /usr/bin/python3 -m florence2.codehash --allowlist engine/package/code-allowlist.txt  (in engine/exporter)

    /usr/bin/python3 tests/engine/check_code_allowlist.py --ops-library build/lib/florence-studio/ops/libflorence_ops.so
"""
import difflib
import os
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "engine", "exporter"))

from florence2 import codehash, supported  # noqa: E402


def check_supported_layouts() -> bool:
    """The importer refuses architectures from supported.LAYER_LAYOUTS before exporting; it must
    name the layer layouts of exactly the families the allow-list holds."""
    import json
    found = {}
    for family, rel in codehash.FAMILIES.items():
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            found[family] = supported.layer_layout(json.load(f))
    if found != supported.LAYER_LAYOUTS:
        print(f"engine/exporter/florence2/supported.py LAYER_LAYOUTS {supported.LAYER_LAYOUTS} "
              f"is not the families' layer layouts {found}", file=sys.stderr)
        return False
    return True


def main() -> int:
    if not check_supported_layouts():
        return 1
    ops = sys.argv[sys.argv.index("--ops-library") + 1] if "--ops-library" in sys.argv else None
    committed_path = os.path.join(ROOT, "engine", "package", "code-allowlist.txt")
    with tempfile.TemporaryDirectory() as tmp:
        fresh_path = os.path.join(tmp, "code-allowlist.txt")
        args = ["--allowlist", fresh_path, "--root", ROOT]
        if ops:
            args += ["--ops-library", ops]
        codehash.main(args)
        with open(fresh_path) as f:
            fresh = f.read().splitlines(keepends=True)
    with open(committed_path) as f:
        committed = f.read().splitlines(keepends=True)
    if fresh != committed:
        sys.stderr.writelines(difflib.unified_diff(committed, fresh, committed_path, "regenerated"))
        print(f"{committed_path} is not what the exporter writes: regenerate it (see "
              "tests/engine/check_code_allowlist.py)", file=sys.stderr)
        return 1
    print(f"{committed_path}: {len(committed)} lines, as the exporter writes them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
