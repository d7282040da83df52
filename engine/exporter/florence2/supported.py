"""The architectures an import may produce, checked from config.json before any weight is read.

The engine runs only TorchScript code this exporter writes for a known model family
(engine/package/code-allowlist.txt, made by codehash.py from the families' configs). Scripting
unrolls every layer loop, so the code depends on the number of layers: a checkpoint with
another layer layout would give a package the engine refuses, after minutes of export. It is
refused here instead, saying what was found and what is supported. The table follows
codehash.FAMILIES; tests/engine/check_code_allowlist.py checks the two agree.
"""
from typing import Dict, Tuple

# family -> (vision depths per stage, encoder layers, decoder layers)
LAYER_LAYOUTS: Dict[str, Tuple[Tuple[int, ...], int, int]] = {
    "florence2-base": ((1, 1, 9, 1), 6, 6),
    "florence2-large": ((1, 1, 9, 1), 12, 12),
    "florence2-tiny": ((1, 1, 2, 1), 2, 2),
    "florence2-demo-shapes": ((1, 1, 2, 1), 3, 3),
}
NAMES = {"florence2-base": "Florence-2-base", "florence2-large": "Florence-2-large",
         "florence2-tiny": "the tiny test model", "florence2-demo-shapes": "the demo model"}
MODEL_TYPES = {"": ("florence2",), "text_config": (None, "florence2_language", "bart"),
               "vision_config": (None, "davit", "florence_vision")}
PATCH_PRENORM = [False, True, True, True]


class UnsupportedError(Exception):
    pass


def layer_layout(config: dict) -> Tuple[Tuple[int, ...], int, int]:
    tc, vc = config["text_config"], config["vision_config"]
    return tuple(vc["depths"]), tc["encoder_layers"], tc["decoder_layers"]


def describe(layout: Tuple[Tuple[int, ...], int, int]) -> str:
    depths, enc, dec = layout
    return (f"vision depths {list(depths)}, {enc} encoder and {dec} decoder layers")


def supported_list() -> str:
    return "; ".join(f"{NAMES[f]}: {describe(l)}" for f, l in LAYER_LAYOUTS.items())


def check_supported(config: dict, path: str) -> str:
    """The family a checked config belongs to; UnsupportedError naming what was found and what
    is supported when it belongs to none."""
    for section, allowed in MODEL_TYPES.items():
        part = config.get(section) if section else config
        found = part.get("model_type") if isinstance(part, dict) else None
        if found not in allowed:
            where = f"{section}.model_type" if section else "model_type"
            raise UnsupportedError(
                f"{path}: {where} is {found!r}; Florence Studio imports Florence-2 checkpoints "
                f"({where} " + " or ".join(repr(a) for a in allowed if a) + ")")
    prenorm = config["vision_config"].get("patch_prenorm", PATCH_PRENORM)
    if list(prenorm) != PATCH_PRENORM:
        raise UnsupportedError(f"{path}: vision_config.patch_prenorm is {prenorm!r}; every "
                               f"supported Florence-2 has {PATCH_PRENORM}")
    found = layer_layout(config)
    for family, layout in LAYER_LAYOUTS.items():
        if layout == found:
            return family
    raise UnsupportedError(f"{path}: an architecture Florence Studio cannot run ({describe(found)}"
                           f"); supported: {supported_list()}. Nothing was written.")
