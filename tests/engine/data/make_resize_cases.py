#!/usr/bin/python3
"""Generates the expected outputs of PIL's bicubic resize used by TestImageInput.

Run with an interpreter that has Pillow 9.x and numpy (Debian: /usr/bin/python3 with
python3-pil and python3-numpy):

    /usr/bin/python3 tests/engine/data/make_resize_cases.py

It writes, next to this script:
  resize_in_<name>.png              small synthetic source images (seeded, reproducible)
  resize_out_<name>_<w>x<h>.png     Image.resize((w, h), Image.BICUBIC) of that source
and prints FNV-1a-64 hashes of PIL's resize of the app's sample photos in resources/samples/ (too large to duplicate here),
which TestImageInput::resizeMatchesPilOnSamples hard-codes.

The sources are built to stress the resampler: uniform noise drives the bicubic overshoot into
both clip limits, hard edges and gradients look like real photographs, and the 1-pixel and
extreme-aspect images exercise the coefficient bounds at the borders.
"""
import os
import sys

import numpy as np
import PIL
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.join(HERE, "..", "..", "..", "resources", "samples")

# (source name, output sizes)
CASES = {
    "noise_64x48": [(17, 13), (97, 71), (64, 20), (33, 48), (1, 1), (640, 2), (7, 200)],
    "edges_61x47": [(23, 31), (122, 94), (60, 47), (61, 46)],
    "dot_1x1": [(5, 7)],
    "wide_200x3": [(31, 9), (3, 1)],
    "tall_5x300": [(2, 40), (11, 299)],
}

# (sample file, output sizes) hashed rather than stored
SAMPLE_CASES = [
    ("pier.png", (768, 768)),
    ("pier.png", (333, 777)),
    ("rocket.jpg", (768, 768)),
    ("camera.png", (768, 768)),
    ("coffee.png", (101, 1500)),
]


def make_source(name, rng):
    kind, size = name.split("_")
    w, h = (int(v) for v in size.split("x"))
    if kind == "noise" or kind == "wide" or kind == "tall":
        return rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    if kind == "dot":
        return np.array([[[200, 30, 90]]], dtype=np.uint8)
    # edges: gradient plus a bright rectangle on dark ground plus mild noise
    y, x = np.mgrid[0:h, 0:w]
    img = np.zeros((h, w, 3), dtype=np.float64)
    img[..., 0] = 255.0 * x / (w - 1)
    img[..., 1] = 255.0 * y / (h - 1)
    img[..., 2] = 40.0
    img[h // 4 : 3 * h // 4, w // 3 : 2 * w // 3] = [250, 250, 5]
    img += rng.normal(0, 6, img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    print("Pillow", PIL.__version__, file=sys.stderr)
    rng = np.random.default_rng(20240607)
    for name, sizes in CASES.items():
        src = Image.fromarray(make_source(name, rng), "RGB")
        src.save(os.path.join(HERE, f"resize_in_{name}.png"), optimize=True)
        for w, h in sizes:
            out = src.resize((w, h), Image.BICUBIC)
            out.save(os.path.join(HERE, f"resize_out_{name}_{w}x{h}.png"), optimize=True)
    for sample, (w, h) in SAMPLE_CASES:
        img = Image.open(os.path.join(SAMPLES, sample)).convert("RGB")
        out = np.asarray(img.resize((w, h), Image.BICUBIC), dtype=np.uint8)
        # FNV-1a-64 over the interleaved RGB bytes, row-major, as the test computes it
        print(f'{{"{sample}", {w}, {h}, 0x{fnv1a64(out.tobytes()):016x}ull}},')


if __name__ == "__main__":
    main()
