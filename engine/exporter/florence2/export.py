"""Exports Florence-2 as a model package for Florence Studio's C++ engine.

    /usr/bin/python3 engine/exporter/florence2_export.py --hf ~/Florence-2-base --out ~/models/base
    /usr/bin/python3 engine/exporter/florence2_export.py --random-init tiny --out resources/models/tiny
    /usr/bin/python3 engine/exporter/florence2_export.py --architecture base --out /tmp/base-arch

The package folder holds three TorchScript modules made with torch.jit.script (never trace, which
would freeze shapes and drop the key/value cache), the tokenizer files and manifest.json.
Progress goes to stderr as lines "progress <percent> <message>" so a GUI can show it.
The model calls Florence Studio's own operators (engine/ops/), so the exporter loads their
library first: --ops-library, else $FLORENCE_OPS_LIBRARY, else lib/florence-studio/ops/ of the
build or installation these tools are in, else the one in build/ of this source checkout
(florence2/ops.py).
"""
import argparse
import datetime
import hashlib
import json
import os
import re
import shutil
import signal
import sys
import tempfile
from typing import Tuple

import torch

from . import checkpoint, files, layouts, ops, package, supported, tasks
from .checkpoint import CheckpointError, load_state_dict
from .model import Decoder, Florence2, TextEncoder, VisionEncoder

# 1: three self-contained modules. 2: a module may hold an empty tensor in place of one it
# shares with another module ("shared_parameters" in the manifest); written only when used, so
# an engine that reads only version 1 refuses such a package instead of failing mid-run.
# 3: an architecture package: no weight data at all, every parameter an empty placeholder the
# engine fills from a seeded generator ("generated_parameters").
FORMAT_VERSION = 1
SHARED_FORMAT_VERSION = 2
GENERATED_FORMAT_VERSION = 3
HERE = os.path.dirname(os.path.abspath(__file__))
RESOURCES = os.path.normpath(os.path.join(HERE, "..", "..", "..", "resources", "florence2"))
RANDOM_CONFIGS = {"tiny": "config-tiny.json", "base": "config-base-ft.json",
                  "large": "config-large.json"}


# Written into every package folder; with it (or a manifest.json from an older exporter) an
# existing --out folder is recognised as one this exporter made and may be replaced.
MARKER = ".florence-studio-package"


class ExportError(Exception):
    pass


def check_out(out: str) -> list:
    """The files of an existing --out folder the export may replace (empty when it is new).

    --out is someone's folder: the export writes it only when it is new, empty, or a package
    this exporter wrote, and then removes only the files such a package holds. Anything else
    is refused before any work is done, never deleted."""
    if os.path.islink(out):
        raise ExportError(f"{out} is a symbolic link; choose a new or empty folder for --out")
    if not os.path.exists(out):
        return []
    if not os.path.isdir(out):
        raise ExportError(f"{out} exists and is not a folder; choose a new or empty folder for --out")
    entries = os.listdir(out)
    if not entries:
        return []
    manifest_path = os.path.join(out, "manifest.json")
    if MARKER not in entries and "manifest.json" not in entries:
        raise ExportError(f"{out} exists and is not a model package; choose a new or empty "
                          "folder for --out (nothing was changed)")
    ours = {MARKER, "manifest.json", "config.json"}
    try:
        listed = files.read_json(manifest_path).get("files", {})
        ours.update(entry["name"] for entry in listed.values())
    except (files.FileError, AttributeError, KeyError, TypeError):
        pass  # an unreadable manifest: only the standard names count as the exporter's
    others = sorted(e for e in entries
                    if e not in ours or not os.path.isfile(os.path.join(out, e))
                    or os.path.islink(os.path.join(out, e)))
    if others:
        raise ExportError(f"{out} holds files the exporter did not write ("
                          + ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
                          + "); choose a new or empty folder for --out (nothing was changed)")
    return [os.path.join(out, e) for e in entries]


def progress(percent: int, message: str) -> None:
    print(f"progress {percent} {message}", file=sys.stderr, flush=True)


def resources_dir() -> str:
    """Tokenizer files and configs shipped with the project (or installed next to the tools)."""
    for candidate in (os.environ.get("FLORENCE_RESOURCES"), RESOURCES,
                      os.path.join(HERE, "data")):
        if candidate and os.path.exists(os.path.join(candidate, "vocab.json")):
            return candidate
    raise ExportError("cannot find the bundled Florence-2 tokenizer files (vocab.json, merges.txt)")


def read_json(path: str) -> dict:
    """A config's JSON: a regular file of bounded size only (files.py), else ExportError."""
    try:
        return files.read_json(path)
    except files.FileError as e:
        raise ExportError(str(e)) from None


# Bounds well above any Florence-2 (large: d_model 1024, 12 layers, 16 heads, 51,289 tokens,
# 1024 positions) and the same as the engine's for a package's manifest. Each alone is not
# enough (d_model 16384 with a million tokens is 16 billion weights), so the estimated
# parameter count is bounded too: a hostile config must not make the exporter allocate without
# bound before the checkpoint's own tensors are even looked at.
TEXT_LIMITS = {"d_model": 16384, "encoder_layers": 256, "decoder_layers": 256,
               "encoder_attention_heads": 256, "decoder_attention_heads": 256,
               "encoder_ffn_dim": 65536, "decoder_ffn_dim": 65536, "vocab_size": 1_000_000,
               "max_position_embeddings": 65536}
VISION_LIST_LIMITS = {"dim_embed": 16384, "num_heads": 256, "num_groups": 256, "depths": 256,
                      "patch_size": 64, "patch_stride": 64, "patch_padding": 64}
MAX_PARAMETERS = 5_000_000_000  # Florence-2-large has 0.77 billion


def whole(value, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def check_config(config: dict, path: str) -> None:
    if (not isinstance(config, dict) or not isinstance(config.get("text_config"), dict)
            or not isinstance(config.get("vision_config"), dict)):
        raise ExportError(f"{path} is not a Florence-2 config (no text_config/vision_config)")
    tc, vc = config["text_config"], config["vision_config"]
    for key, high in TEXT_LIMITS.items():
        if key not in tc:
            raise ExportError(f"{path}: text_config lacks {key}")
        if not whole(tc[key], 1, high):
            raise ExportError(f"{path}: text_config.{key} is {tc[key]!r}, expected a whole "
                              f"number from 1 to {high}")
    stages = vc.get("dim_embed")
    if not isinstance(stages, list) or not 1 <= len(stages) <= 8:
        raise ExportError(f"{path}: vision_config.dim_embed is {stages!r}, expected a list of "
                          "1 to 8 stage widths")
    for key, high in VISION_LIST_LIMITS.items():
        v = vc.get(key)
        if (not isinstance(v, list) or len(v) != len(stages)
                or not all(whole(x, 0 if key == "patch_padding" else 1, high) for x in v)):
            raise ExportError(f"{path}: vision_config.{key} is {v!r}, expected {len(stages)} "
                              f"whole numbers up to {high}, one per stage")
    nested = {"window_size": vc.get("window_size"),
              "image_pos_embed.max_pos_embeddings":
                  (vc.get("image_pos_embed") or {}).get("max_pos_embeddings"),
              "visual_temporal_embedding.max_temporal_embeddings":
                  (vc.get("visual_temporal_embedding") or {}).get("max_temporal_embeddings")}
    for key, v in nested.items():
        if not whole(v, 1, 4096):
            raise ExportError(f"{path}: vision_config.{key} is {v!r}, expected a whole number "
                              "from 1 to 4096")
    d, vocab = tc["d_model"], tc["vocab_size"]
    text = ((vocab + 2 * tc["max_position_embeddings"]) * d
            + tc["encoder_layers"] * (4 * d * d + 2 * d * tc["encoder_ffn_dim"])
            + tc["decoder_layers"] * (8 * d * d + 2 * d * tc["decoder_ffn_dim"]))
    vision = sum(depth * 12 * dim * dim for depth, dim in zip(vc["depths"], stages))
    if text + vision > MAX_PARAMETERS:
        raise ExportError(f"{path}: its sizes describe a model of about "
                          f"{(text + vision) / 1e9:.0f} billion parameters, more than "
                          f"{MAX_PARAMETERS // 1_000_000_000} billion: not a Florence-2 config")


def random_state(model: Florence2, seed: int) -> None:
    """Seeded random weights with the spread of a freshly initialized model."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        norms = set()
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.copy_(1.0 + 0.1 * torch.randn(module.weight.shape, generator=gen))
                module.bias.copy_(0.02 * torch.randn(module.bias.shape, generator=gen))
                norms.update((id(module.weight), id(module.bias)))
        for p in model.parameters():
            if id(p) not in norms:
                p.copy_(0.02 * torch.randn(p.shape, generator=gen))


def init_recipe(model: Florence2) -> dict:
    """(mean, std) of every parameter, as random_state draws them, keyed by id()."""
    recipe = {}
    for module in model.modules():
        if isinstance(module, torch.nn.LayerNorm):
            recipe[id(module.weight)] = (1.0, 0.1)
            recipe[id(module.bias)] = (0.0, 0.02)
    for p in model.parameters():
        recipe.setdefault(id(p), (0.0, 0.02))
    return recipe


def all_parameters(module: torch.nn.Module, prefix: str = "") -> list:
    """Every (name, parameter), a tied one under each of its names (torch 1.13's
    named_parameters lists a tensor once)."""
    found = [(prefix + n, p) for n, p in module._parameters.items() if p is not None]
    for n, child in module._modules.items():
        if child is not None:
            found += all_parameters(child, prefix + n + ".")
    return found


def generation_recipe(model: Florence2) -> tuple:
    """The manifest's "generated_parameters" list and "shared_parameters" entries of an
    architecture package of `model` (tied as export_architecture ties it). Each tensor once:
    generated in the first module that holds it (the decoder first, so the token embedding is
    generated there), its other names in that module filled with the same tensor, and another
    module's use listed as shared, as exports with weights do. tools/onnx-baseline/ fills its
    ONNX export's weights from this list as the engine fills a speed demo's."""
    recipe = init_recipe(model)
    generated, shared, first = [], [], {}
    for role, module in (("decoder", model.dec), ("text_encoder", model.text),
                         ("vision", model.vision)):
        by_tensor = {}
        for name, p in all_parameters(module):
            by_tensor.setdefault(id(p), (p, []))[1].append(name)
        for key, (p, names) in by_tensor.items():
            if key in first:
                from_role, from_name = first[key]
                shared += [{"module": role, "name": n, "from_module": from_role,
                            "from_name": from_name} for n in names]
            else:
                first[key] = (role, names[0])
                mean, std = recipe[key]
                generated.append({"module": role, "names": names, "shape": list(p.shape),
                                  "mean": mean, "std": std})
    return generated, shared


def export_architecture(config: dict, out: str, size: str, seed: int) -> None:
    """A package of the architecture alone: the scripted modules hold an empty placeholder for
    every parameter, and the manifest the shapes and the recipe the engine fills them from with
    a seeded generator. A few MB instead of 1-3 GB; answers are noise, speed is the real model's.
    The module code is the same as every other export's, which verify() checks there."""
    progress(5, "building the architecture")
    with torch.no_grad():
        model = Florence2(config).eval()
    model.tie_weights()
    model.tie_encoder_embedding()
    eager = {"decoder": model.dec, "text_encoder": model.text, "vision": model.vision}
    progress(30, "scripting modules")
    with torch.no_grad():
        scripted = {role: torch.jit.script(m) for role, m in eager.items()}
    generated, shared = generation_recipe(model)
    for role, module in eager.items():
        for n, p in all_parameters(module):
            package.set_parameter(scripted[role], n,
                                  p.detach().new_empty((0,) + tuple(p.shape[1:])))
    pre = preprocessor("")
    name = (f"Florence-2-{size} · random weights (speed demo: answers are noise)")
    tmp = start_package(out)
    try:
        progress(60, "writing modules")
        scripted["vision"].save(os.path.join(tmp, "vision.pt"))
        scripted["text_encoder"].save(os.path.join(tmp, "text_encoder.pt"))
        scripted["decoder"].save(os.path.join(tmp, "decoder.pt"))
        write_tokenizer_files(tokenizer_files(""), tmp)
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(config, f, indent=2)
        write_manifest(tmp, model, config, pre, name,
                       f"architecture of Florence-2-{size}, weights generated at load (seed {seed})",
                       {}, "none", shared)
        manifest = read_json(os.path.join(tmp, "manifest.json"))
        manifest["format_version"] = GENERATED_FORMAT_VERSION
        manifest["generated_parameters"] = {"seed": seed, "parameters": generated}
        manifest["generation"]["ignore_eos"] = True
        # Compare's settings by default: greedy, 256 tokens. Florence-2's own (3 beams, 1024
        # tokens, every one generated here) made a comparison at base size run for tens of
        # minutes, its uncached passes recomputing a 1024-token answer at every step.
        manifest["generation"]["num_beams"] = 1
        manifest["generation"]["max_new_tokens"] = 256
        manifest["trained_tasks"] = []
        manifest["purpose"] = ("Random weights at Florence-2's real size: answers are noise. For "
                               "timing and Compare only.")
        with open(os.path.join(tmp, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
        put_in_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    progress(100, "done")


def start_package(out: str) -> str:
    """Checks --out and makes the temporary folder the package is written to, next to it and
    renamed at the end (put_in_place), so an interrupted export never leaves a half-written
    package under the final name. The folder is announced so that the program that runs us can
    remove it if it has to kill us (SIGKILL skips our clean-up)."""
    parent = os.path.dirname(os.path.abspath(out)) or "."
    os.makedirs(parent, exist_ok=True)
    check_out(out)
    tmp = tempfile.mkdtemp(prefix=".export-", dir=parent)
    print(f"tmpdir {tmp}", file=sys.stderr, flush=True)
    return tmp


def put_in_place(tmp: str, out: str) -> None:
    """Marks the finished package in `tmp` as ours and renames it to `out`. --out is checked
    again: the folder may have changed during the export. Only the old package's own files are
    removed; the folder itself goes only once it is empty."""
    with open(os.path.join(tmp, MARKER), "w") as f:
        f.write("a model package written by Florence Studio's exporter\n")
    for path in check_out(out):
        os.remove(path)
    if os.path.isdir(out):
        os.rmdir(out)
    os.rename(tmp, out)


# A weight of a numbered layer, stage or block: one the config has no place for means the
# checkpoint has more layers than config.json says.
LAYER_NAME = re.compile(r"\.(layers|blocks|convs)\.[0-9]+\.")


def hf_config(folder: str) -> Tuple[dict, str]:
    """The folder's config.json in the original layout's terms, checked and found supported
    before any weight is read, and the layout it describes."""
    config_path = os.path.join(folder, "config.json")
    config = read_json(config_path)
    layout = layouts.layout_of_config(config)
    if layout == layouts.NATIVE:
        if not isinstance(config.get("text_config"), dict):
            raise ExportError(f"{config_path} is not a Florence-2 config (no text_config)")
        config = layouts.original_config(config)
    check_config(config, config_path)
    try:
        supported.check_supported(config, config_path)
    except supported.UnsupportedError as e:
        raise ExportError(str(e)) from None
    return config, layout


def hf_state_dict(folder: str, config: dict, config_layout: str) -> Tuple[dict, str]:
    """The checkpoint's tensors under the original layout's names, and a line saying which
    layout and file they came from."""
    try:
        sd, source = checkpoint.read_weights(folder)
        layout = layouts.detect(config_layout, sd.keys(), folder)
        if layout == layouts.NATIVE:
            sd = layouts.original_state_dict(sd, config, folder)
        sd = checkpoint.tie_embeddings(sd, folder)
    except (checkpoint.CheckpointError, layouts.LayoutError) as e:
        raise ExportError(str(e)) from None
    return sd, f"{layouts.DESCRIPTIONS[layout]}, {source}"


def display_name(folder: str) -> str:
    """The folder's name, or for a snapshot of the Hugging Face cache
    (models--ORG--NAME/snapshots/REV) the model's name: the revision names nothing."""
    parts = os.path.normpath(folder).split(os.sep)
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        return parts[-3][len("models--"):].replace("--", "/")
    return parts[-1]


def load_hf_model(folder: str):
    if not os.path.isdir(folder):
        raise ExportError(f"{folder} is not a folder")
    config, config_layout = hf_config(folder)
    progress(5, "reading weights")
    sd, found = hf_state_dict(folder, config, config_layout)
    progress(8, f"found {found}")
    model = Florence2(config).eval()
    mapped = {}
    unknown = []
    for key, value in sd.items():
        if key == "language_model.model.shared.weight":
            continue
        try:
            mapped[Florence2.map_name(key)] = value
        except KeyError:
            unknown.append(key)
    expected = model.state_dict()
    missing = [k for k in expected if k not in mapped]
    unused = unknown + [k for k in mapped if k not in expected]
    if missing:
        raise ExportError(f"{folder}: the checkpoint lacks {len(missing)} weights, e.g. "
                          + ", ".join(missing[:3]) + " (is this a Florence-2 checkpoint?)")
    layered = [k for k in unused if LAYER_NAME.search(k)]
    if layered:
        # More layers than config.json describes: a package of the config's layers would
        # silently drop some of the model.
        raise ExportError(f"{folder}: the checkpoint has weights of layers config.json does "
                          f"not describe, e.g. {', '.join(layered[:3])}; config.json says "
                          f"{supported.describe(supported.layer_layout(config))}")
    if unused:
        progress(9, f"ignoring {len(unused)} tensors Florence-2 does not use, e.g. "
                 + ", ".join(unused[:3]))
    mapped = {k: v for k, v in mapped.items() if k in expected}
    for k, v in mapped.items():
        if expected[k].shape != v.shape:
            raise ExportError(f"{folder}: weight {k} has shape {list(v.shape)}, config.json "
                              f"implies {list(expected[k].shape)}")
    model.load_state_dict(mapped, strict=True)
    if torch.equal(model.dec.lm_head.weight, model.dec.decoder.embed_tokens.weight):
        model.tie_weights()
    if torch.equal(model.text.encoder.embed_tokens.weight, model.dec.decoder.embed_tokens.weight):
        # The published checkpoints have one token embedding for encoder, decoder and LM head.
        model.tie_encoder_embedding()
    return model, config, found


def tokenizer_files(source_folder: str) -> dict:
    """vocab.json and merges.txt (file name to bytes); merges come from tokenizer.json when
    merges.txt is absent. Read before the minutes of scripting, so a bad file fails at once."""
    res = resources_dir()
    vocab = os.path.join(source_folder, "vocab.json") if source_folder else ""
    # lexists: a link to a device, or a link loop, is the folder's file and refused rather
    # than replaced by the bundled one without a word.
    out = {"vocab.json": read_file(vocab if vocab and os.path.lexists(vocab)
                                   else os.path.join(res, "vocab.json"))}
    merges = os.path.join(source_folder, "merges.txt") if source_folder else ""
    tok_json = os.path.join(source_folder, "tokenizer.json") if source_folder else ""
    if merges and os.path.lexists(merges):
        out["merges.txt"] = read_file(merges)
    elif tok_json and os.path.lexists(tok_json):
        tok = read_json(tok_json)
        model = tok.get("model", {}) if isinstance(tok, dict) else {}
        rules = model.get("merges") if isinstance(model, dict) else None
        if not rules or not isinstance(rules, list):
            raise ExportError(f"{tok_json} has no BPE merges")
        lines = ["#version: 0.2\n"]
        lines += [(" ".join(rule) if isinstance(rule, list) else str(rule)) + "\n"
                  for rule in rules]
        out["merges.txt"] = "".join(lines).encode("utf-8")
    else:
        out["merges.txt"] = read_file(os.path.join(res, "merges.txt"))
    return out


def write_tokenizer_files(tokenizer: dict, out: str) -> None:
    for name, data in tokenizer.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


def read_file(path: str) -> bytes:
    try:
        return files.read_bytes(path, files.MAX_TOKENIZER_BYTES)
    except files.FileError as e:
        raise ExportError(str(e)) from None


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify(eager: Florence2, vision, text, decoder, size) -> dict:
    """Runs the scripted modules against the eager ones on a fixed input; raises if they differ."""
    gen = torch.Generator().manual_seed(0)
    pixels = torch.randn(1, 3, size["height"], size["width"], generator=gen)
    ids = torch.tensor([[0, 2264, 473, 5, 2274, 6190, 116, 2]])
    mask = torch.ones_like(ids)
    report = {}
    with torch.no_grad():
        f_e = eager.vision(pixels)
        f_s = vision(pixels)
        h_e = eager.text(f_e, ids, mask)
        h_s = text(f_s, ids, mask)
        enc_mask = torch.ones(1, h_e.shape[1], dtype=torch.long)
        dec_ids = torch.tensor([[2, 0, 100, 200, 300, 50300]])
        l_e = eager.dec.forward_full(dec_ids, h_e, enc_mask, False)
        l_s = decoder.forward_full(dec_ids, h_s, enc_mask, False)
        # The cached path, one token at a time, must give the same logits as the full pass.
        cache = decoder.new_cache(1, 8)
        cross = decoder.cross_kv(h_s)
        steps = []
        for t in range(dec_ids.shape[1]):
            logits, cache = decoder.step(dec_ids[:, t:t + 1], t, cache, cross, enc_mask)
            steps.append(logits)
        l_c = torch.stack(steps, dim=1)
    for name, a, b in (("image features", f_e, f_s), ("encoder", h_e, h_s),
                       ("decoder logits", l_e, l_s), ("cached decoder logits", l_e, l_c)):
        diff = (a - b).abs().max().item()
        scale = max(1.0, a.abs().max().item())
        report[name] = diff
        if not diff <= 1e-4 * scale:
            raise ExportError(f"scripted {name} differ from the eager model by {diff:.3g}")
    return report


def shared_parameters(model: Florence2) -> list:
    """Tensors the text encoder shares with the decoder: saved once, in decoder.pt."""
    if model.text.encoder.embed_tokens.weight is not model.dec.decoder.embed_tokens.weight:
        return []
    return [{"module": "text_encoder", "name": "encoder.embed_tokens.weight",
             "from_module": "decoder", "from_name": "decoder.embed_tokens.weight"}]


def check_shared(folder: str, model: Florence2, shared: list, storage: str) -> None:
    """Loads the written modules like the engine does and checks every shared tensor is back."""
    if not shared:
        return
    dtype = torch.float16 if storage == "float16" else torch.float32
    modules = {role: torch.jit.load(os.path.join(folder, fname)).float().eval()
               for role, fname in (("text_encoder", "text_encoder.pt"), ("decoder", "decoder.pt"))}
    package.restore_shared(modules, shared)
    eager = {"text_encoder": model.text, "decoder": model.dec}
    for entry in shared:
        got = package.get_parameter(modules[entry["module"]], entry["name"])
        want = package.get_parameter(eager[entry["module"]], entry["name"]).detach()
        if not torch.equal(got, want.to(dtype).float()):
            raise ExportError(f"{entry['name']} of {entry['module']} does not load back as "
                              f"{entry['from_name']} of {entry['from_module']}")
    with torch.no_grad():
        ids = torch.tensor([[0, 2264, 473, 5, 2274, 6190, 116, 2]])
        d = model.text.encoder.embed_tokens.weight.shape[1]
        h = modules["text_encoder"](torch.zeros(1, 1, d), ids, torch.ones_like(ids))
    if not bool(torch.isfinite(h).all()):
        raise ExportError("the text encoder with its shared embedding gives non-finite values")


def preprocessor(source_folder: str) -> dict:
    """The folder's preprocessor_config.json, else the published one."""
    path = os.path.join(source_folder, "preprocessor_config.json") if source_folder else ""
    pre = read_json(path) if path and os.path.lexists(path) else {}
    if not isinstance(pre, dict):
        raise ExportError(f"{path} is not a JSON object")
    size = pre.get("size", {"height": 768, "width": 768})
    if size.get("height", 0) % 32 or size.get("width", 0) % 32 or size.get("height") != size.get("width"):
        raise ExportError(f"{path}: image size {size} must be square and a multiple of 32")
    pre["size"] = size
    return pre


def export(model: Florence2, config: dict, out: str, source_folder: str, name: str,
           source: str, storage: str = "float32") -> dict:
    model.eval()
    pre = preprocessor(source_folder)
    tokenizer = tokenizer_files(source_folder)
    extra_tasks, notes = tasks.folder_tasks(source_folder) if source_folder else ([], [])
    for note in notes:
        progress(25, note)
    if extra_tasks:
        progress(25, "the checkpoint's own tasks: "
                 + ", ".join(t["token"] for t in extra_tasks))
    progress(30, "scripting modules")
    with torch.no_grad():
        vision = torch.jit.script(model.vision)
        text = torch.jit.script(model.text)
        decoder = torch.jit.script(model.dec)
    progress(50, "checking scripted against eager")
    report = verify(model, vision, text, decoder, pre["size"])
    if storage == "float16":
        # Half the size on disk; the engine turns the weights back to float32 when it loads
        # them, so computation is unchanged apart from the rounding of the weights.
        vision.half()
        text.half()
        decoder.half()
    shared = shared_parameters(model)
    for entry in shared:
        # Stored once, in the module it comes from; the loader puts it back (the token
        # embedding: 13 MB of the demo package, 79 MB of Florence-2-base in float32).
        value = package.get_parameter(text, entry["name"])
        package.set_parameter(text, entry["name"], value.new_empty((0,) + tuple(value.shape[1:])))

    tmp = start_package(out)
    try:
        progress(60, "writing modules")
        vision.save(os.path.join(tmp, "vision.pt"))
        text.save(os.path.join(tmp, "text_encoder.pt"))
        decoder.save(os.path.join(tmp, "decoder.pt"))
        progress(85, "writing tokenizer and manifest")
        check_shared(tmp, model, shared, storage)
        write_tokenizer_files(tokenizer, tmp)
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(config, f, indent=2)
        write_manifest(tmp, model, config, pre, name, source, report, storage, shared,
                       extra_tasks)
        put_in_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    progress(100, "done")
    return report


def write_manifest(folder: str, model: Florence2, config: dict, pre: dict, name: str,
                   source: str, report: dict, storage: str, shared: list = (),
                   extra_tasks: list = ()) -> None:
    tc = config["text_config"]
    size = pre["size"]
    files = {}
    for role, fname in (("vision", "vision.pt"), ("text_encoder", "text_encoder.pt"),
                        ("decoder", "decoder.pt"), ("vocab", "vocab.json"),
                        ("merges", "merges.txt"), ("config", "config.json")):
        path = os.path.join(folder, fname)
        files[role] = {"name": fname, "size": os.path.getsize(path), "sha256": sha256(path)}
    params = sum(p.numel() for p in model.parameters())
    manifest = {
        "format_version": SHARED_FORMAT_VERSION if shared else FORMAT_VERSION,
        "name": name,
        "source": source,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch_version": torch.__version__,
        "precision": "float32",
        "storage": storage,
        "parameters": params,
        "dimensions": {
            "d_model": tc["d_model"],
            "encoder_layers": tc["encoder_layers"],
            "decoder_layers": tc["decoder_layers"],
            "encoder_heads": tc["encoder_attention_heads"],
            "decoder_heads": tc["decoder_attention_heads"],
            "vocab_size": tc["vocab_size"],
            "max_positions": tc["max_position_embeddings"],
            "image_tokens": 1 + (size["height"] // 32) * (size["width"] // 32),
            "vision_dims": config["vision_config"]["dim_embed"],
        },
        "image": {
            "width": size["width"],
            "height": size["height"],
            "mean": pre.get("image_mean", [0.485, 0.456, 0.406]),
            "std": pre.get("image_std", [0.229, 0.224, 0.225]),
            "resample": "bicubic",
        },
        "tokens": {
            "bos": tc.get("bos_token_id", 0),
            "pad": tc.get("pad_token_id", 1),
            "eos": tc.get("eos_token_id", 2),
            "decoder_start": tc.get("decoder_start_token_id", 2),
            "forced_bos": tc.get("forced_bos_token_id", 0),
            "forced_eos": tc.get("forced_eos_token_id", 2),
        },
        "generation": {
            "num_beams": tc.get("num_beams", 3),
            "no_repeat_ngram_size": tc.get("no_repeat_ngram_size", 3),
            "length_penalty": tc.get("length_penalty", 1.0),
            "early_stopping": bool(tc.get("early_stopping", True)),
            "max_new_tokens": 1024,
        },
        "export_check": report,
        "files": files,
    }
    if shared:
        manifest["shared_parameters"] = list(shared)
    # What the checkpoint says of itself for people (the bundled demo's config has it); a
    # checkpoint without it was trained for Florence-2's tasks, which the manifest leaves unsaid.
    about = config.get("florence_studio")
    if isinstance(about, dict):
        if isinstance(about.get("trained_tasks"), list):
            manifest["trained_tasks"] = [str(t) for t in about["trained_tasks"]][:64]
        if isinstance(about.get("purpose"), str):
            manifest["purpose"] = about["purpose"][:400]
    if extra_tasks:
        # A fine-tune's own tasks, beside the standard 15 (florence2/tasks.py).
        manifest["tasks"] = list(extra_tasks)
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="florence2_export",
        description="Export Florence-2 as a TorchScript model package for Florence Studio.")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--hf", metavar="DIR", help="a Hugging Face Florence-2 folder")
    src.add_argument("--random-init", choices=sorted(RANDOM_CONFIGS),
                     help="seeded random weights at this size")
    src.add_argument("--architecture", choices=sorted(RANDOM_CONFIGS),
                     help="this size's architecture without weight data: the engine generates "
                          "seeded random weights when it loads the package (a speed demo)")
    parser.add_argument("--out", required=True, metavar="PKG", help="package folder to write")
    parser.add_argument("--seed", type=int, default=1234, help="seed for --random-init")
    parser.add_argument("--storage", choices=["float32", "float16"], default="float32",
                        help="how weights are stored in the package (float16 halves its size)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: all cores)")
    parser.add_argument("--ops-library", metavar="PATH",
                        help="Florence Studio's operator library, which the exported model calls "
                             f"(default: ${ops.ENV}, else lib/florence-studio/ops/{ops.NAME} "
                             "next to these tools' share/ folder)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads or os.cpu_count() or 1)

    def terminated(signum, frame):
        # SIGTERM (a cancelled import) unwinds like an exception, so the temporary folder is
        # removed on the way out.
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminated)
    try:
        check_out(args.out)  # before the minutes of work, not only at the end
        ops.load_library(args.ops_library)  # before scripting: the model calls its operators
        if args.architecture:
            config = read_json(os.path.join(resources_dir(), RANDOM_CONFIGS[args.architecture]))
            export_architecture(config, args.out, args.architecture, args.seed)
            print(f"wrote {args.out} (architecture of {args.architecture}, no weights)",
                  file=sys.stderr)
            return 0
        if args.hf:
            folder = os.path.abspath(args.hf)
            model, config, found = load_hf_model(folder)
            base = display_name(folder)
            report = export(model, config, args.out, folder, base,
                            f"Hugging Face folder {folder} ({found})", args.storage)
        else:
            config = read_json(os.path.join(resources_dir(), RANDOM_CONFIGS[args.random_init]))
            progress(5, "initializing random weights")
            torch.manual_seed(args.seed)
            model = Florence2(config).eval()
            random_state(model, args.seed)
            # One token embedding for text encoder, decoder and LM head, as in the published
            # checkpoints, so the package stores and loads it once like theirs. Tied after the
            # random draw: every other weight is the same as before for the same seed.
            model.tie_weights()
            model.tie_encoder_embedding()
            config = dict(config, florence_studio={
                "trained_tasks": [],
                "purpose": "Random weights: runs the whole pipeline, but answers are noise."})
            report = export(model, config, args.out, "",
                            f"florence2-{args.random_init} (random weights, seed {args.seed})",
                            f"random init, seed {args.seed}", args.storage)
    except (ExportError, files.FileError, ops.OpsLibraryError) as e:
        print(f"florence2_export: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # in words, naming the file: not "[Errno 40] ..."
        print(f"florence2_export: error: {files.os_error_message(e.filename or args.out, e)}",
              file=sys.stderr)
        return 1
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        # A config or checkpoint of an unexpected layout: say so in words, not a bare name.
        what = args.hf or "the configuration"
        print(f"florence2_export: error: {what}: unexpected content in config.json or the "
              f"checkpoint ({type(e).__name__}: {str(e)[:200]}); is this a Florence-2 "
              "checkpoint folder?", file=sys.stderr)
        return 1
    checks = ", ".join(f"{k} {v:.1e}" for k, v in report.items())
    print(f"wrote {args.out} (scripted vs eager max diff: {checks})", file=sys.stderr)
    return 0
