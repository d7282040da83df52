"""The training generator widened to what users draw (issue "The bundled model on scenes a user
draws"): scenes.py's vocabulary, grammar and task samples, on canvases that scenes.py never makes.

- canvases of any aspect ratio from 1:2 to 2:1 (the model's preprocessing squashes them to its
  square input, as Florence-2's does), rendered at 256 to 640 pixels on the long side;
- backgrounds from pure white to black: plain (any colour), white and near-white, black and
  near-black, linear gradients, noise, stripes, checkers and clutter (faint strokes and blobs);
- shapes filled, outlined (stroke 3-14% of their size) or filled with a border, squares,
  triangles and stars at any rotation, triangles of any proportions, colours a little off the
  palette, sizes 8-42% of the short side, each shape's colour far from what lies under it;
- text in the training font families (DejaVu, Liberation, FreeFont: regular, bold, oblique,
  condensed, serif and mono faces; URW base35, Noto and OpenCV's Hershey faces are held out for
  the evaluation renderer, drawn_scenes.py), sizes 7-17% of the short side, any colour that
  stands out, rotated up to 10 degrees;
- then JPEG compression, blur, noise or downscaling.

A scene is the dict scenes.py uses (geometry in [0,1] units of each axis), plus "image": the
rendered PIL image at its own size, and the text's exact ink box measured on the rendering.
"""
import io
import math
import random

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

import scenes

TRAIN_FONTS = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans-BoldOblique.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSansCondensed-Bold.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSerif-Bold.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf",
    "/usr/share/fonts/truetype/liberation2/LiberationSans-Bold.ttf",
    "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/liberation2/LiberationSerif-Bold.ttf",
    "/usr/share/fonts/truetype/liberation2/LiberationMono-Bold.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSansBold.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSerifBold.ttf",
    "/usr/share/fonts/truetype/freefont/FreeMonoBold.ttf",
]
SUPERSAMPLE = 2  # shapes are drawn at twice the size and reduced: anti-aliased edges
_fonts = {}


# How often a shape is filled, outlined or filled with a border (runs 1-8: 50, 25, 25;
# train.py --style-weights sets others).
STYLE_WEIGHTS = (50, 25, 25)


def font(path, px):
    key = (path, px)
    if key not in _fonts:
        _fonts[key] = ImageFont.truetype(path, px)
    return _fonts[key]


def distance(a, b):
    return math.sqrt(sum((float(x) - float(y)) ** 2 for x, y in zip(a, b)))


def jitter(rgb, rng, amount):
    return tuple(max(0, min(255, int(v + rng.randint(-amount, amount)))) for v in rgb)


def background(rng, w, h):
    kind = rng.choices(["plain", "white", "near-white", "black", "gradient", "noise", "stripes",
                        "checker", "clutter"], [18, 16, 8, 8, 14, 10, 8, 8, 10])[0]
    if kind == "white":
        return Image.new("RGB", (w, h), (255, 255, 255)), kind
    if kind == "near-white":
        return Image.new("RGB", (w, h), tuple(rng.randint(228, 255) for _ in range(3))), kind
    if kind == "black":
        return Image.new("RGB", (w, h), tuple(rng.randint(0, 30) for _ in range(3))), kind
    c = tuple(rng.randint(0, 255) for _ in range(3))
    if kind == "gradient":
        d = tuple(rng.randint(0, 255) for _ in range(3))
        a = rng.uniform(0, 2 * math.pi)
        ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
        t = xs * math.cos(a) / w + ys * math.sin(a) / h
        t = (t - t.min()) / max(1e-6, float(t.max() - t.min()))
        arr = np.array(c, np.float32) * (1 - t[..., None]) + np.array(d, np.float32) * t[..., None]
        return Image.fromarray(arr.clip(0, 255).astype(np.uint8)), kind
    if kind == "noise":
        nr = np.random.default_rng(rng.randint(0, 1 << 30))
        arr = np.array(c, np.float32) + nr.standard_normal((h, w, 3), np.float32) * rng.uniform(
            6, 30)
        return Image.fromarray(arr.clip(0, 255).astype(np.uint8)), kind
    img = Image.new("RGB", (w, h), c)
    d = ImageDraw.Draw(img)
    alt = jitter(c, rng, 40)
    if kind == "stripes":
        step = rng.randint(max(2, w // 40), max(3, w // 8))
        for k in range(-h, w + h, step * 2):
            d.polygon([(k, 0), (k + step, 0), (k + step - h, h), (k - h, h)], fill=alt)
    elif kind == "checker":
        step = rng.randint(max(2, w // 30), max(3, w // 6))
        for y in range(0, h, step):
            for x in range(0, w, step):
                if (x // step + y // step) % 2:
                    d.rectangle([x, y, x + step - 1, y + step - 1], fill=alt)
    elif kind == "clutter":
        for _ in range(rng.randint(8, 30)):
            col = jitter(c, rng, 50)
            if rng.random() < 0.5:
                d.line([(rng.randint(0, w), rng.randint(0, h)), (rng.randint(0, w),
                        rng.randint(0, h))], fill=col, width=rng.randint(1, 4))
            else:
                x, y = rng.randint(0, w), rng.randint(0, h)
                rx, ry = rng.randint(3, w // 7 + 4), rng.randint(3, h // 7 + 4)
                d.ellipse([x - rx, y - ry, x + rx, y + ry], fill=col)
    return img, kind


def rotate(pts, a, cx, cy):
    c, s = math.cos(a), math.sin(a)
    return [(cx + (x - cx) * c - (y - cy) * s, cy + (x - cx) * s + (y - cy) * c) for x, y in pts]


def polygon(kind, cx, cy, size, rng):
    """Pixel polygon of a shape whose extent is about `size` (None: a circle)."""
    r = size / 2
    if kind == "circle":
        return None
    if kind == "square":
        pts = [(cx - r, cy - r), (cx + r, cy - r), (cx + r, cy + r), (cx - r, cy + r)]
        return rotate(pts, rng.uniform(0, math.pi / 2) if rng.random() < 0.7 else 0, cx, cy)
    if kind == "triangle":
        base = size * rng.uniform(0.75, 1.0)
        height = base * rng.uniform(0.5, 1.35)
        apex = rng.uniform(-0.35, 0.35) * base if rng.random() < 0.6 else 0.0
        pts = [(cx + apex, cy - height / 2), (cx + base / 2, cy + height / 2),
               (cx - base / 2, cy + height / 2)]
        return rotate(pts, rng.uniform(0, 2 * math.pi) if rng.random() < 0.7 else 0, cx, cy)
    inner = rng.uniform(0.36, 0.52)
    pts = []
    for k in range(10):
        a = -math.pi / 2 + k * math.pi / 5
        pts.append((cx + (r if k % 2 == 0 else r * inner) * math.cos(a),
                    cy + (r if k % 2 == 0 else r * inner) * math.sin(a)))
    return rotate(pts, rng.uniform(0, 2 * math.pi / 5) if rng.random() < 0.7 else 0, cx, cy)


def extent(pts, cx, cy, size):
    if pts is None:
        return [cx - size / 2, cy - size / 2, cx + size / 2, cy + size / 2]
    return [min(p[0] for p in pts), min(p[1] for p in pts), max(p[0] for p in pts),
            max(p[1] for p in pts)]


def mean_under(img, box):
    w, h = img.size
    x1, y1 = max(0, int(box[0])), max(0, int(box[1]))
    x2, y2 = min(w, int(box[2]) + 1), min(h, int(box[3]) + 1)
    if x2 <= x1 or y2 <= y1:
        return (128, 128, 128)
    arr = np.asarray(img.crop((x1, y1, x2, y2)), np.float32).reshape(-1, 3)
    return tuple(arr.mean(0))


def draw_shape(layer, kind, pts, cx, cy, size, fill, style, stroke, border):
    """Draws on a SUPERSAMPLE-times larger RGBA layer."""
    d = ImageDraw.Draw(layer)
    s = SUPERSAMPLE
    sw = max(1, int(round(stroke * s)))
    if kind == "circle":
        box = [(cx - size / 2) * s, (cy - size / 2) * s, (cx + size / 2) * s, (cy + size / 2) * s]
        if style == "filled":
            d.ellipse(box, fill=fill)
        elif style == "outlined":
            d.ellipse(box, outline=fill, width=sw)
        else:
            d.ellipse(box, fill=fill, outline=border, width=sw)
        return
    big = [(x * s, y * s) for x, y in pts]
    if style == "filled":
        d.polygon(big, fill=fill)
    else:
        if style == "bordered":
            d.polygon(big, fill=fill)
        # A stroke centred on the outline (half of it outside: the box grows by that half); the
        # path goes round one segment more so the first corner is joined like the others.
        d.line(big + big[:2], fill=fill if style == "outlined" else border, width=sw, joint="curve")


def place_shapes(rng, img, w, h):
    short = min(w, h)
    kinds = rng.sample(scenes.SHAPES, rng.randint(1, 4))
    names = list(scenes.COLORS)
    rng.shuffle(names)
    placed = []
    for kind in kinds:
        for _ in range(200):
            size = short * rng.uniform(0.08, 0.42)
            cx = rng.uniform(size * 0.62, w - size * 0.62)
            cy = rng.uniform(size * 0.62, h - size * 0.62)
            pts = polygon(kind, cx, cy, size, rng)
            box = extent(pts, cx, cy, size)
            if box[0] < 1 or box[1] < 1 or box[2] > w - 2 or box[3] > h - 2:
                continue
            if any(scenes.overlap(box, p["px"], short * 0.025) for p in placed):
                continue
            under = mean_under(img, box)
            free = [c for c in names if c not in {p["color"] for p in placed} and
                    distance(scenes.COLORS[c], under) > 100]
            if not free:
                continue
            color = rng.choice(free)
            placed.append({"shape": kind, "color": color, "pts": pts, "cx": cx, "cy": cy,
                           "size_px": size, "px": box, "under": under})
            break
    return placed


def border_colour(rng, fill, under, any_border):
    """The border of a bordered shape, or None where none would show. By default the fill's
    luminance decides (dark on light fills, light on dark ones), which makes the border a cue for
    the fill; with any_border, black or white at random, as long as it stands out from both the
    fill and what lies under the shape: a person outlines an orange star in white as readily as
    in black."""
    if not any_border:
        lum = 0.3 * fill[0] + 0.59 * fill[1] + 0.11 * fill[2]
        border = (15, 15, 15) if lum > 80 else (240, 240, 240)
        return None if distance(border, under) < 60 else border
    options = [(15, 15, 15), (240, 240, 240)]
    rng.shuffle(options)
    for border in options:
        if distance(border, under) >= 60 and distance(border, fill) >= 100:
            return border
    return None


def draw_shapes(rng, img, placed, styles=STYLE_WEIGHTS, any_border=False):
    s = SUPERSAMPLE
    for p in placed:
        fill = jitter(scenes.COLORS[p["color"]], rng, 14)
        style = rng.choices(["filled", "outlined", "bordered"], styles)[0]
        stroke = max(1.5, p["size_px"] * rng.uniform(0.03, 0.14))
        border = border_colour(rng, fill, p["under"], any_border)
        if border is None or p["color"] in ("black", "white"):
            style = "filled" if style == "bordered" else style
            border = border or (15, 15, 15)  # unused: nothing is bordered
        if style != "filled" and p["pts"] is not None:
            g = stroke / 2
            p["px"] = [p["px"][0] - g, p["px"][1] - g, p["px"][2] + g, p["px"][3] + g]
        p["style"] = style
        # Drawn on a supersampled layer of just the shape's surroundings, then reduced: anti-
        # aliased edges at a fraction of the cost of a whole supersampled canvas.
        x0, y0 = int(p["px"][0]) - 2, int(p["px"][1]) - 2
        x1, y1 = int(p["px"][2]) + 3, int(p["px"][3]) + 3
        layer = Image.new("RGBA", ((x1 - x0) * s, (y1 - y0) * s), (0, 0, 0, 0))
        pts = None if p["pts"] is None else [(x - x0, y - y0) for x, y in p["pts"]]
        draw_shape(layer, p["shape"], pts, p["cx"] - x0, p["cy"] - y0, p["size_px"],
                   fill + (255,), style, stroke, border + (255,))
        layer = layer.resize((x1 - x0, y1 - y0), resample=Image.BOX)
        img.paste(layer, (x0, y0), layer)


def text_colour(rng, under):
    lum = 0.3 * under[0] + 0.59 * under[1] + 0.11 * under[2]
    for _ in range(40):
        if rng.random() < 0.7:
            v = rng.randint(0, 70) if lum > 128 else rng.randint(190, 255)
            col = (v, v, v)
        else:
            col = tuple(rng.randint(0, 255) for _ in range(3))
        if distance(col, under) > 140:
            return col
    return (0, 0, 0) if lum > 128 else (255, 255, 255)


def place_text(rng, img, placed, word):
    w, h = img.size
    short = min(w, h)
    for _ in range(100):
        px = max(8, int(short * rng.uniform(0.07, 0.17)))
        f = font(rng.choice(TRAIN_FONTS), px)
        x0, y0, x1, y1 = f.getbbox(word)
        mask = Image.new("L", (x1 - x0 + 2 * px, y1 - y0 + 2 * px), 0)
        ImageDraw.Draw(mask).text((px - x0, px - y0), word, font=f, fill=255)
        if rng.random() < 0.6:
            mask = mask.rotate(rng.uniform(-10, 10), resample=Image.BICUBIC, expand=True)
        bbox = mask.point(lambda v: 255 if v > 40 else 0).getbbox()
        if not bbox:
            continue
        mask = mask.crop(bbox)
        tw, th = mask.size
        if tw > 0.92 * w or th > 0.5 * h:
            continue
        x = rng.randint(int(0.03 * w), max(int(0.03 * w), int(0.97 * w) - tw))
        y = rng.randint(int(0.03 * h), max(int(0.03 * h), int(0.97 * h) - th))
        box = [x, y, x + tw, y + th]
        if any(scenes.overlap(box, p["px"], short * 0.025) for p in placed):
            continue
        col = text_colour(rng, mean_under(img, box))
        img.paste(Image.new("RGB", (tw, th), col), (x, y), mask)
        return box
    return None


def degrade(rng, img):
    w, h = img.size
    if rng.random() < 0.15:
        f = rng.uniform(0.4, 0.75)
        img = img.resize((max(8, int(w * f)), max(8, int(h * f))), Image.BILINEAR).resize(
            (w, h), Image.BILINEAR)
    if rng.random() < 0.2:
        img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.4, 1.3)))
    if rng.random() < 0.15:
        nr = np.random.default_rng(rng.randint(0, 1 << 30))
        arr = np.asarray(img, np.float32) + nr.standard_normal((h, w, 3), np.float32) * rng.uniform(
            2, 9)
        img = Image.fromarray(arr.clip(0, 255).astype(np.uint8))
    if rng.random() < 0.3:
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=rng.randint(30, 92))
        buf.seek(0)
        img = Image.open(buf).convert("RGB")
    return img


def make_scene(rng: random.Random, text_prob=0.5, number_prob=0.0, styles=STYLE_WEIGHTS,
               any_border=False):
    """A scene as scenes.make_scene returns it (unit geometry per axis), plus "image". styles:
    the weights of filled, outlined and bordered shapes; any_border: see border_colour."""
    aspect = math.exp(rng.uniform(math.log(0.5), math.log(2.0))) if rng.random() < 0.75 else 1.0
    long_side = rng.randint(256, 640)
    w, h = ((long_side, max(64, int(long_side / aspect))) if aspect >= 1 else
            (max(64, int(long_side * aspect)), long_side))
    img, kind = background(rng, w, h)
    placed = place_shapes(rng, img, w, h)
    draw_shapes(rng, img, placed, styles, any_border)
    text = None
    if rng.random() < text_prob:
        word = rng.choice(scenes.NUMBERS if number_prob and rng.random() < number_prob
                          else scenes.WORDS)
        box = place_text(rng, img, placed, word)
        if box:
            text = {"text": word, "box": [box[0] / w, box[1] / h, box[2] / w, box[3] / h]}
    img = degrade(rng, img)
    short = min(w, h)
    shapes = []
    for p in placed:
        b = p["px"]
        shapes.append({"shape": p["shape"], "color": p["color"], "style": p["style"],
                       "cx": (b[0] + b[2]) / 2 / w, "cy": (b[1] + b[3]) / 2 / h,
                       "size": p["size_px"] / short,
                       "box": [b[0] / w, b[1] / h, b[2] / w, b[3] / h]})
    return {"background": {"kind": kind}, "shapes": shapes, "text": text, "image": img,
            "width": w, "height": h}
