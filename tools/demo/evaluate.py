"""Evaluates an exported model package on held-out synthetic scenes.

    /usr/bin/python3 tools/demo/evaluate.py --package /tmp/demo-pkg --n 200 --seed 1001
    /usr/bin/python3 tools/demo/evaluate.py --package /tmp/demo-pkg --data tests/engine/data/scenes
    /usr/bin/python3 tools/demo/evaluate.py --package /tmp/demo-pkg --precision int8
    /usr/bin/python3 tools/demo/evaluate.py --package /tmp/demo-pkg --data /tmp/drawn --by-factor

Runs the package's TorchScript modules (vision.pt, text_encoder.pt, decoder.pt) the way the C++
engine does: PIL bicubic resize to the package's input size, mean/std from manifest.json,
greedy decoding (or --beams N, the engine's beam search) with the cached decoder step, decoder start </s>, forced <s> first and </s> at
the length limit, no-repeat-ngram 3. Scenes come from scenes.py with a seed training never used
(training draws from random.Random(1)), or from a folder with ground_truth.json.

Metrics:
- caption: the set of (colour, shape) pairs named in <CAPTION> equals the scene's set;
- detection: mAP@0.5 of <OD> over the four shape classes (greedy output, every box score 1);
- OCR: <OCR> equals the word, on scenes with a word; empty answers on scenes without one;
- also: <OCR_WITH_REGION> (text right and quad IoU >= 0.5), <REGION_TO_CATEGORY> (colour and
  shape right for a ground-truth box), <CAPTION_TO_PHRASE_GROUNDING> (every phrase of the full
  caption found with IoU >= 0.5), <DETAILED_CAPTION> (exact text);
- with --by-factor, caption and region -> category split by what the scenes were drawn with
  (background, aspect ratio, object count, printed word; per object its style, shape, colour
  and size), to show where the misses are.
"""
import argparse
import collections
import json
import os
import random
import re
import sys
import time

import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "engine", "exporter"))
import bpe  # noqa: E402
import scenes  # noqa: E402
from florence2.package import load_modules  # noqa: E402

LOC_RE = re.compile(r"<loc_(\d+)>")


# The engine's kInt8VisionMaxWidth and kInt8TextMaxWidth: encoders wider than
# Florence-2-base's keep bfloat16 products in the int8 mode.
INT8_VISION_MAX_WIDTH = 1024
INT8_TEXT_MAX_WIDTH = 768


def apply_precision(modules, precision):
    """The engine's --precision (engine/runtime/ModelLoad.cpp): bfloat16 turns every linear layer's
    weight to bfloat16; int8 quantizes the decoder's (the LM head included, its own copy of the
    shared embedding) per output channel, symmetrically, which florence::linear_rows reads, and
    the encoders' to bfloat16, then their large ones (both sides >= 512, in code with
    int8_products(), in encoders no wider than Florence-2-base's) to int8 from those, which
    florence::linear_int8 reads. Needs the operator library of a build (FLORENCE_OPS_LIBRARY)."""
    if precision == "float32":
        return

    def int8(w):
        scales = (w.abs().amax(1).double() / 127.0).clamp_min(1e-30)
        return torch.quantize_per_channel(w, scales, torch.zeros(w.shape[0], dtype=torch.long),
                                          0, torch.qint8)

    for role, module in modules.items():
        big_int8 = precision == "int8" and role != "decoder" and hasattr(module, "int8_products")
        if role == "vision" and module.image_projection.shape[0] > INT8_VISION_MAX_WIDTH:
            big_int8 = False
        if role == "text_encoder" and module.encoder.embed_tokens.weight.shape[1] > INT8_TEXT_MAX_WIDTH:
            big_int8 = False
        for _, sub in module.named_modules():
            if sub.original_name != "Linear":
                continue
            w = sub.weight.float()
            if precision == "int8" and role == "decoder":
                sub.weight = int8(w)
            elif big_int8 and min(w.shape) >= 512:
                sub.weight = int8(w.to(torch.bfloat16).float())
            else:
                sub.weight = w.to(torch.bfloat16)


class Package:
    def __init__(self, folder, precision="float32", beams=1):
        self.beams = beams
        # float32, the text encoder's embedding restored when the package stores it once
        self.manifest, modules = load_modules(folder)
        apply_precision(modules, precision)
        self.vision = modules["vision"]
        self.text = modules["text_encoder"]
        self.decoder = modules["decoder"]
        self.tok = bpe.Tokenizer(folder)
        im = self.manifest["image"]
        self.size = im["width"]
        self.mean = torch.tensor(im["mean"]).view(1, 3, 1, 1)
        self.std = torch.tensor(im["std"]).view(1, 3, 1, 1)

    def pixels(self, img):
        img = img.convert("RGB")
        if img.size != (self.size, self.size):
            img = img.resize((self.size, self.size), resample=Image.BICUBIC)
        t = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8).view(
            self.size, self.size, 3).permute(2, 0, 1).float().unsqueeze(0) / 255.0
        return (t - self.mean) / self.std

    def features(self, img):
        with torch.no_grad():
            return self.vision(self.pixels(img))

    def generate(self, feats, prompt, max_new=128, ngram=3):
        if self.beams > 1:
            return self.generate_beams(feats, prompt, self.beams, max_new, ngram)
        return self.generate_greedy(feats, prompt, max_new, ngram)

    def generate_greedy(self, feats, prompt, max_new=128, ngram=3):
        ids = torch.tensor([self.tok.prompt(prompt)])
        with torch.no_grad():
            enc = self.text(feats, ids, torch.ones_like(ids))
            enc_mask = torch.ones(1, enc.shape[1], dtype=torch.long)
            cross = self.decoder.cross_kv(enc)
            cache = self.decoder.new_cache(1, max_new + 2)
            seq = [2]
            for past in range(max_new + 1):
                logits, cache = self.decoder.step(torch.tensor([[seq[-1]]]), past, cache, cross, enc_mask)
                logits = logits[0].clone()
                if len(seq) == 1:
                    nxt = 0
                elif len(seq) >= max_new:
                    nxt = 2
                else:
                    if ngram and len(seq) >= ngram:
                        prefix = tuple(seq[len(seq) - ngram + 1:])
                        for i in range(len(seq) - ngram + 1):
                            if tuple(seq[i:i + ngram - 1]) == prefix:
                                logits[seq[i + ngram - 1]] = -float("inf")
                    nxt = int(logits.argmax())
                seq.append(nxt)
                if nxt == 2:
                    break
        return self.answer(seq, len(seq) > max_new)

    def answer(self, seq, cut):
        self.calls = getattr(self, "calls", 0) + 1
        # an answer cut by the limit (the forced </s>) rather than ended by the model
        self.runaways = getattr(self, "runaways", 0) + bool(cut)
        text = self.tok.decode(seq)
        return text.replace("</s>", "").replace("<s>", "")

    def generate_beams(self, feats, prompt, beams, max_new=128, ngram=3, length_penalty=1.0):
        """Beam search as engine/decoding/Generator.cpp's beamSearch (Hugging Face's, early_stopping
        false as the demo model's generation_config): log-softmax, then no-repeat-ngram and the
        forced tokens, the best 2 x beams candidates, </s> candidates from the top `beams` ranks
        going to the finished hypotheses (scored sum / generated length ** length_penalty)."""
        ids = torch.tensor([self.tok.prompt(prompt)])
        max_len = max_new + 1  # the decoder start included, as the engine's maxLength
        neg = float("-inf")
        with torch.no_grad():
            enc = self.text(feats, ids, torch.ones_like(ids))
            cross = self.decoder.cross_kv(enc).repeat(1, 1, beams, 1, 1, 1)
            enc_mask = torch.ones(beams, enc.shape[1], dtype=torch.long)
            cache = self.decoder.new_cache(beams, max_len + 1)
            seqs = [[2] for _ in range(beams)]
            scores = [0.0] + [-1e9] * (beams - 1)
            finished = []  # (score, tokens)

            def add(tokens, total, gen_len):
                score = total / max(gen_len, 1) ** length_penalty
                if len(finished) < beams or score > min(f[0] for f in finished):
                    finished.append((score, tokens))
                    if len(finished) > beams:
                        finished.remove(min(finished, key=lambda f: f[0]))

            done = False
            past = 0
            while not done and len(seqs[0]) < max_len:
                last = torch.tensor([[s[-1]] for s in seqs])
                logits, cache = self.decoder.step(last, past, cache, cross, enc_mask)
                lp = torch.log_softmax(logits.float(), -1)
                for b, seq in enumerate(seqs):
                    row = lp[b]
                    if ngram and len(seq) + 1 >= ngram:
                        prefix = seq[len(seq) - ngram + 1:]
                        for i in range(len(seq) - ngram + 1):
                            if seq[i:i + ngram - 1] == prefix:
                                row[seq[i + ngram - 1]] = neg
                    forced = 0 if len(seq) == 1 else 2 if len(seq) == max_len - 1 else -1
                    if forced >= 0:
                        row.fill_(neg)
                        row[forced] = 0.0
                lp += torch.tensor(scores).unsqueeze(1)
                vocab = lp.shape[1]
                values, indices = lp.view(-1).topk(2 * beams)
                cur_len = len(seqs[0]) + 1
                nseqs, nscores, origin = [], [], []
                for rank in range(2 * beams):
                    if len(nseqs) >= beams:
                        break
                    beam, token = divmod(int(indices[rank]), vocab)
                    score = float(values[rank])
                    if token == 2:
                        if rank < beams and score > neg:
                            add(seqs[beam], score, cur_len - 1)
                    else:
                        nseqs.append(seqs[beam] + [token])
                        nscores.append(score)
                        origin.append(beam)
                while len(nseqs) < beams:  # the forced </s> of the last step: keep the shapes
                    nseqs.append(seqs[0] + [2])
                    nscores.append(-1e9)
                    origin.append(0)
                best_now = float(values[0])
                done = len(finished) >= beams and (
                    min(f[0] for f in finished) >= best_now / max(cur_len, 1) ** length_penalty)
                seqs, scores = nseqs, nscores
                cache = cache.index_select(2, torch.tensor(origin))
                past += 1
            if not done:
                for seq, total in zip(seqs, scores):
                    add(seq, total, len(seq) - 1)
        best = max(finished, key=lambda f: f[0])[1] if finished else seqs[0]
        cut = len(best) >= max_new  # ended by the forced </s> (finished hypotheses hold no </s>)
        return self.answer(best + ([2] if best[-1] != 2 else []), cut)


def to_px(b, size):
    return (b + 0.5) * size / 1000.0


def parse_boxes(text, width, height, n=4):
    """label<loc>*n groups -> [(label, [coords])], like the original post-processor: x bins
    scale by the image's width, y bins by its height."""
    out = []
    pat = re.compile(r"([^<]*(?:<(?!loc_)[^<]*)*)((?:<loc_\d+>){%d})" % n)
    for m in pat.finditer(text):
        vals = [to_px(int(v), width if k % 2 == 0 else height)
                for k, v in enumerate(LOC_RE.findall(m.group(2)))]
        out.append((m.group(1).strip(), vals))
    return out


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    u = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / u if u > 0 else 0.0


def pairs_in(text):
    cols = "|".join(scenes.COLORS)
    shp = "|".join(scenes.SHAPES)
    return set(re.findall(r"\b(%s) (%s)\b" % (cols, shp), text.lower()))


def average_precision(preds, gts):
    """preds: [(img, box)] in output order (all score 1); gts: {img: [box]}."""
    npos = sum(len(v) for v in gts.values())
    if npos == 0:
        return None
    used = {k: [False] * len(v) for k, v in gts.items()}
    tp = []
    for img, box in preds:
        best, bi = 0.0, -1
        for j, g in enumerate(gts.get(img, [])):
            o = iou(box, g)
            if o > best:
                best, bi = o, j
        if best >= 0.5 and not used[img][bi]:
            used[img][bi] = True
            tp.append(1)
        else:
            tp.append(0)
    # all predictions share one score: a single operating point
    ctp = sum(tp)
    recall = ctp / npos
    precision = ctp / len(tp) if tp else 0.0
    return precision * recall


def load_set(args):
    items = []
    if args.data:
        with open(os.path.join(args.data, "ground_truth.json")) as f:
            gt = json.load(f)
        for e in gt["scenes"]:
            items.append((Image.open(os.path.join(args.data, e["file"])).convert("RGB"), e))
    else:
        rng = random.Random(args.seed)
        for _ in range(args.n):
            sc = scenes.make_scene(rng)
            items.append((scenes.render(sc, args.render_size), scenes.ground_truth(sc, args.render_size)))
    return items


def scene_factors(gt):
    """What a scene was drawn with, as 'factor=value' keys: the second renderer's background,
    the canvas's aspect ratio (squashed to the square input), the object count, a printed word."""
    ratio = gt["width"] / gt["height"]
    keys = ["aspect=" + ("wide" if ratio > 1.25 else "tall" if ratio < 0.8 else "square"),
            f"objects={len(gt['objects'])}", f"word={'yes' if gt['text'] else 'no'}"]
    if gt.get("background"):
        keys.append("background=" + gt["background"])
    return keys


def object_factors(gt, o):
    """One object's: its shape, colour, size (box area as a share of the image) and, from the
    second renderer, its style (filled, outlined, bordered)."""
    b = o["box"]
    area = (b[2] - b[0]) * (b[3] - b[1]) / (gt["width"] * gt["height"])
    keys = ["shape=" + o["shape"], "colour=" + o["color"],
            "size=" + ("small (<2%)" if area < 0.02 else "medium (2-6%)" if area < 0.06 else "large (>6%)")]
    if o.get("style"):
        keys.append("style=" + o["style"])
    return keys


def tally(table, keys, ok):
    for k in keys:
        table[k][0] += ok
        table[k][1] += 1


def evaluate(pkg, items, verbose=False):
    stats = {k: [0, 0] for k in ("caption", "ocr", "ocr_empty", "ocr_region", "region_category",
                                 "grounding", "detailed_caption")}
    pkg.calls = pkg.runaways = 0
    det_preds = {s: [] for s in scenes.SHAPES}
    det_gts = {s: {} for s in scenes.SHAPES}
    failures = []
    # right/asked per factor of the scene or object (--by-factor): where the misses are
    by_factor = {"caption": collections.defaultdict(lambda: [0, 0]),
                 "region_category": collections.defaultdict(lambda: [0, 0])}
    t0 = time.time()
    for i, (img, gt) in enumerate(items):
        width, height = gt["width"], gt["height"]
        feats = pkg.features(img)
        objs = gt["objects"]
        # caption
        cap = pkg.generate(feats, scenes.PROMPTS["<CAPTION>"])
        want = {(o["color"], o["shape"]) for o in objs}
        ok = pairs_in(cap) == want
        stats["caption"][0] += ok
        stats["caption"][1] += 1
        tally(by_factor["caption"], scene_factors(gt)
              + sorted({"has style=" + o["style"] for o in objs if o.get("style")}), ok)
        if not ok:
            failures.append((i, "caption", cap, gt["caption"]))
        # detailed caption
        dc = ""
        if gt.get("detailed_caption"):  # the second renderer has no detailed wording
            dc = pkg.generate(feats, scenes.PROMPTS["<DETAILED_CAPTION>"])
            stats["detailed_caption"][0] += dc == gt["detailed_caption"]
            stats["detailed_caption"][1] += 1
        # detection
        od = pkg.generate(feats, scenes.PROMPTS["<OD>"])
        for label, box in parse_boxes(od, width, height):
            if label in det_preds:
                det_preds[label].append((i, box))
        for o in objs:
            det_gts[o["shape"]].setdefault(i, []).append(o["box"])
        # OCR
        ocr = pkg.generate(feats, scenes.PROMPTS["<OCR>"]).strip()
        if gt["text"]:
            ok = ocr == gt["text"]["text"]
            stats["ocr"][0] += ok
            stats["ocr"][1] += 1
            if not ok:
                failures.append((i, "ocr", ocr, gt["text"]["text"]))
            ow = pkg.generate(feats, scenes.PROMPTS["<OCR_WITH_REGION>"])
            q = parse_boxes(ow, width, height, 8)
            good = False
            if len(q) == 1 and q[0][0] == gt["text"]["text"]:
                c = q[0][1]
                pb = (min(c[0::2]), min(c[1::2]), max(c[0::2]), max(c[1::2]))
                g = gt["text"]["quad"]
                gb = (min(g[0::2]), min(g[1::2]), max(g[0::2]), max(g[1::2]))
                good = iou(pb, gb) >= 0.5
            stats["ocr_region"][0] += good
            stats["ocr_region"][1] += 1
        else:
            stats["ocr_empty"][0] += ocr == ""
            stats["ocr_empty"][1] += 1
        # region -> category (every object, by its exact box)
        for o in objs:
            region = "".join(f"<loc_{scenes.bin_(v / (width if k % 2 == 0 else height))}>"
                             for k, v in enumerate(o["box"]))
            ans = pkg.generate(feats, scenes.PROMPTS["<REGION_TO_CATEGORY>"].replace("{input}", region))
            name = LOC_RE.sub("", ans).strip()
            ok = name == f"{o['color']} {o['shape']}"
            stats["region_category"][0] += ok
            stats["region_category"][1] += 1
            tally(by_factor["region_category"], scene_factors(gt) + object_factors(gt, o), ok)
            if not ok:
                failures.append((i, "region", name, f"{o['color']} {o['shape']}"))
        # grounding with the full caption
        gr = pkg.generate(feats, scenes.PROMPTS["<CAPTION_TO_PHRASE_GROUNDING>"].replace(
            "{input}", gt["caption"]))
        found = parse_boxes(gr, width, height)
        ok = len(found) == len(objs)
        for o in objs:
            phrase = scenes.phrase(o)
            hit = [b for lab, b in found if lab.lower() == phrase]
            ok = ok and len(hit) == 1 and iou(hit[0], o["box"]) >= 0.5
        stats["grounding"][0] += ok
        stats["grounding"][1] += 1
        if verbose and i < 3:
            print(i, "|", cap, "|", od, "|", ocr, "|", gr, "|", dc, flush=True)
    aps = {s: average_precision(det_preds[s], det_gts[s]) for s in scenes.SHAPES}
    valid = [v for v in aps.values() if v is not None]
    res = {k: (v[0] / v[1] if v[1] else None, v[0], v[1]) for k, v in stats.items()}
    res["runaway"] = (pkg.runaways / pkg.calls if pkg.calls else None, pkg.runaways, pkg.calls)
    res["detection_map50"] = (sum(valid) / len(valid) if valid else None, None, None)
    res["detection_ap50_per_class"] = aps
    res["images"] = len(items)
    res["seconds"] = round(time.time() - t0, 1)
    res["by_factor"] = {task: dict(sorted(t.items())) for task, t in by_factor.items()}
    return res, failures


def factor_markdown(res):
    """Caption and region → category per factor, side by side."""
    cap, reg = res["by_factor"]["caption"], res["by_factor"]["region_category"]

    def cell(t, k):
        if k not in t:
            return ""
        a, b = t[k]
        return f"{100 * a / b:.1f}% ({a}/{b})"
    lines = ["| factor | caption set exact | region → category |", "|---|---|---|"]
    for k in sorted(set(cap) | set(reg)):
        lines.append(f"| {k} | {cell(cap, k)} | {cell(reg, k)} |")
    return "\n".join(lines) + "\n"


def markdown(res, title):
    lines = [f"### {title}", "", f"{res['images']} scenes, {res['seconds']} s.", "",
             "| metric | value | count |", "|---|---|---|"]
    names = [("caption", "caption (colour, shape) set exact"),
             ("detection_map50", "detection mAP@0.5"),
             ("ocr", "OCR word accuracy (scenes with a word)"),
             ("ocr_empty", "OCR empty answer (scenes without text)"),
             ("ocr_region", "OCR_WITH_REGION text right and IoU>=0.5"),
             ("region_category", "REGION_TO_CATEGORY colour+shape right"),
             ("grounding", "phrase grounding all phrases IoU>=0.5"),
             ("detailed_caption", "detailed caption exact text"),
             ("runaway", "answers cut at the token limit (all tasks)")]
    for k, label in names:
        v, a, b = res[k]
        val = "n/a" if v is None else f"{100 * v:.1f}%"
        cnt = "" if a is None else f"{a}/{b}"
        lines.append(f"| {label} | {val} | {cnt} |")
    aps = ", ".join(f"{k} {100 * v:.1f}%" for k, v in res["detection_ap50_per_class"].items()
                    if v is not None)
    lines += ["", f"AP@0.5 per class: {aps}", ""]
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--package", required=True)
    p.add_argument("--data", help="folder with ground_truth.json and PNGs (else generated scenes)")
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--seed", type=int, default=1001)
    p.add_argument("--render-size", type=int, default=256)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--precision", choices=["float32", "bfloat16", "int8"], default="float32",
                   help="run the weights as the engine's --precision does")
    p.add_argument("--beams", type=int, default=1,
                   help="1: greedy (default); N: beam search as the engine's (the demo model's "
                        "default is 3)")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--show-failures", type=int, default=10)
    p.add_argument("--by-factor", action="store_true",
                   help="also print caption and region -> category per factor of the scenes "
                        "(background, aspect ratio, object count, style, shape, colour, size)")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    pkg = Package(args.package, args.precision, args.beams)
    items = load_set(args)
    res, failures = evaluate(pkg, items, args.verbose)
    title = f"{args.data}" if args.data else f"generated scenes, seed {args.seed}, {args.render_size} px"
    title += f", {args.precision}, " + ("greedy" if args.beams == 1 else f"{args.beams} beams")
    print(markdown(res, title))
    if args.by_factor:
        print(factor_markdown(res))
    for f in failures[:args.show_failures]:
        print("FAIL", f)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"title": title, "results": res}, f, indent=2)


if __name__ == "__main__":
    main()
