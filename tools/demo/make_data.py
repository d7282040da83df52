"""Writes the sample scenes for the app and the small regression test set, from held-out seeds.

    /usr/bin/python3 tools/demo/make_data.py

resources/samples/scenes/: 6 scenes at 512x512 (seed 3003), ground_truth.json next to them.
tests/engine/data/scenes/: 24 scenes at 256x256 (seed 2002), ground_truth.json next to them.
Training draws its scenes from random.Random(1), the evaluation set from seed 1001.
Ground truth is in pixels of the PNG; location tokens in the JSON are the bins a perfect
model would produce (1000 bins per axis of the PNG).
"""
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scenes  # noqa: E402

ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def write_set(folder, seed, count, size, want_text=None, textures=None):
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(seed)
    entries = []
    i = 0
    while len(entries) < count:
        sc = scenes.make_scene(rng)
        if textures and sc["background"]["texture"] not in textures:
            continue
        if want_text is not None and (sc["text"] is not None) != want_text[len(entries) % len(want_text)]:
            continue
        name = f"scene_{len(entries):02d}.png"
        scenes.render(sc, size).save(os.path.join(folder, name), optimize=True)
        gt = scenes.ground_truth(sc, size)
        gt["file"] = name
        gt["answers"] = {t: scenes.sample_task(sc, t, random.Random(0), size)[2]
                         for t in ("<CAPTION>", "<DETAILED_CAPTION>", "<OD>", "<OCR>",
                                   "<OCR_WITH_REGION>")}
        entries.append(gt)
        i += 1
    with open(os.path.join(folder, "ground_truth.json"), "w") as f:
        json.dump({"generator": "tools/demo/scenes.py", "seed": seed, "size": size,
                   "note": "boxes are x1,y1,x2,y2 in pixels; text quad is 8 coordinates; "
                           "answers are what a perfect model generates (Florence-2 formats)",
                   "scenes": entries}, f, indent=1)
    total = sum(os.path.getsize(os.path.join(folder, x)) for x in os.listdir(folder))
    print(f"{folder}: {len(entries)} scenes, {total} bytes")


if __name__ == "__main__":
    write_set(os.path.join(ROOT, "resources", "samples", "scenes"), 3003, 6, 512,
              want_text=[True, False, True])
    write_set(os.path.join(ROOT, "tests", "engine", "data", "scenes"), 2002, 24, 256,
              want_text=[True, False])
