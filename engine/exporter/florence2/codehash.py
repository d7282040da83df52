"""Digests of the TorchScript code in a module archive, and the allow-list the engine checks.

    python3 -m florence2.codehash PKG/decoder.pt               # the digest of one archive
    python3 -m florence2.codehash --allowlist OUT.txt          # what this exporter writes

A package's .pt files are code: TorchScript the engine runs. The engine loads only archives whose
code is code this exporter writes. The digest covers every code/ entry (the TorchScript source)
and constants.pkl, not the tensor data and not the .debug_pkl source maps. Whole numbers in the
code are dimensions of the model (channels, heads, features) that differ between models of one
family; they are replaced by 0 before hashing, so one digest stands for every model of a layer
layout, and the allow-list holds one per module and layout (the bundled model, the tiny fixture,
Florence-2 base and large). Anything else in the code (a call, a name, an operator) changes the
digest. The engine computes the same digest (engine/package/CodeCheck.cpp); the allow-list is
engine/package/code-allowlist.txt, regenerated and compared by tests/engine/TestCodeAllowlist.cpp.
"""
import argparse
import copy
import hashlib
import io
import os
import re
import sys
import zipfile
from typing import Dict, List

ROLES = ("vision", "text_encoder", "decoder")
_MANGLE = re.compile(rb"[./]___torch_mangle_[0-9]+")
_DIGITS = re.compile(rb"[0-9]+")
_ATTRIBUTE = re.compile(rb"^  [A-Za-z_][A-Za-z0-9_]* : ")
# The model families the exporter writes, by the config that defines them (relative to the
# repository; the demo model's config is its checkpoint's).
FAMILIES = {
    "florence2-demo-shapes": "resources/models/florence2-demo-shapes/config.json",
    "florence2-tiny": "resources/florence2/config-tiny.json",
    "florence2-base": "resources/florence2/config-base-ft.json",
    "florence2-large": "resources/florence2/config-large.json",
}


def code_blocks(data: bytes) -> List[bytes]:
    """The top-level blocks (a class, a function, an import line) of one code file, normalized:
    TorchScript numbers the classes it dedupes ("___torch_mangle_12") in the order it meets
    them, splits them over files by that order, writes a class's methods in the order it
    compiled them and its constant attributes in set order (which changes from run to run);
    none of that is the code's meaning, so mangle numbers are dropped, whole numbers become 0,
    each method is a block of its own and each run of attribute declarations is sorted and
    deduplicated."""
    text = _DIGITS.sub(b"0", _MANGLE.sub(b"", data))
    blocks: List[List[bytes]] = []
    for line in text.split(b"\n"):
        if not line.strip():
            continue
        # A class's methods are blocks of their own: TorchScript writes them in the order it
        # compiled them, which differs between models of one family.
        if not line[:1].isspace() or line.startswith(b"  def ") or not blocks:
            blocks.append([])
        blocks[-1].append(line)
    out = []
    for lines in blocks:
        normalized: List[bytes] = []
        run: List[bytes] = []
        for line in lines + [b""]:
            if _ATTRIBUTE.match(line):
                run.append(line)
                continue
            normalized += sorted(set(run))
            run = []
            if line:
                normalized.append(line)
        out.append(b"\n".join(normalized))
    return out


def digest_entries(entries: Dict[str, bytes]) -> str:
    """entries: record name inside the archive (without the archive's top folder) -> bytes."""
    parts = set()
    for name, data in entries.items():
        if name == "constants.pkl":
            parts.add(b"constants.pkl " + hashlib.sha256(data).hexdigest().encode())
        elif name.startswith("code/") and not name.endswith(".debug_pkl"):
            for block in code_blocks(data):
                parts.add(hashlib.sha256(block).hexdigest().encode())
    return hashlib.sha256(b"\n".join(sorted(parts))).hexdigest()


def digest_archive(source) -> str:
    """source: a path or a file object of a TorchScript archive (.pt)."""
    with zipfile.ZipFile(source) as z:
        entries = {}
        for info in z.infolist():
            name = info.filename.split("/", 1)[1] if "/" in info.filename else info.filename
            if name == "constants.pkl" or name.startswith("code/"):
                entries[name] = z.read(info)
    return digest_entries(entries)


def digest_module(module) -> str:
    import torch
    buf = io.BytesIO()
    torch.jit.save(module, buf)
    buf.seek(0)
    return digest_archive(buf)


def shrink(config: dict) -> dict:
    """The same layer layout with small dimensions: scripting it gives the same code up to
    whole numbers, in seconds instead of building a model of hundreds of millions of
    parameters."""
    c = copy.deepcopy(config)
    tc, vc = c["text_config"], c["vision_config"]
    heads = max(tc["encoder_attention_heads"], tc["decoder_attention_heads"])
    tc["d_model"] = 8 * heads
    tc["encoder_ffn_dim"] = tc["decoder_ffn_dim"] = 16 * heads
    vc["dim_embed"] = [8 * h for h in vc["num_heads"]]
    vc["projection_dim"] = tc["d_model"]
    if "projection_dim" in c:
        c["projection_dim"] = tc["d_model"]
    return c


def family_digests(config: dict) -> Dict[str, str]:
    import torch
    from .model import Florence2
    torch.manual_seed(0)
    model = Florence2(shrink(config)).eval()
    model.tie_weights()
    model.tie_encoder_embedding()
    with torch.no_grad():
        return {"vision": digest_module(torch.jit.script(model.vision)),
                "text_encoder": digest_module(torch.jit.script(model.text)),
                "decoder": digest_module(torch.jit.script(model.dec))}


def allowlist_lines(root: str) -> List[str]:
    lines = []
    for family, rel in FAMILIES.items():
        from .files import read_json
        digests = family_digests(read_json(os.path.join(root, rel)))
        lines += [f"{role} {digests[role]} {family}" for role in ROLES]
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="florence2.codehash", description=__doc__.split("\n")[0])
    parser.add_argument("archives", nargs="*", help=".pt files to digest")
    parser.add_argument("--allowlist", metavar="OUT", help="write the allow-list of every family")
    parser.add_argument("--root", default=os.path.normpath(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")),
        help="the source checkout (for the families' configs)")
    parser.add_argument("--ops-library", metavar="PATH", help="Florence Studio's operator library")
    args = parser.parse_args(argv)
    for path in args.archives:
        print(f"{digest_archive(path)} {path}")
    if args.allowlist:
        from . import ops
        ops.load_library(args.ops_library)
        text = ("# Digests of the TorchScript code this version's exporter writes, by module and\n"
                "# model family: engine/exporter/florence2/codehash.py --allowlist (do not edit).\n"
                + "\n".join(allowlist_lines(args.root)) + "\n")
        with open(args.allowlist, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
