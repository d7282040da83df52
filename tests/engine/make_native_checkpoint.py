#!/usr/bin/python3
"""Writes an original-layout Florence-2 folder in transformers' native layout, as transformers'
models/florence2/convert_florence2_original_pytorch_to_hf.py lays it out (written from that
published mapping, independently of the importer's own reverse mapping in
engine/exporter/florence2/layouts.py):

- vision_tower.convs.N.proj -> model.vision_tower.convs.N.conv; the blocks' conv1/conv2 lose
  ".fn.dw", window_attn/channel_attn ".fn", the attention norm becomes norm1, the ffn norm
  norm2, the ffn's ".fn.net." becomes ".";
- image_projection (a [dim, projection] parameter) -> the transposed weight of
  model.multi_modal_projector.image_projection; image_proj_norm, image_pos_embed (renamed
  image_position_embed) and visual_temporal_embed move under model.multi_modal_projector.;
- language_model.model.* -> model.language_model.*, language_model.lm_head -> lm_head; no
  final_logits_bias;
- an <image> token (id 51289) appended and the vocabulary padded to a multiple of 64 (51328).
  The appended rows are made to outscore every real token wherever the best one scores above
  zero, so a package that kept them would generate them;
- config.json: text_config (model_type bart, vocab_size 51328), vision_config (model_type
  florence_vision, embed_dim, max_temporal_embeddings, max_position_embeddings,
  projection_dim, the original keys kept as extra fields), image_token_id.

    /usr/bin/python3 tests/engine/make_native_checkpoint.py SRC DST [--dtype bfloat16]
        [--shards N] [--original DIR]

--original also writes DIR: the same weights (after the --dtype rounding) in the original
layout with a zero final_logits_bias, which is what the native model computes, for comparing
the two imports.
"""
import argparse
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "engine", "exporter"))

import torch  # noqa: E402

from florence2.checkpoint import write_safetensors  # noqa: E402

IMAGE_TOKEN = 51289
PADDED_VOCAB = 51328
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def native_name(name: str) -> str:
    if name == "language_model.lm_head.weight":
        return "lm_head.weight"
    if name.startswith("language_model.model."):
        return "model.language_model." + name[len("language_model.model."):]
    projector = {"image_projection": "image_projection.weight",
                 "image_pos_embed.row_embeddings.weight":
                     "image_position_embed.row_embeddings.weight",
                 "image_pos_embed.column_embeddings.weight":
                     "image_position_embed.column_embeddings.weight"}
    if name in projector:
        return "model.multi_modal_projector." + projector[name]
    if name.startswith(("image_proj_norm.", "visual_temporal_embed.")):
        return "model.multi_modal_projector." + name
    m = re.fullmatch(r"vision_tower\.convs\.(\d+)\.(proj|norm)\.(\w+)", name)
    if m:
        return (f"model.vision_tower.convs.{m[1]}."
                f"{'conv' if m[2] == 'proj' else 'norm'}.{m[3]}")
    m = re.fullmatch(r"vision_tower\.blocks\.(\d+\.\d+)\.(spatial|channel)_block\.(.+)", name)
    if not m:
        raise KeyError(name)
    attn = "window_attn" if m[2] == "spatial" else "channel_attn"
    rest = m[3]
    table = [(r"conv([12])\.fn\.dw\.(\w+)", r"conv\1.\2"),
             (attn + r"\.norm\.(\w+)", r"norm1.\1"),
             (attn + r"\.fn\.(qkv|proj)\.(\w+)", attn + r".\1.\2"),
             (r"ffn\.norm\.(\w+)", r"norm2.\1"),
             (r"ffn\.fn\.net\.(fc[12])\.(\w+)", r"ffn.\1.\2")]
    for pattern, repl in table:
        if re.fullmatch(pattern, rest):
            return f"model.vision_tower.blocks.{m[1]}.{m[2]}_block." + re.sub(pattern, repl, rest)
    raise KeyError(name)


def native_config(config: dict) -> dict:
    vc = dict(config["vision_config"])
    vc.update({"model_type": "florence_vision", "embed_dim": vc["dim_embed"],
               "max_temporal_embeddings":
                   vc["visual_temporal_embedding"]["max_temporal_embeddings"],
               "max_position_embeddings": vc["image_pos_embed"]["max_pos_embeddings"],
               "projection_dim": config["projection_dim"]})
    tc = dict(config["text_config"], model_type="bart", vocab_size=PADDED_VOCAB)
    out = {k: v for k, v in config.items() if k not in ("auto_map", "projection_dim")}
    out.update({"architectures": ["Florence2ForConditionalGeneration"], "model_type": "florence2",
                "image_token_id": IMAGE_TOKEN, "text_config": tc, "vision_config": vc})
    return out


def padded_embedding(emb: torch.Tensor, generated: list) -> torch.Tensor:
    """The embedding with rows up to PADDED_VOCAB, each a scaled copy of a token the original
    generates: wherever that token's logit is positive, its copy's is larger."""
    extra = PADDED_VOCAB - emb.shape[0]
    ids = [generated[i % len(generated)] for i in range(extra)]
    return torch.cat([emb, 4.0 * emb[ids]])


def write_sharded(folder: str, tensors: dict, shards: int) -> None:
    names = list(tensors)
    per = -(-len(names) // shards)
    weight_map, total = {}, 0
    for i in range(shards):
        fname = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[i * per:(i + 1) * per]}
        write_safetensors(os.path.join(folder, fname), part)
        weight_map.update({n: fname for n in part})
        total += sum(t.numel() * t.element_size() for t in part.values())
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


def copy_side_files(src: str, dst: str) -> None:
    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(src):
        if name not in ("pytorch_model.bin", "config.json") and not name.startswith("reference"):
            shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("src")
    parser.add_argument("dst")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    parser.add_argument("--shards", type=int, default=1)
    parser.add_argument("--original", metavar="DIR")
    args = parser.parse_args()
    with open(os.path.join(args.src, "config.json")) as f:
        config = json.load(f)
    sd = torch.load(os.path.join(args.src, "pytorch_model.bin"), map_location="cpu",
                    weights_only=True)
    dtype = DTYPES[args.dtype]
    sd = {k: v.to(dtype) if v.is_floating_point() else v for k, v in sd.items()}
    bias = "language_model.final_logits_bias"
    sd[bias] = torch.zeros_like(sd[bias])
    with open(os.path.join(args.src, "reference.json")) as f:
        tasks = json.load(f)["tasks"].values()
    generated = sorted({i for t in tasks for i in t["generated"]})

    native = {}
    tied = "lm_head.weight" if args.shards > 1 else "model.language_model.shared.weight"
    for name, value in sd.items():
        if name == "language_model.final_logits_bias":
            continue
        new = native_name(name)
        if new == "model.multi_modal_projector.image_projection.weight":
            value = value.t().contiguous()
        if new.endswith(("shared.weight", "embed_tokens.weight")) or new == "lm_head.weight":
            if new != tied:  # tied: stored once, as save_pretrained does
                continue
            value = padded_embedding(value, generated)
        native[new] = value
    copy_side_files(args.src, args.dst)
    with open(os.path.join(args.dst, "config.json"), "w") as f:
        json.dump(native_config(config), f, indent=2)
    if args.shards > 1:
        write_sharded(args.dst, native, args.shards)
    else:
        write_safetensors(os.path.join(args.dst, "model.safetensors"), native)
    if args.original:
        copy_side_files(args.src, args.original)
        shutil.copyfile(os.path.join(args.src, "config.json"),
                        os.path.join(args.original, "config.json"))
        write_safetensors(os.path.join(args.original, "model.safetensors"), sd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
