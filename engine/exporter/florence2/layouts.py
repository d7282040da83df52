"""The two checkpoint layouts Florence-2 is published in, and the one the exporter builds from.

- "original": Microsoft's remote-code folders (microsoft/Florence-2-*, most fine-tunes before
  2025): names vision_tower.*, image_projection, language_model.model.*, a config whose
  vision_config has dim_embed.
- "native": transformers' own Florence2ForConditionalGeneration (model_type florence2, the
  florence-community/* folders): names model.vision_tower.*, model.multi_modal_projector.*,
  model.language_model.*, lm_head.weight; image_projection stored as a Linear (transposed); no
  final_logits_bias; an <image> token appended to the vocabulary, which is then padded to a
  multiple of 64; a vision_config with embed_dim, max_temporal_embeddings and
  max_position_embeddings.

A native checkpoint is renamed into the original layout here, so one model builds both. The
rows of the token embedding from the <image> token on are dropped: the prompt tokenizer never
emits <image>, and a row that is only padding must never be generated.
"""
import re
from typing import Dict

import torch

ORIGINAL = "original"
NATIVE = "native"
DESCRIPTIONS = {
    ORIGINAL: "the original Florence-2 layout of Microsoft's remote-code checkpoints",
    NATIVE: "transformers' native Florence-2 layout of Florence2ForConditionalGeneration",
}
IMAGE_TOKEN_ID = 51289  # transformers' default for Florence-2; config.json may say otherwise


class LayoutError(Exception):
    """A folder whose layout is neither, or whose config and weights disagree on it."""


def layout_of_keys(keys) -> str:
    """The layout the tensor names are in, or "" when they are in neither."""
    native = original = 0
    for k in keys:
        if k.startswith(("model.vision_tower.", "model.multi_modal_projector.",
                         "model.language_model.")) or k == "lm_head.weight":
            native += 1
        elif k.startswith(("vision_tower.", "language_model.", "image_projection",
                           "image_proj_norm.", "image_pos_embed.", "visual_temporal_embed.")):
            original += 1
    if native and not original:
        return NATIVE
    if original and not native:
        return ORIGINAL
    return ""


def layout_of_config(config: dict) -> str:
    vc = config.get("vision_config") if isinstance(config, dict) else None
    if not isinstance(vc, dict):
        return ""
    if "dim_embed" in vc and vc.get("model_type") in (None, "davit"):
        return ORIGINAL
    if "embed_dim" in vc:
        return NATIVE
    return ""


def detect(by_config: str, keys, where: str) -> str:
    """The folder's layout, from its tensor names, checked against the one its config.json
    describes (layout_of_config)."""
    by_keys = layout_of_keys(keys)
    if not by_keys:
        raise LayoutError(f"{where}: its tensor names are in no Florence-2 layout this "
                          "importer knows (expected names under vision_tower. and "
                          "language_model. (original) or model.vision_tower. and "
                          "model.language_model. (transformers' native))")
    if by_config and by_config != by_keys:
        raise LayoutError(f"{where}: config.json describes {DESCRIPTIONS[by_config]} but the "
                          f"weights are in {DESCRIPTIONS[by_keys]}")
    return by_keys


def _first(d: dict, *names):
    for n in names:
        if d.get(n) is not None:
            return d[n]
    return None


def original_config(config: dict) -> dict:
    """The native config.json in the original's terms (the fields the exporter reads)."""
    out = dict(config)
    vc = dict(config["vision_config"])
    tc = dict(config["text_config"])
    vc["dim_embed"] = vc.get("embed_dim")
    vc["image_pos_embed"] = {"type": "learned_abs_2d", "max_pos_embeddings": _first(
        vc, "max_pos_embeddings", "max_position_embeddings")}
    vc["visual_temporal_embedding"] = {"type": "COSINE", "max_temporal_embeddings": _first(
        vc, "max_temporal_embeddings")}
    out["projection_dim"] = _first(vc, "projection_dim") or config.get("projection_dim")
    vc["projection_dim"] = out["projection_dim"]
    kept = kept_rows(config)
    if type(tc.get("vocab_size")) is int and type(kept) is int:
        tc["vocab_size"] = min(tc["vocab_size"], kept)
    out["text_config"], out["vision_config"] = tc, vc
    return out


def kept_rows(config: dict) -> int:
    """Token rows kept from a native checkpoint: those before the <image> token."""
    image = config.get("image_token_id", IMAGE_TOKEN_ID)
    return image if type(image) is int and image > 0 else IMAGE_TOKEN_ID


# native name (after "model.vision_tower.blocks.S.B.") -> original name, for both block kinds
_BLOCK = [
    (r"(spatial|channel)_block\.conv([12])\.(weight|bias)", r"\1_block.conv\2.fn.dw.\3"),
    (r"spatial_block\.norm1\.(weight|bias)", r"spatial_block.window_attn.norm.\1"),
    (r"channel_block\.norm1\.(weight|bias)", r"channel_block.channel_attn.norm.\1"),
    (r"spatial_block\.window_attn\.(qkv|proj)\.(weight|bias)",
     r"spatial_block.window_attn.fn.\1.\2"),
    (r"channel_block\.channel_attn\.(qkv|proj)\.(weight|bias)",
     r"channel_block.channel_attn.fn.\1.\2"),
    (r"(spatial|channel)_block\.norm2\.(weight|bias)", r"\1_block.ffn.norm.\2"),
    (r"(spatial|channel)_block\.ffn\.(fc[12])\.(weight|bias)", r"\1_block.ffn.fn.net.\2.\3"),
]
_PROJECTOR = {
    "image_projection.weight": "image_projection",
    "image_proj_norm.weight": "image_proj_norm.weight",
    "image_proj_norm.bias": "image_proj_norm.bias",
    "image_position_embed.row_embeddings.weight": "image_pos_embed.row_embeddings.weight",
    "image_position_embed.column_embeddings.weight": "image_pos_embed.column_embeddings.weight",
    "visual_temporal_embed.pos_idx_to_embed": "visual_temporal_embed.pos_idx_to_embed",
}
_TOKEN_ROWS = ("language_model.model.shared.weight",
               "language_model.model.encoder.embed_tokens.weight",
               "language_model.model.decoder.embed_tokens.weight", "language_model.lm_head.weight")


def original_name(name: str) -> str:
    """The original layout's name of a native tensor name; KeyError when it has none."""
    if name == "lm_head.weight":
        return "language_model.lm_head.weight"
    if name.startswith("model.language_model."):
        return "language_model.model." + name[len("model.language_model."):]
    if name.startswith("model.multi_modal_projector."):
        return _PROJECTOR[name[len("model.multi_modal_projector."):]]
    m = re.fullmatch(r"model\.vision_tower\.convs\.(\d+)\.(conv|norm)\.(weight|bias)", name)
    if m:
        part = "proj" if m.group(2) == "conv" else "norm"
        return f"vision_tower.convs.{m.group(1)}.{part}.{m.group(3)}"
    m = re.fullmatch(r"model\.vision_tower\.blocks\.(\d+)\.(\d+)\.(.+)", name)
    if m:
        for pattern, repl in _BLOCK:
            if re.fullmatch(pattern, m.group(3)):
                rest = re.sub(pattern, repl, m.group(3))
                return f"vision_tower.blocks.{m.group(1)}.{m.group(2)}.{rest}"
    raise KeyError(name)


def original_state_dict(sd: Dict[str, torch.Tensor], config: dict,
                        where: str) -> Dict[str, torch.Tensor]:
    """A native state dict renamed into the original layout, with the projection transposed
    back, the token rows from <image> on dropped and a zero final_logits_bias (the native model
    has none, which is what a zero bias computes). A name it cannot place is kept as it is, for
    the caller to judge with the others the model has no place for."""
    out = {}
    kept = kept_rows(config)
    for name, value in sd.items():
        try:
            new = original_name(name)
        except KeyError:
            out[name] = value
            continue
        if new == "image_projection":
            if value.dim() != 2:
                raise LayoutError(f"{where}: {name} has shape {list(value.shape)}, expected a "
                                  "matrix")
            value = value.t().contiguous()
        elif new in _TOKEN_ROWS:
            if value.dim() != 2 or value.shape[0] < kept:
                raise LayoutError(f"{where}: {name} has shape {list(value.shape)}, expected at "
                                  f"least {kept} token rows")
            value = value[:kept]
        out[new] = value
    width = next((out[n].shape[0] for n in _TOKEN_ROWS if n in out), kept)
    out["language_model.final_logits_bias"] = torch.zeros(1, width)
    return out
