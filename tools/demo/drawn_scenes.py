"""Scenes drawn the way a user might draw them, by code that shares nothing with the training
generator: the evaluation's second renderer (issue "The bundled model on scenes a user draws").

    /usr/bin/python3 tools/demo/drawn_scenes.py --out /tmp/drawn --n 200 --seed 7001
    /usr/bin/python3 tools/demo/evaluate.py --package PKG --data /tmp/drawn

Same vocabulary as the model's (4 shapes, 8 colour names, the word list of scenes.py), drawn with
OpenCV instead of PIL: canvases of any aspect ratio from 1:2 to 2:1 on white, near-white, black,
plain, gradient, noisy or cluttered backgrounds; shapes filled, outlined or filled with a border,
rotated, triangles of any proportions, colours a little off the palette; text in font families
the training generator never uses (URW base35, Noto, OpenCV's Hershey faces), slightly rotated;
then JPEG compression, blur, noise or downscaling. Writes the images and ground_truth.json in the
form tools/demo/evaluate.py reads (boxes in pixels of each image, objects left to right).

Needs python3-opencv, python3-numpy, fonts-urw-base35 and fonts-noto-core (Debian packages).
"""
import argparse
import json
import math
import os
import random
import re
import sys

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# Only the vocabulary and the answer wording come from the training side: the words, colour names
# and caption grammar are what the model answers in; none of its drawing code is used.
from scenes import SHAPES, WORDS, caption  # noqa: E402

# Colour names with the RGB a person picking "red" in a paint program might get; each scene
# moves them a little.
PALETTE = {
    "red": (230, 25, 30), "green": (20, 160, 60), "blue": (30, 60, 230),
    "yellow": (250, 220, 20), "orange": (255, 140, 0), "purple": (140, 40, 180),
    "black": (0, 0, 0), "white": (255, 255, 255),
}
# Font families held out of training (tools/demo/README.md lists the split).
FONT_FILES = [
    "/usr/share/fonts/opentype/urw-base35/NimbusSans-Bold.otf",
    "/usr/share/fonts/opentype/urw-base35/NimbusSans-Regular.otf",
    "/usr/share/fonts/opentype/urw-base35/NimbusSansNarrow-Bold.otf",
    "/usr/share/fonts/opentype/urw-base35/NimbusRoman-Bold.otf",
    "/usr/share/fonts/opentype/urw-base35/NimbusMonoPS-Bold.otf",
    "/usr/share/fonts/opentype/urw-base35/URWGothic-Demi.otf",
    "/usr/share/fonts/opentype/urw-base35/C059-Bold.otf",
    "/usr/share/fonts/opentype/urw-base35/P052-Bold.otf",
    "/usr/share/fonts/truetype/noto/NotoSans-Bold.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/truetype/noto/NotoSerif-Bold.ttf",
]
HERSHEY = [cv2.FONT_HERSHEY_SIMPLEX, cv2.FONT_HERSHEY_DUPLEX, cv2.FONT_HERSHEY_TRIPLEX,
           cv2.FONT_HERSHEY_COMPLEX]
_freetype = {}


def rgb_distance(a, b):
    return float(np.linalg.norm(np.asarray(a, float) - np.asarray(b, float)))


# ---- backgrounds -------------------------------------------------------------------------------

def background(rng, w, h):
    """(image RGB uint8, kind)."""
    kind = rng.choices(["white", "near-white", "black", "plain", "gradient", "noise", "clutter"],
                       [25, 10, 10, 20, 15, 10, 10])[0]
    if kind == "white":
        return np.full((h, w, 3), 255, np.uint8), kind
    if kind == "near-white":
        return np.full((h, w, 3), [rng.randint(232, 255) for _ in range(3)], np.uint8), kind
    if kind == "black":
        return np.full((h, w, 3), [rng.randint(0, 28) for _ in range(3)], np.uint8), kind
    base = np.array([rng.randint(0, 255) for _ in range(3)], float)
    if kind == "plain":
        return np.full((h, w, 3), base, np.uint8), kind
    if kind == "gradient":
        other = np.array([rng.randint(0, 255) for _ in range(3)], float)
        angle = rng.uniform(0, 2 * math.pi)
        ys, xs = np.mgrid[0:h, 0:w].astype(float)
        t = xs * math.cos(angle) / w + ys * math.sin(angle) / h
        t = (t - t.min()) / max(1e-6, t.max() - t.min())
        img = base[None, None, :] * (1 - t[..., None]) + other[None, None, :] * t[..., None]
        return img.clip(0, 255).astype(np.uint8), kind
    if kind == "noise":
        nrng = np.random.default_rng(rng.randint(0, 1 << 30))
        img = base[None, None, :] + nrng.normal(0, rng.uniform(8, 28), (h, w, 3))
        return img.clip(0, 255).astype(np.uint8), kind
    img = np.full((h, w, 3), base, np.uint8)
    for _ in range(rng.randint(10, 30)):  # clutter: faint strokes and blobs near the base colour
        col = tuple(int(np.clip(v + rng.randint(-45, 45), 0, 255)) for v in base)
        if rng.random() < 0.5:
            p1 = (rng.randint(0, w), rng.randint(0, h))
            p2 = (rng.randint(0, w), rng.randint(0, h))
            cv2.line(img, p1, p2, col, rng.randint(1, 4), cv2.LINE_AA)
        else:
            c = (rng.randint(0, w), rng.randint(0, h))
            axes = (rng.randint(4, w // 6 + 5), rng.randint(4, h // 6 + 5))
            cv2.ellipse(img, c, axes, rng.uniform(0, 180), 0, 360, col, -1, cv2.LINE_AA)
    return img, kind


# ---- shapes ------------------------------------------------------------------------------------

def rotate(points, angle, cx, cy):
    c, s = math.cos(angle), math.sin(angle)
    return [(cx + (x - cx) * c - (y - cy) * s, cy + (x - cx) * s + (y - cy) * c) for x, y in points]


def outline_points(kind, cx, cy, size, rng):
    """Polygon in pixels (None for a circle), sized so its extent is about `size`."""
    r = size / 2
    if kind == "circle":
        return None
    if kind == "square":
        pts = [(cx - r, cy - r), (cx + r, cy - r), (cx + r, cy + r), (cx - r, cy + r)]
        return rotate(pts, rng.uniform(0, math.pi / 2), cx, cy)
    if kind == "triangle":
        # any proportions: base and height within 1:0.55..1:1.3, apex anywhere over the middle
        base = size * rng.uniform(0.8, 1.0)
        height = base * rng.uniform(0.55, 1.3)
        apex = rng.uniform(-0.3, 0.3) * base
        pts = [(cx + apex, cy - height / 2), (cx + base / 2, cy + height / 2),
               (cx - base / 2, cy + height / 2)]
        return rotate(pts, rng.uniform(0, 2 * math.pi), cx, cy)
    inner = rng.uniform(0.38, 0.5)
    pts = []
    for k in range(10):
        a = -math.pi / 2 + k * math.pi / 5
        rr = r if k % 2 == 0 else r * inner
        pts.append((cx + rr * math.cos(a), cy + rr * math.sin(a)))
    return rotate(pts, rng.uniform(0, 2 * math.pi / 5), cx, cy)


def shape_box(kind, pts, cx, cy, size):
    if pts is None:
        return [cx - size / 2, cy - size / 2, cx + size / 2, cy + size / 2]
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    return [min(xs), min(ys), max(xs), max(ys)]


def overlaps(a, b, margin):
    return not (a[2] + margin <= b[0] or b[2] + margin <= a[0] or a[3] + margin <= b[1] or
                b[3] + margin <= a[1])


def draw_shape(img, kind, pts, cx, cy, size, color, style, stroke, border):
    to_int = lambda p: np.array([[int(round(x * 16)), int(round(y * 16))] for x, y in p], np.int32)
    if kind == "circle":
        centre = (int(round(cx * 16)), int(round(cy * 16)))
        radius = int(round(size / 2 * 16))
        if style in ("filled", "bordered"):
            cv2.circle(img, centre, radius, color, -1, cv2.LINE_AA, 4)
        if style == "outlined":
            # the stroke lies inside the circle, so the box stays the circle's
            cv2.circle(img, centre, radius - stroke * 8, color, stroke, cv2.LINE_AA, 4)
        if style == "bordered":
            cv2.circle(img, centre, radius - stroke * 8, border, stroke, cv2.LINE_AA, 4)
        return
    poly = to_int(pts)
    if style in ("filled", "bordered"):
        cv2.fillPoly(img, [poly], color, cv2.LINE_AA, 4)
    if style in ("outlined", "bordered"):
        # Polylines centre the stroke on the outline: half of it lies outside the exact polygon,
        # within the stroke's width of the box (the box below is grown by that half).
        cv2.polylines(img, [poly], True, color if style == "outlined" else border, stroke,
                      cv2.LINE_AA, 4)


# ---- text --------------------------------------------------------------------------------------

def text_layer(rng, word, height_px):
    """(mask float [0,1] of the word's ink, cropped tightly) in a random held-out face."""
    height_px = int(round(height_px))
    pad = height_px
    if rng.random() < 0.25:
        face = rng.choice(HERSHEY)
        thickness = max(1, int(height_px / rng.uniform(7, 12)))
        scale = cv2.getFontScaleFromHeight(face, int(height_px), thickness)
        (tw, th), base = cv2.getTextSize(word, face, scale, thickness)
        canvas = np.zeros((th + base + 2 * pad, tw + 2 * pad), np.uint8)
        cv2.putText(canvas, word, (pad, pad + th), face, scale, 255, thickness, cv2.LINE_AA)
    else:
        path = rng.choice(FONT_FILES)
        if path not in _freetype:
            ft = cv2.freetype.createFreeType2()
            ft.loadFontData(path, 0)
            _freetype[path] = ft
        ft = _freetype[path]
        (tw, th), base = ft.getTextSize(word, int(height_px), -1)
        canvas = np.zeros((th + base + 2 * pad, tw + 2 * pad, 3), np.uint8)  # FreeType wants 3
        ft.putText(canvas, word, (pad, pad), int(height_px), (255, 255, 255), -1, cv2.LINE_AA,
                   False)
        canvas = np.ascontiguousarray(canvas[..., 0])
    angle = rng.uniform(-8, 8)
    h, w = canvas.shape
    m = cv2.getRotationMatrix2D((w / 2, h / 2), angle, 1.0)
    canvas = cv2.warpAffine(canvas, m, (w, h), flags=cv2.INTER_LINEAR)
    ys, xs = np.nonzero(canvas > 40)
    if len(xs) == 0:
        return None
    return canvas[ys.min():ys.max() + 1, xs.min():xs.max() + 1].astype(np.float32) / 255.0


def contrasting(rng, under):
    """A text colour a person would pick on this background: dark on light, light on dark, or a
    saturated colour far from it."""
    lum = 0.3 * under[0] + 0.59 * under[1] + 0.11 * under[2]
    for _ in range(50):
        if rng.random() < 0.7:
            v = rng.randint(0, 60) if lum > 128 else rng.randint(200, 255)
            col = (v, v, v)
        else:
            col = tuple(rng.randint(0, 255) for _ in range(3))
        if rgb_distance(col, under) > 150:
            return col
    return (0, 0, 0) if lum > 128 else (255, 255, 255)


# ---- scene -------------------------------------------------------------------------------------

def mean_under(img, box):
    x1, y1, x2, y2 = [int(round(v)) for v in box]
    h, w = img.shape[:2]
    region = img[max(0, y1):min(h, y2 + 1), max(0, x1):min(w, x2 + 1)]
    return region.reshape(-1, 3).mean(0) if region.size else img.reshape(-1, 3).mean(0)


def place_shapes(rng, img, w, h):
    n = rng.randint(1, 4)
    kinds = rng.sample(SHAPES, n)
    names = list(PALETTE)
    rng.shuffle(names)
    short = min(w, h)
    objects, boxes = [], []
    for kind in kinds:
        for _ in range(300):
            size = short * rng.uniform(0.12, 0.4)
            cx = rng.uniform(size * 0.65, w - size * 0.65)
            cy = rng.uniform(size * 0.65, h - size * 0.65)
            pts = outline_points(kind, cx, cy, size, rng)
            box = shape_box(kind, pts, cx, cy, size)
            if box[0] < 1 or box[1] < 1 or box[2] > w - 2 or box[3] > h - 2:
                continue
            if any(overlaps(box, b, short * 0.03) for b in boxes):
                continue
            under = mean_under(img, box)
            # a colour not used yet in the scene that stands out from what is under it
            choices = [c for c in names if c not in {o["color"] for o in objects} and
                       rgb_distance(PALETTE[c], under) > 110]
            if not choices:
                continue
            color = choices[0]
            names.remove(color)
            names.append(color)
            objects.append({"shape": kind, "color": color, "pts": pts, "cx": cx, "cy": cy,
                            "size": size, "box": box, "under": under.tolist()})
            boxes.append(box)
            break
    return objects, boxes


def draw_objects(rng, img, objects):
    for o in objects:
        base = PALETTE[o["color"]]
        col = tuple(int(np.clip(v + rng.randint(-14, 14), 0, 255)) for v in base)
        style = rng.choices(["filled", "outlined", "bordered"], [50, 25, 25])[0]
        if o["color"] in ("black", "white") and style == "bordered":
            style = "filled"
        stroke = max(2, int(round(o["size"] * rng.uniform(0.04, 0.12))))
        lum = 0.3 * col[0] + 0.59 * col[1] + 0.11 * col[2]
        border = (0, 0, 0) if lum > 90 and rgb_distance((0, 0, 0), o["under"]) > 90 else (
            (255, 255, 255) if rgb_distance((255, 255, 255), o["under"]) > 90 else (0, 0, 0))
        draw_shape(img, o["shape"], o["pts"], o["cx"], o["cy"], o["size"], col, style, stroke,
                   border)
        if style != "filled" and o["pts"] is not None:
            half = stroke / 2
            o["box"] = [o["box"][0] - half, o["box"][1] - half, o["box"][2] + half,
                        o["box"][3] + half]
        o["style"] = style


def place_text(rng, img, boxes, w, h):
    word = rng.choice(WORDS)
    short = min(w, h)
    for _ in range(100):
        mask = text_layer(rng, word, short * rng.uniform(0.09, 0.16))
        if mask is None:
            continue
        th, tw = mask.shape
        if tw > w * 0.9 or th > h * 0.5:
            continue
        x = rng.randint(int(w * 0.03), int(w * 0.97) - tw)
        y = rng.randint(int(h * 0.03), int(h * 0.97) - th)
        box = [x, y, x + tw - 1, y + th - 1]
        if any(overlaps(box, b, short * 0.03) for b in boxes):
            continue
        col = np.array(contrasting(rng, mean_under(img, box)), np.float32)
        region = img[y:y + th, x:x + tw].astype(np.float32)
        img[y:y + th, x:x + tw] = (region * (1 - mask[..., None]) +
                                   col[None, None, :] * mask[..., None]).round().astype(np.uint8)
        return {"text": word, "quad": [x, y, x + tw, y, x + tw, y + th, x, y + th]}
    return None


def degrade(rng, img):
    """What photos and screenshots do to a drawing; returns (image, file extension)."""
    ext = ".png"
    if rng.random() < 0.15:  # downscaled and back
        h, w = img.shape[:2]
        f = rng.uniform(0.4, 0.7)
        small = cv2.resize(img, (max(8, int(w * f)), max(8, int(h * f))), interpolation=cv2.INTER_AREA)
        img = cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)
    if rng.random() < 0.2:
        img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.5, 1.4))
    if rng.random() < 0.15:
        nrng = np.random.default_rng(rng.randint(0, 1 << 30))
        img = (img.astype(np.float32) + nrng.normal(0, rng.uniform(3, 9), img.shape)).clip(
            0, 255).astype(np.uint8)
    if rng.random() < 0.3:
        ext = ".jpg"
    return img, ext


def make(rng):
    aspect = math.exp(rng.uniform(math.log(0.5), math.log(2.0)))  # width / height
    long_side = rng.randint(320, 800)
    w, h = (long_side, int(long_side / aspect)) if aspect >= 1 else (int(long_side * aspect), long_side)
    img, kind = background(rng, w, h)
    objects, boxes = place_shapes(rng, img, w, h)
    draw_objects(rng, img, objects)
    text = place_text(rng, img, boxes, w, h) if rng.random() < 0.5 else None
    img, ext = degrade(rng, img)
    objects.sort(key=lambda o: o["box"][0] + o["box"][2])
    gt = {"width": w, "height": h, "background": kind, "text": text,
          "objects": [{"shape": o["shape"], "color": o["color"], "style": o["style"],
                       "box": [round(v, 2) for v in o["box"]]} for o in objects]}
    gt["caption"] = caption({"shapes": gt["objects"]})
    gt["detailed_caption"] = None  # sizes and positions are the training generator's wording
    return img, ext, gt


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--seed", type=int, default=7001)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    # A set written here before (another --n or --seed) would leave its images beside the new
    # ground truth: remove what this script writes, nothing else.
    for old in os.listdir(args.out):
        if re.fullmatch(r"drawn_\d+\.(png|jpg)", old) or old == "ground_truth.json":
            os.remove(os.path.join(args.out, old))
    rng = random.Random(args.seed)
    scenes = []
    for i in range(args.n):
        img, ext, gt = make(rng)
        name = f"drawn_{i:04d}{ext}"
        bgr = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
        params = [cv2.IMWRITE_JPEG_QUALITY, rng.randint(35, 90)] if ext == ".jpg" else []
        cv2.imwrite(os.path.join(args.out, name), bgr, params)
        gt["file"] = name
        scenes.append(gt)
    with open(os.path.join(args.out, "ground_truth.json"), "w") as f:
        json.dump({"generator": "tools/demo/drawn_scenes.py", "seed": args.seed, "scenes": scenes},
                  f, indent=1)
    print(f"{len(scenes)} scenes in {args.out}")


if __name__ == "__main__":
    main()
