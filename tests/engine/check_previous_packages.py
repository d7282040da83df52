#!/usr/bin/python3
"""Packages imported with the previous version still load after an upgrade, and answer as before.

engine/package/code-allowlist-previous.txt keeps the digests of the TorchScript code the previous
exporter wrote. This test makes such a package without the previous exporter: it copies the demo
model package the build exported (this version's code), puts in each module archive the code
entries the previous exporter wrote for the same model (tests/engine/data/previous-code/, code
and constants only, no weights), fixes the manifest's sizes and checksums, and runs the CLI on
sample scenes with both packages:
- float32: the same tokens (the float32 code path did not change);
- bfloat16 and int8: the previous code loads and answers with the same labels.
It fails when the previous digests are dropped, when the engine no longer runs the previous code
(an operator's signature changed), or when a module's layout changed so that old code no longer
fits this version's weights (then old packages need re-importing: say so in the README).

    /usr/bin/python3 tests/engine/check_previous_packages.py --cli build/bin/florence-studio-cli \\
        --package build/share/florence-studio/models/default --image resources/samples/scenes/scene_01.png
    # When the exporter's code changes: save the code of a package the outgoing version exported
    # (before code-allowlist.txt is regenerated and its lines move to code-allowlist-previous.txt):
    /usr/bin/python3 tests/engine/check_previous_packages.py --save-code PKG
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SAVED = os.path.join(ROOT, "tests", "engine", "data", "previous-code")
ROLES = ("vision", "text_encoder", "decoder")


def is_code(name: str) -> bool:
    """An entry name inside the archive's top folder: its TorchScript code and constants."""
    return (name.startswith("code/") and not name.endswith(".debug_pkl")) or name == "constants.pkl"


def split(entry: str):
    top, _, name = entry.partition("/")
    return top, name


def save_code(package: str) -> None:
    os.makedirs(SAVED, exist_ok=True)
    for role in ROLES:
        with zipfile.ZipFile(os.path.join(package, role + ".pt")) as src, \
                zipfile.ZipFile(os.path.join(SAVED, role + ".zip"), "w", zipfile.ZIP_DEFLATED) as out:
            for entry in src.namelist():
                _, name = split(entry)
                if is_code(name):
                    out.writestr(name, src.read(entry))
        print("saved", os.path.join(SAVED, role + ".zip"))


def with_previous_code(archive: str, saved: str, out: str) -> None:
    """archive with its code entries replaced by saved's (and its .debug_pkl source maps, which
    belong to the replaced code, left out); the weights and data.pkl stay."""
    with zipfile.ZipFile(saved) as s:
        code = {n: s.read(n) for n in s.namelist()}
    with zipfile.ZipFile(archive) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        top = split(src.namelist()[0])[0]
        for entry in src.namelist():
            _, name = split(entry)
            if is_code(name) or name.endswith(".debug_pkl"):
                continue
            dst.writestr(src.getinfo(entry), src.read(entry))
        for name, data in sorted(code.items()):
            dst.writestr(f"{top}/{name}", data)


def previous_package(current: str, out: str) -> None:
    shutil.copytree(current, out)
    with open(os.path.join(out, "manifest.json")) as f:
        manifest = json.load(f)
    for role in ROLES:
        path = os.path.join(out, manifest["files"][role]["name"])
        with_previous_code(os.path.join(current, manifest["files"][role]["name"]),
                           os.path.join(SAVED, role + ".zip"), path)
        with open(path, "rb") as f:
            data = f.read()
        manifest["files"][role]["size"] = len(data)
        manifest["files"][role]["sha256"] = hashlib.sha256(data).hexdigest()
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)


def answer(cli: str, package: str, image: str, task: str, precision: str) -> dict:
    run = subprocess.run([cli, "run", "--model", package, "--image", image, "--task", task,
                          "--precision", precision, "--threads", "1", "--quiet", "--json"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise AssertionError(f"{package} ({precision}, {task}): exit {run.returncode}: "
                             f"{run.stderr.strip()[-400:]}")
    return json.loads(run.stdout)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--save-code", metavar="PKG")
    p.add_argument("--cli")
    p.add_argument("--package")
    p.add_argument("--image", action="append")
    args = p.parse_args()
    if args.save_code:
        save_code(args.save_code)
        return 0
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        old = os.path.join(tmp, "previous")
        previous_package(args.package, old)
        for image in args.image:
            for task in ("<OD>", "<CAPTION>"):
                for precision in ("float32", "bfloat16", "int8"):
                    try:
                        a = answer(args.cli, old, image, task, precision)
                        b = answer(args.cli, args.package, image, task, precision)
                    except AssertionError as e:
                        failures.append(str(e))
                        continue
                    what = f"{os.path.basename(image)} {task} {precision}"
                    if precision == "float32":
                        same = a["generated_ids"] == b["generated_ids"]
                    else:
                        la = a["huggingface"][task]
                        lb = b["huggingface"][task]
                        same = (la.get("labels") == lb.get("labels")) if isinstance(la, dict) \
                            else la == lb
                    print(("same  " if same else "DIFFER"), what, json.dumps(a["huggingface"])[:100])
                    if not same:
                        failures.append(f"{what}: previous code {a['huggingface']} against "
                                        f"{b['huggingface']}")
    for f in failures:
        print("FAIL", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
