"""Synthetic scenes with exact ground truth, and Florence-2 task samples made from them.

A scene: a plain or textured background, one to four shapes (circle, square, triangle, star;
each shape type at most once and each colour at most once per scene, so captions and phrases
never repeat a 3-gram, which the decoder's no-repeat-ngram rule would forbid), and sometimes
a printed word or number from WORDS. Shapes and text never overlap. Geometry is generated in
[0,1] units and rendered at any pixel size, so ground truth is exact at every size.
"""
import math
import random

from PIL import Image, ImageDraw, ImageFont

COLORS = {
    "red": (220, 30, 35), "green": (30, 155, 55), "blue": (35, 70, 215),
    "yellow": (245, 215, 25), "orange": (245, 135, 25), "purple": (135, 45, 175),
    "black": (15, 15, 15), "white": (250, 250, 250),
}
SHAPES = ["circle", "square", "triangle", "star"]
WORDS = [
    "STOP", "OPEN", "EXIT", "SALE", "HELLO", "WORLD", "CAT", "DOG", "SUN", "MOON", "STAR", "TREE",
    "BOOK", "CAKE", "FISH", "BIRD", "HOUSE", "RIVER", "APPLE", "LEMON", "MILK", "BREAD", "COFFEE",
    "TEA", "PARK", "ROAD", "CITY", "TOWN", "SHOP", "BANK", "HOTEL", "TAXI", "BUS", "TRAIN", "SHIP",
    "BOAT", "PLANE", "MAP", "KEY", "DOOR", "WINDOW", "LAMP", "CHAIR", "TABLE", "CLOCK", "MUSIC",
    "PIANO", "DANCE", "SMILE", "HAPPY", "QUIET", "FAST", "SLOW", "LEFT", "RIGHT", "UP", "DOWN",
    "NORTH", "SOUTH", "EAST", "WEST", "SPRING", "SUMMER", "WINTER", "AUTUMN", "RAIN", "SNOW",
    "WIND", "FIRE", "WATER", "EARTH", "GOLD", "SILVER", "STONE", "GLASS", "PAPER", "PEN", "DRAW",
    "PAINT", "PLAY", "GAME", "WIN", "LOVE", "HOME", "FOOD", "PIZZA", "PASTA", "SALAD", "SOUP",
    "FRUIT",
    "0", "1", "2", "3", "5", "7", "9", "10", "12", "15", "21", "24", "42", "50", "64", "99", "100",
    "123", "256", "404", "500", "1000", "2024", "2025",
]
FONT_PATH = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
_fonts = {}


def font(px):
    if px not in _fonts:
        _fonts[px] = ImageFont.truetype(FONT_PATH, px)
    return _fonts[px]


def star_points(cx, cy, r):
    pts = []
    for k in range(10):
        a = -math.pi / 2 + k * math.pi / 5
        rr = r if k % 2 == 0 else r * 0.45
        pts.append((cx + rr * math.cos(a), cy + rr * math.sin(a)))
    return pts


def shape_geometry(kind, cx, cy, s):
    """Polygon (or None for circle) and exact box in unit coordinates; s is the box side."""
    h = s / 2
    if kind == "circle":
        return None, (cx - h, cy - h, cx + h, cy + h)
    if kind == "square":
        pts = [(cx - h, cy - h), (cx + h, cy - h), (cx + h, cy + h), (cx - h, cy + h)]
    elif kind == "triangle":
        pts = [(cx, cy - h), (cx + h, cy + h), (cx - h, cy + h)]
    else:
        pts = star_points(cx, cy + h * 0.1, h * 1.05)
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    return pts, (min(xs), min(ys), max(xs), max(ys))


def far_from_colors(rgb, d=90):
    return all(sum((a - b) ** 2 for a, b in zip(rgb, c)) ** 0.5 > d for c in COLORS.values())


def overlap(a, b, margin):
    return not (a[2] + margin <= b[0] or b[2] + margin <= a[0] or a[3] + margin <= b[1] or
                b[3] + margin <= a[1])


NUMBERS = [w for w in WORDS if w.isdigit()]


def make_scene(rng: random.Random, text_prob=0.5, number_prob=0.0):
    """A random scene. text_prob: chance of a printed word; number_prob: chance that the word is
    drawn from NUMBERS only (else uniformly from WORDS, numbers included). The defaults are the
    held-out evaluation's and the sample scenes' distribution; training raises both."""
    while True:
        bg = tuple(rng.randint(60, 235) for _ in range(3))
        if far_from_colors(bg):
            break
    texture = rng.choice(["plain", "plain", "noise", "stripes", "checker"])
    n = rng.randint(1, 4)
    kinds = rng.sample(SHAPES, n)
    colors = rng.sample(list(COLORS), n)
    shapes = []
    boxes = []
    for kind, color in zip(kinds, colors):
        for _ in range(200):
            s = rng.uniform(0.12, 0.34)
            cx = rng.uniform(s / 2 + 0.02, 1 - s / 2 - 0.02)
            cy = rng.uniform(s / 2 + 0.02, 1 - s / 2 - 0.02)
            _, box = shape_geometry(kind, cx, cy, s)
            if not any(overlap(box, b, 0.02) for b in boxes):
                shapes.append({"shape": kind, "color": color, "cx": cx, "cy": cy, "size": s,
                               "box": list(box)})
                boxes.append(box)
                break
    text = None
    if rng.random() < text_prob:
        word = rng.choice(NUMBERS if number_prob and rng.random() < number_prob else WORDS)
        for _ in range(200):
            fs = rng.uniform(0.12, 0.17)  # font size as a fraction of the image side
            f = font(256)
            x0, y0, x1, y1 = f.getbbox(word)
            w = (x1 - x0) / 256 * fs
            hgt = (y1 - y0) / 256 * fs
            if w > 0.9:
                continue
            tx = rng.uniform(0.03, 0.97 - w)
            ty = rng.uniform(0.03, 0.97 - hgt)
            box = (tx, ty, tx + w, ty + hgt)
            if not any(overlap(box, b, 0.02) for b in boxes):
                # text colour: dark on light backgrounds, light on dark ones
                lum = 0.3 * bg[0] + 0.59 * bg[1] + 0.11 * bg[2]
                tc = (20, 20, 20) if lum > 130 else (245, 245, 245)
                text = {"text": word, "font_size": fs, "box": list(box), "color": tc}
                break
    return {"background": {"color": bg, "texture": texture, "seed": rng.randint(0, 1 << 30)},
            "shapes": shapes, "text": text}


def render(scene, size):
    bg = scene["background"]
    img = Image.new("RGB", (size, size), tuple(bg["color"]))
    d = ImageDraw.Draw(img)
    trng = random.Random(bg["seed"])
    c = bg["color"]
    alt = tuple(max(0, min(255, v + trng.choice([-30, 30]))) for v in c)
    if bg["texture"] == "stripes":
        step = trng.randint(size // 32, size // 10)
        for k in range(-size, size * 2, step * 2):
            if trng.random() < 0.5:
                d.polygon([(k, 0), (k + step, 0), (k + step - size, size), (k - size, size)], fill=alt)
            else:
                d.rectangle([k, 0, k + step - 1, size], fill=alt)
    elif bg["texture"] == "checker":
        step = trng.randint(size // 24, size // 8)
        for y in range(0, size, step):
            for x in range(0, size, step):
                if (x // step + y // step) % 2:
                    d.rectangle([x, y, x + step - 1, y + step - 1], fill=alt)
    elif bg["texture"] == "noise":
        cell = max(2, size // 64)
        for y in range(0, size, cell):
            for x in range(0, size, cell):
                j = trng.randint(-18, 18)
                d.rectangle([x, y, x + cell - 1, y + cell - 1],
                            fill=tuple(max(0, min(255, v + j)) for v in c))
    for sh in scene["shapes"]:
        col = COLORS[sh["color"]]
        pts, box = shape_geometry(sh["shape"], sh["cx"], sh["cy"], sh["size"])
        if pts is None:
            d.ellipse([box[0] * size, box[1] * size, box[2] * size - 1, box[3] * size - 1], fill=col)
        else:
            d.polygon([(x * size, y * size) for x, y in pts], fill=col)
    t = scene["text"]
    if t:
        px = max(6, int(round(t["font_size"] * size)))
        f = font(px)
        x0, y0, x1, y1 = f.getbbox(t["text"])
        # place so that the ink box starts at the stored box corner
        d.text((t["box"][0] * size - x0, t["box"][1] * size - y0), t["text"], font=f,
               fill=tuple(t["color"]))
        # exact ink box at this size
        t = dict(t)
    return img


def text_box_pixels(scene, size):
    """The ink box of the text at this render size (font hinting changes it slightly)."""
    t = scene["text"]
    px = max(6, int(round(t["font_size"] * size)))
    x0, y0, x1, y1 = font(px).getbbox(t["text"])
    bx, by = t["box"][0] * size, t["box"][1] * size
    return (bx, by, bx + (x1 - x0), by + (y1 - y0))


# ------------------------------------------------------------------------------------------
# ground truth as Florence-2 answers (coordinates are 1000 bins of the original image)
# ------------------------------------------------------------------------------------------


def bin_(v):
    """v in [0,1] -> location bin, floor(x / (W/1000)) clamped."""
    return max(0, min(999, int(math.floor(v * 1000))))


def loc(box):
    return "".join(f"<loc_{bin_(v)}>" for v in box)


def size_word(s):
    return "small" if s < 0.19 else ("medium" if s < 0.27 else "large")


def position_phrase(cx, cy):
    v = "top" if cy < 1 / 3 else ("middle" if cy < 2 / 3 else "bottom")
    h = "left" if cx < 1 / 3 else ("center" if cx < 2 / 3 else "right")
    if v == "middle" and h == "center":
        return "in the center"
    if v == "middle":
        return f"on the {h}"
    if h == "center":
        return f"at the {v}"
    return f"at the {v} {h}"


def ordered(shapes):
    return sorted(shapes, key=lambda s: (s["box"][0] + s["box"][2]))


def join_phrases(ph):
    ph = list(ph)
    if len(ph) == 1:
        return ph[0]
    return ", ".join(ph[:-1]) + " and " + ph[-1]


def phrase(s):
    art = "an" if s["color"][0] in "aeiou" else "a"
    return f"{art} {s['color']} {s['shape']}"


def caption(scene):
    ph = [phrase(s) for s in ordered(scene["shapes"])]
    txt = join_phrases(ph)
    return txt[0].upper() + txt[1:] + "."


def detailed_caption(scene):
    ph = [f"a {size_word(s['size'])} {s['color']} {s['shape']} {position_phrase(s['cx'], s['cy'])}"
          for s in ordered(scene["shapes"])]
    txt = join_phrases(ph)
    txt = "The image shows " + txt + "."
    if scene["text"]:
        txt += f" The text {scene['text']['text']} is written on it."
    return txt


def text_box_unit(scene, size):
    if "image" in scene:  # scenes_wide.py measured the ink box on its rendering
        return tuple(scene["text"]["box"])
    x1, y1, x2, y2 = text_box_pixels(scene, size)
    return (x1 / size, y1 / size, x2 / size, y2 / size)


PROMPTS = {
    "<CAPTION>": "What does the image describe?",
    "<DETAILED_CAPTION>": "Describe in detail what is shown in the image.",
    "<OD>": "Locate the objects with category name in the image.",
    "<OCR>": "What is the text in the image?",
    "<OCR_WITH_REGION>": "What is the text in the image, with regions?",
    "<REGION_TO_CATEGORY>": "What is the region {input}?",
    "<CAPTION_TO_PHRASE_GROUNDING>": "Locate the phrases in the caption: {input}",
}
TASK_WEIGHTS = {
    "<CAPTION>": 0.14, "<DETAILED_CAPTION>": 0.10, "<OD>": 0.18, "<OCR>": 0.14,
    "<OCR_WITH_REGION>": 0.12, "<REGION_TO_CATEGORY>": 0.12, "<CAPTION_TO_PHRASE_GROUNDING>": 0.20,
}


def sample_task(scene, task, rng, size=256):
    """(task, prompt text, answer text) with Florence-2's prompts and answer formats."""
    shapes = ordered(scene["shapes"])
    if task == "<CAPTION>":
        return task, PROMPTS[task], caption(scene)
    if task == "<DETAILED_CAPTION>":
        return task, PROMPTS[task], detailed_caption(scene)
    if task == "<OD>":
        return task, PROMPTS[task], "".join(s["shape"] + loc(s["box"]) for s in shapes)
    if task == "<OCR>":
        return task, PROMPTS[task], scene["text"]["text"] if scene["text"] else ""
    if task == "<OCR_WITH_REGION>":
        if not scene["text"]:
            return task, PROMPTS[task], ""
        x1, y1, x2, y2 = text_box_unit(scene, size)
        q = loc((x1, y1, x2, y1, x2, y2, x1, y2))
        return task, PROMPTS[task], scene["text"]["text"] + q
    if task == "<REGION_TO_CATEGORY>":
        s = rng.choice(shapes)
        b = s["box"]
        w, h = b[2] - b[0], b[3] - b[1]
        jb = [b[0] + rng.uniform(-0.06, 0.06) * w, b[1] + rng.uniform(-0.06, 0.06) * h,
              b[2] + rng.uniform(-0.06, 0.06) * w, b[3] + rng.uniform(-0.06, 0.06) * h]
        region = loc(jb)
        name = f"{s['color']} {s['shape']}"
        return task, PROMPTS[task].replace("{input}", region), name + region
    if task == "<CAPTION_TO_PHRASE_GROUNDING>":
        k = rng.randint(1, len(shapes))
        chosen = rng.sample(shapes, k)
        if rng.random() < 0.5:
            chosen = ordered(chosen)
        ph = [phrase(s) for s in chosen]
        cap = join_phrases(ph)
        cap = cap[0].upper() + cap[1:] + "."
        ans = ""
        for i, (p, s) in enumerate(zip(ph, chosen)):
            ans += (p[0].upper() + p[1:] if i == 0 else p) + loc(s["box"])
        return task, PROMPTS[task].replace("{input}", cap), ans
    raise ValueError(task)


def random_task(scene, rng):
    tasks = list(TASK_WEIGHTS)
    t = rng.choices(tasks, weights=[TASK_WEIGHTS[k] for k in tasks])[0]
    if t in ("<OCR>", "<OCR_WITH_REGION>") and not scene["text"] and rng.random() < 0.7:
        t = "<OD>"
    return t


def ground_truth(scene, size):
    """JSON-friendly ground truth in pixels of a `size`x`size` rendering."""
    gt = {"width": size, "height": size, "caption": caption(scene),
          "detailed_caption": detailed_caption(scene), "objects": []}
    for s in ordered(scene["shapes"]):
        gt["objects"].append({"shape": s["shape"], "color": s["color"],
                              "size": size_word(s["size"]),
                              "box": [round(v * size, 2) for v in s["box"]]})
    if scene["text"]:
        x1, y1, x2, y2 = text_box_pixels(scene, size)
        gt["text"] = {"text": scene["text"]["text"],
                      "quad": [round(v, 2) for v in (x1, y1, x2, y1, x2, y2, x1, y2)]}
    else:
        gt["text"] = None
    gt["scene"] = scene
    return gt
