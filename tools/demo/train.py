"""Trains the bundled demo model: a small Florence-2 on synthetic scenes (tools/demo/scenes.py).

    /usr/bin/python3 tools/demo/train.py --out /tmp/demo-train --minutes 115 --seed 1 --threads 2

(the committed model's command, on an otherwise idle 2-core machine; see tools/demo/README.md)

Same code as the real model (engine/exporter/florence2/model.py) at a small size. Two training-only
shortcuts, both invisible to the exported model:
- the token embedding (tied: encoder, decoder, LM head) is trained only for the ~1.3k tokens
  the synthetic data uses; when saving, those rows are written into a full 51289-row matrix
  (other rows keep their seeded random init) and final_logits_bias is -1e4 for every token the
  model never saw, so generation can only produce tokens it was trained on;
- location targets are smoothed: half one-hot, half a Gaussian (sigma 2 bins) over neighbour
  bins, and <loc_N> embeddings start from a sinusoid of N, so nearby bins start out similar.
The learning rate follows warmup + cosine over wall-clock time (--minutes) or steps (--steps).
Every --ckpt-minutes the full state goes to OUT/ckpt.pt and a Hugging Face-style folder to
OUT/hf (config.json, fp16 model.safetensors with published names, preprocessor and
generation configs), so a usable model exists if training stops early. Loss goes to OUT/loss.csv.
"""
import argparse
import copy
import csv
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "engine", "exporter"))
sys.path.insert(0, HERE)
from florence2.checkpoint import read_safetensors, write_safetensors  # noqa: E402
from florence2.model import Florence2, padding_mask  # noqa: E402
import bpe  # noqa: E402
import scenes  # noqa: E402
import scenes_wide  # noqa: E402

RES = os.path.normpath(os.path.join(HERE, "..", "..", "resources", "florence2"))
VOCAB = 51289
LOC0 = bpe.LOC0
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def make_config(args):
    with open(os.path.join(RES, "config-tiny.json")) as f:
        cfg = json.load(f)
    d = args.d_model
    cfg["_name_or_path"] = "florence2-demo-shapes"
    cfg["projection_dim"] = d
    tc = cfg["text_config"]
    tc.update({"d_model": d, "encoder_layers": args.layers, "decoder_layers": args.layers,
               "num_hidden_layers": args.layers, "encoder_attention_heads": args.heads,
               "decoder_attention_heads": args.heads, "encoder_ffn_dim": 4 * d,
               "decoder_ffn_dim": 4 * d})
    vc = cfg["vision_config"]
    vc.update({"dim_embed": args.vision_dims, "num_heads": [max(1, x // 32) for x in args.vision_dims],
               "num_groups": [max(1, x // 32) for x in args.vision_dims],
               "depths": args.vision_depths, "window_size": 8, "projection_dim": d})
    return cfg


def preprocessor_config(size):
    with open(os.path.join(RES, "preprocessor_config.json")) as f:
        pre = json.load(f)
    pre["size"] = {"height": size, "width": size}
    pre["crop_size"] = {"height": size, "width": size}
    pre["image_seq_length"] = 1 + (size // 32) ** 2
    return pre


def vocabulary(tok):
    """Every token id the synthetic data can produce (prompts and answers)."""
    ids = set(range(LOC0, LOC0 + 1000)) | {0, 1, 2}
    rng = random.Random(12345)
    for _ in range(3000):
        sc = scenes.make_scene(rng, text_prob=1.0 if rng.random() < 0.5 else 0.0)
        for t in scenes.TASK_WEIGHTS:
            if t in ("<OCR>", "<OCR_WITH_REGION>") and not sc["text"]:
                continue
            _, p, a = scenes.sample_task(sc, t, rng)
            ids.update(tok.encode(p))
            ids.update(tok.encode(a))
    for w in scenes.WORDS:
        for form in (w, " " + w, f"The text {w} is written on it."):
            ids.update(tok.encode(form))
    return sorted(ids)


def inverse_name(ours):
    for prefix, pub in (("vision.", ""), ("text.encoder.", "language_model.model.encoder."),
                        ("dec.decoder.", "language_model.model.decoder.")):
        if ours.startswith(prefix):
            return pub + ours[len(prefix):]
    if ours == "dec.final_logits_bias":
        return "language_model.final_logits_bias"
    raise KeyError(ours)


class Trainer:
    def __init__(self, args):
        self.args = args
        torch.manual_seed(args.seed)
        self.tok = bpe.Tokenizer()
        self.cfg = make_config(args)
        self.sub = vocabulary(self.tok)
        self.full2sub = torch.full((VOCAB,), -1, dtype=torch.long)
        self.full2sub[torch.tensor(self.sub)] = torch.arange(len(self.sub))
        self.loc_start = int(self.full2sub[LOC0])
        assert int(self.full2sub[LOC0 + 999]) == self.loc_start + 999
        d = args.d_model
        model = Florence2(self.cfg)
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, nn.Embedding):
                    m.weight.normal_(0.0, 0.02)
            # DaViT's own init for the vision tower: truncated normal 0.02, zero biases
            for m in model.vision.modules():
                if isinstance(m, (nn.Linear, nn.Conv2d)):
                    nn.init.trunc_normal_(m.weight, std=0.02)
                    if m.bias is not None:
                        m.bias.zero_()
            model.vision.image_projection.normal_(0.0, model.vision.image_projection.shape[0] ** -0.5)
            # The 2D position embedding starts as sinusoids of the row and column at the scale of
            # the tower's output (std ~0.6 at init, ~5 after training). At N(0, 0.02) it was ~1% of
            # the features after 30 minutes, so the decoder could barely tell where a cell is and
            # boxes did not improve (first run: mAP@0.5 0.2%).
            pe = model.vision.image_pos_embed
            for table in (pe.row_embeddings.weight, pe.column_embeddings.weight):
                n_pos, dim = table.shape
                pos = torch.arange(n_pos).float().unsqueeze(1)
                wavelengths = torch.logspace(math.log10(2.5), math.log10(64), dim // 2).unsqueeze(0)
                ang = 2 * math.pi * pos / wavelengths
                table.copy_(torch.cat([torch.sin(ang), torch.cos(ang)], 1)[:, :dim] * 1.5)
        emb = nn.Embedding(len(self.sub), d)
        with torch.no_grad():
            emb.weight.normal_(0.0, 0.02)
            # <loc_N>: a sinusoid of N with the norm of a random row, plus a little noise
            n = torch.arange(1000).float().unsqueeze(1) / 1000.0
            freqs = 2 * math.pi * torch.logspace(math.log10(0.5), math.log10(120), d // 2).unsqueeze(0)
            sin = torch.cat([torch.sin(n * freqs), torch.cos(n * freqs)], dim=1)
            sin = sin / sin.norm(dim=1, keepdim=True) * (0.02 * math.sqrt(d))
            emb.weight[self.loc_start:self.loc_start + 1000] = sin + 0.005 * torch.randn(1000, d)
        model.text.encoder.embed_tokens = emb
        model.dec.decoder.embed_tokens = emb
        model.dec.lm_head = nn.Linear(d, 1, bias=False)  # unused in training; full one on save
        self.model = model
        self.emb = emb
        # Training-only probes on the image features (not part of the exported model): per
        # grid cell the shape (none/4 shapes/text) and colour under the cell centre, and on the
        # mean token the printed word. They give the vision tower a direct signal from step 0;
        # without them the first run's vision features collapsed to an image-independent
        # constant while the decoder learned the text prior.
        # Per cell covered by an object (or holding its centre) two more probes: the printed
        # word, and the object's box read out through the <loc_N> embeddings exactly as the LM
        # head reads it (4 query vectors dotted with the 1000 location rows, Gaussian target),
        # so the image features learn to carry box coordinates in the form the decoder emits.
        self.aux = nn.ModuleDict({"shape": nn.Linear(d, 6), "color": nn.Linear(d, 9),
                                  "word": nn.Linear(d, len(scenes.WORDS) + 1),
                                  "cellword": nn.Linear(d, len(scenes.WORDS) + 1),
                                  "loc": nn.Linear(d, 4 * d)})
        params = [p for n_, p in model.named_parameters() if not n_.startswith("dec.lm_head")]
        params += list(self.aux.parameters())
        decay = [p for p in params if p.dim() >= 2]
        no_decay = [p for p in params if p.dim() < 2]
        self.opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                      {"params": no_decay, "weight_decay": 0.0}],
                                     lr=args.lr, betas=(0.9, 0.98), eps=1e-6)
        # Gaussian over neighbouring location bins
        k = torch.arange(1000).float()
        g = torch.exp(-((k.unsqueeze(0) - k.unsqueeze(1)) ** 2) / (2 * 2.0 ** 2))
        self.loc_kernel = g / g.sum(dim=1, keepdim=True)
        self.rng = random.Random(args.seed)
        self.step = 0
        self.elapsed = 0.0

    def init_from(self, folder):
        """The weights of a Hugging Face-style folder written by write_hf: every tensor but the
        shared embedding by name, the embedding's rows of the trained token subset."""
        tensors = read_safetensors(os.path.join(folder, "model.safetensors"))
        shared = tensors.pop("language_model.model.shared.weight").float()
        state = {Florence2.map_name(k): v.float() for k, v in tensors.items()}
        state = {k: v for k, v in state.items() if k != "dec.final_logits_bias"}
        self.resize_positions(folder, state)
        missing, unexpected = self.model.load_state_dict(state, strict=False)
        allowed = ("text.encoder.embed_tokens", "dec.decoder.embed_tokens", "dec.lm_head",
                   "dec.final_logits_bias")
        bad = [k for k in missing if not k.startswith(allowed)] + list(unexpected)
        if bad:
            raise SystemExit(f"{folder} does not fit this model's settings: {bad[:5]}")
        with torch.no_grad():
            self.emb.weight.copy_(shared[torch.tensor(self.sub)])
        print(f"initialised from {folder} ({len(state)} tensors)", flush=True)

    def resize_positions(self, folder, state):
        """From a folder trained at another input size (--size): its image grid is size/32 cells
        a side, and only that many rows of the 2D position tables were trained. Those rows are
        stretched linearly over the new grid, so a cell keeps about the position it had. Without
        this, run 5's weights at 384 pixels captioned 32.5% of the drawn scenes (256: 69%), with
        it 49.5%; every box task still needs training at the new size."""
        with open(os.path.join(folder, "preprocessor_config.json")) as f:
            old = json.load(f)["size"]["height"] // 32
        new = self.args.size // 32
        if old == new:
            return
        for name in ("vision.image_pos_embed.row_embeddings.weight",
                     "vision.image_pos_embed.column_embeddings.weight"):
            table = state[name].clone()
            if new > table.shape[0]:
                raise SystemExit(f"--size {self.args.size} needs {new} position rows; "
                                 f"the model has {table.shape[0]}")
            rows = table[:old].t().unsqueeze(0)
            table[:new] = F.interpolate(rows, size=new, mode="linear", align_corners=True)[0].t()
            state[name] = table
        print(f"position tables stretched from {old} to {new} cells a side", flush=True)

    # ------------------------------------------------------------------ data
    def batch(self):
        a = self.args
        size = a.size
        pix = []
        samples = []
        img_index = []
        g = size // 32
        colors = list(scenes.COLORS)
        aux_shape = torch.zeros(a.images, g * g, dtype=torch.long)
        aux_color = torch.zeros(a.images, g * g, dtype=torch.long)
        aux_word = torch.zeros(a.images, dtype=torch.long)
        aux_cellword = torch.full((a.images, g * g), -100, dtype=torch.long)
        aux_loc = torch.full((a.images, g * g, 4), -1, dtype=torch.long)
        for i in range(a.images):
            if a.wide_share and self.rng.random() < a.wide_share:
                # what users draw (scenes_wide.py): any aspect ratio, squashed like the engine does
                sc = scenes_wide.make_scene(self.rng, text_prob=a.text_prob,
                                            number_prob=a.number_prob,
                                            styles=a.style_weights,
                                            any_border=a.any_border)
                rs = size
                img = sc["image"]
            else:
                sc = scenes.make_scene(self.rng, text_prob=a.text_prob, number_prob=a.number_prob)
                rs = size if self.rng.random() < 0.7 else self.rng.choice([320, 384, 512])
                img = scenes.render(sc, rs)
            if img.size != (size, size):
                img = img.resize((size, size), resample=3)  # bicubic, as the engine does
            pix.append(torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8)
                       .view(size, size, 3).permute(2, 0, 1).float() / 255.0)
            objects = [(sh["box"], scenes.SHAPES.index(sh["shape"]) + 1, colors.index(sh["color"]) + 1, -100)
                       for sh in sc["shapes"]]
            if sc["text"]:
                objects.append((sc["text"]["box"], 5, 0, scenes.WORDS.index(sc["text"]["text"]) + 1))
            for b, shape_id, color_id, word_id in objects:
                centre = (min(g - 1, int((b[1] + b[3]) / 2 * g)), min(g - 1, int((b[0] + b[2]) / 2 * g)))
                bins = torch.tensor([scenes.bin_(v) for v in b])
                for r in range(g):
                    for c in range(g):
                        px_, py_ = (c + 0.5) / g, (r + 0.5) / g
                        if (b[0] <= px_ <= b[2] and b[1] <= py_ <= b[3]) or (r, c) == centre:
                            aux_shape[i, r * g + c] = shape_id
                            aux_color[i, r * g + c] = color_id
                            aux_cellword[i, r * g + c] = word_id
                            aux_loc[i, r * g + c] = bins
            if sc["text"]:
                aux_word[i] = scenes.WORDS.index(sc["text"]["text"]) + 1
            for _ in range(a.tasks_per_image):
                t = scenes.random_task(sc, self.rng)
                _, prompt, ans = scenes.sample_task(sc, t, self.rng, rs)
                samples.append((self.tok.prompt(prompt), [2, 0] + self.tok.encode(ans) + [2]))
                img_index.append(i)
        pixels = torch.stack(pix)
        mean = torch.tensor(MEAN).view(1, 3, 1, 1)
        std = torch.tensor(STD).view(1, 3, 1, 1)
        pixels = (pixels - mean) / std
        P = max(len(p) for p, _ in samples)
        T = max(len(s) for _, s in samples) - 1
        B = len(samples)
        prompt = torch.full((B, P), 1, dtype=torch.long)
        pmask = torch.zeros((B, P), dtype=torch.long)
        dec_in = torch.full((B, T), 1, dtype=torch.long)
        labels = torch.full((B, T), -100, dtype=torch.long)
        for b, (p, s) in enumerate(samples):
            prompt[b, :len(p)] = torch.tensor(p)
            pmask[b, :len(p)] = 1
            dec_in[b, :len(s) - 1] = torch.tensor(s[:-1])
            labels[b, :len(s) - 1] = torch.tensor(s[1:])
        f2s = self.full2sub
        return (pixels, torch.tensor(img_index), f2s[prompt], pmask, f2s[dec_in],
                torch.where(labels >= 0, f2s[labels.clamp(min=0)], labels),
                (aux_shape, aux_color, aux_word, aux_cellword, aux_loc))

    # ------------------------------------------------------------------ model
    def forward(self, pixels, img_index, prompt, pmask, dec_in):
        m = self.model
        img_feats = m.vision(pixels)
        self.img_feats = img_feats
        feats = img_feats[img_index]
        enc = m.text(feats, prompt, pmask)
        enc_mask = torch.cat([torch.ones(feats.shape[0], feats.shape[1], dtype=pmask.dtype), pmask], 1)
        x = m.dec.embed(dec_in, 0)
        self_mask = m.dec.causal_mask(dec_in.shape[1], 0, x.dtype)
        cross_mask = padding_mask(enc_mask)
        for layer in m.dec.decoder.layers:
            k, v = layer.self_attn.keys_values(x)
            ck, cv = layer.encoder_attn.keys_values(enc)
            x = layer(x, k, v, self_mask, ck, cv, cross_mask)
        return F.linear(x, self.emb.weight)

    def loss(self, logits, labels):
        valid = labels >= 0
        lg = logits[valid]
        lb = labels[valid]
        logp = lg.log_softmax(-1)
        nll = -logp.gather(1, lb.unsqueeze(1)).squeeze(1)
        is_loc = (lb >= self.loc_start) & (lb < self.loc_start + 1000)
        loss = nll.clone()
        if is_loc.any():
            bins = lb[is_loc] - self.loc_start
            tgt = self.loc_kernel[bins]
            smooth = -(tgt * logp[is_loc, self.loc_start:self.loc_start + 1000]).sum(-1)
            loss[is_loc] = 0.5 * nll[is_loc] + 0.5 * smooth
        return loss.mean(), nll.mean(), nll[is_loc].mean() if is_loc.any() else nll.new_zeros(())

    def aux_loss(self, targets):
        f = self.img_feats
        shape_t, color_t, word_t, cellword_t, loc_t = targets
        grid = f[:, 1:]
        loss = (F.cross_entropy(self.aux["shape"](grid).flatten(0, 1), shape_t.flatten())
                + self.args.color_weight * F.cross_entropy(self.aux["color"](grid).flatten(0, 1), color_t.flatten())
                + F.cross_entropy(self.aux["word"](f[:, 0]), word_t))
        if (cellword_t >= 0).any():
            loss = loss + self.args.word_weight * F.cross_entropy(self.aux["cellword"](grid).flatten(0, 1), cellword_t.flatten(),
                                          ignore_index=-100)
        covered = loc_t[..., 0] >= 0
        if covered.any():
            d = grid.shape[-1]
            q = self.aux["loc"](grid[covered]).view(-1, 4, d)
            rows = self.emb.weight[self.loc_start:self.loc_start + 1000]
            logp = (q @ rows.t()).log_softmax(-1)
            loss = loss - (self.loc_kernel[loc_t[covered]] * logp).sum(-1).mean()
        return loss

    def lr(self):
        a = self.args
        if a.steps:
            frac = self.step / a.steps
        else:
            frac = self.elapsed / (a.minutes * 60)
        if self.step < a.warmup:
            return a.lr * (self.step + 1) / a.warmup
        frac = min(1.0, frac)
        return a.lr * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * frac)))

    # ------------------------------------------------------------------ saving
    def save(self):
        a = self.args
        os.makedirs(a.out, exist_ok=True)
        torch.save({"model": self.model.state_dict(), "aux": self.aux.state_dict(), "opt": self.opt.state_dict(),
                    "step": self.step, "elapsed": self.elapsed, "sub": self.sub,
                    "config": self.cfg, "args": vars(a)}, os.path.join(a.out, "ckpt.pt.tmp"))
        os.replace(os.path.join(a.out, "ckpt.pt.tmp"), os.path.join(a.out, "ckpt.pt"))
        write_hf(self.model, self.emb, self.sub, self.cfg, a.size, os.path.join(a.out, "hf"),
                 {"step": self.step, "elapsed_s": round(self.elapsed), "seed": a.seed})

    def run(self):
        a = self.args
        os.makedirs(a.out, exist_ok=True)
        log_path = os.path.join(a.out, "loss.csv")
        start_step = self.step
        new = start_step == 0 or not os.path.exists(log_path)
        logf = open(log_path, "w" if new else "a", newline="")
        w = csv.writer(logf)
        if new:
            w.writerow(["step", "elapsed_s", "lr", "loss", "token_ce", "loc_ce", "aux"])
        t0 = time.time() - self.elapsed
        last_ckpt = time.time()
        acc = [0.0, 0.0, 0.0, 0, 0.0]
        self.model.train()
        while True:
            self.elapsed = time.time() - t0
            if a.steps and self.step >= a.steps:
                break
            if not a.steps and self.elapsed >= a.minutes * 60:
                break
            lr = self.lr()
            for g in self.opt.param_groups:
                g["lr"] = lr
            pixels, idx, prompt, pmask, dec_in, labels, aux_t = self.batch()
            logits = self.forward(pixels, idx, prompt, pmask, dec_in)
            loss, ce, lce = self.loss(logits, labels)
            aux = self.aux_loss(aux_t)
            self.opt.zero_grad(set_to_none=True)
            (loss + a.aux_weight * aux).backward()
            acc[4] += aux.item()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.opt.step()
            self.step += 1
            acc[0] += loss.item()
            acc[1] += ce.item()
            acc[2] += lce.item()
            acc[3] += 1
            if self.step % a.log_every == 0:
                n = acc[3]
                row = [self.step, round(time.time() - t0, 1), f"{lr:.6f}", f"{acc[0] / n:.4f}",
                       f"{acc[1] / n:.4f}", f"{acc[2] / n:.4f}", f"{acc[4] / n:.4f}"]
                w.writerow(row)
                logf.flush()
                print(" ".join(str(x) for x in row), flush=True)
                acc = [0.0, 0.0, 0.0, 0, 0.0]
            if time.time() - last_ckpt > a.ckpt_minutes * 60:
                self.elapsed = time.time() - t0
                self.save()
                last_ckpt = time.time()
                print(f"checkpoint at step {self.step}", flush=True)
        self.elapsed = time.time() - t0
        self.save()
        print(f"done: {self.step} steps in {self.elapsed:.0f} s", flush=True)


def write_hf(model, emb, sub, cfg, size, folder, info=None):
    """A Hugging Face-style folder under the published names, fp16, tied embedding once."""
    os.makedirs(folder, exist_ok=True)
    d = emb.weight.shape[1]
    gen = torch.Generator().manual_seed(0)
    shared = torch.randn(VOCAB, d, generator=gen) * 0.02
    sub_t = torch.tensor(sub)
    with torch.no_grad():
        shared[sub_t] = emb.weight.detach().float()
    bias = torch.full((1, VOCAB), -1e4)
    bias[0, sub_t] = 0.0
    bias[0, 1] = -1e4  # <pad> is never an answer token
    tensors = {}
    for k, v in model.state_dict().items():
        if k.startswith(("text.encoder.embed_tokens", "dec.decoder.embed_tokens", "dec.lm_head")):
            continue
        if k == "dec.final_logits_bias":
            v = bias
        name = inverse_name(k)
        assert Florence2.map_name(name) == k, (name, k)
        tensors[name] = v.detach().to(torch.float16)
    tensors["language_model.model.shared.weight"] = shared.to(torch.float16)
    write_safetensors(os.path.join(folder, "model.safetensors.tmp"), tensors)
    os.replace(os.path.join(folder, "model.safetensors.tmp"), os.path.join(folder, "model.safetensors"))
    cfg = copy.deepcopy(cfg)
    if info:
        cfg["demo_training"] = info
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(folder, "preprocessor_config.json"), "w") as f:
        json.dump(preprocessor_config(size), f, indent=2)
    with open(os.path.join(RES, "generation_config.json")) as f:
        genc = json.load(f)
    with open(os.path.join(folder, "generation_config.json"), "w") as f:
        json.dump(genc, f, indent=2)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="/tmp/demo-train")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--minutes", type=float, default=50.0, help="wall-clock budget (cosine schedule)")
    p.add_argument("--steps", type=int, default=0, help="fixed step count instead of --minutes")
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vision-dims", type=int, nargs=4, default=[24, 48, 96, 192])
    p.add_argument("--vision-depths", type=int, nargs=4, default=[1, 1, 2, 1])
    p.add_argument("--images", type=int, default=8, help="images per batch")
    p.add_argument("--tasks-per-image", type=int, default=3)
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--aux-weight", type=float, default=1.0)
    p.add_argument("--color-weight", type=float, default=3.0, help="weight of the per-cell colour probe")
    p.add_argument("--word-weight", type=float, default=2.0, help="weight of the per-cell word probe")
    p.add_argument("--text-prob", type=float, default=0.6, help="share of training scenes with a printed word")
    p.add_argument("--number-prob", type=float, default=0.3,
                   help="share of printed words drawn from the numbers only (else uniform over all words): "
                        "numbers were 10 of the 13 OCR misreads when they were 20%% of the words")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--ckpt-minutes", type=float, default=4.0)
    p.add_argument("--threads", type=int, default=1,
                   help="1 is ~10x faster than 2 when the cores are shared (OpenMP spin-waits)")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--wide-share", type=float, default=0.0,
                   help="share of training scenes from scenes_wide.py (what users draw) instead of "
                        "scenes.py")
    p.add_argument("--style-weights", type=float, nargs=3, default=list(scenes_wide.STYLE_WEIGHTS),
                   metavar=("FILLED", "OUTLINED", "BORDERED"),
                   help="how often a widened scene's shape is filled, outlined or bordered")
    p.add_argument("--any-border", action="store_true",
                   help="borders of widened scenes' bordered shapes black or white at random (as "
                        "long as they stand out), not chosen by the fill's luminance (runs 1-10)")
    p.add_argument("--init-from", metavar="HF_DIR",
                   help="start from the weights of a folder train.py wrote (e.g. the committed "
                        "resources/models/florence2-demo-shapes); probes and optimizer start fresh; "
                        "from another --size, its position tables are stretched to the new grid")
    p.add_argument("--bench", type=int, default=0, help="time this many steps and exit")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    tr = Trainer(args)
    if args.resume and os.path.exists(os.path.join(args.out, "ckpt.pt")):
        ck = torch.load(os.path.join(args.out, "ckpt.pt"))
        tr.model.load_state_dict(ck["model"])
        tr.aux.load_state_dict(ck["aux"])
        tr.opt.load_state_dict(ck["opt"])
        tr.step, tr.elapsed = ck["step"], ck["elapsed"]
        # a fresh data stream for the resumed part (not a replay of the first steps' scenes)
        tr.rng = random.Random(args.seed * 1000003 + tr.step)
    elif args.init_from:
        tr.init_from(args.init_from)
    n_params = sum(p_.numel() for n_, p_ in tr.model.named_parameters() if not n_.startswith("dec.lm_head"))
    print(f"vocabulary subset {len(tr.sub)} tokens; trained parameters {n_params}", flush=True)
    if args.bench:
        t = time.time()
        for i in range(args.bench):
            tb = time.time()
            batch = tr.batch()
            td = time.time() - tb
            logits = tr.forward(*batch[:5])
            loss, ce, _ = tr.loss(logits, batch[5])
            aux = tr.aux_loss(batch[6])
            tr.opt.zero_grad()
            (loss + aux).backward()
            tr.opt.step()
            print(f"step {i} loss {loss.item():.3f} data {td:.2f}s total {time.time() - tb:.2f}s "
                  f"shapes {tuple(batch[2].shape)} {tuple(batch[4].shape)}", flush=True)
        print(f"{(time.time() - t) / args.bench:.2f} s/step")
        return
    tr.run()


if __name__ == "__main__":
    main()
