"""The Python baseline of `florence-studio-cli bench`: a package's weights run eagerly.

This is how a Hugging Face user runs Florence-2: the exporter's modules without scripting, with
plain nn.Linear products (F.linear), PIL preprocessing and a key/value cache that grows by
torch.cat every step, as transformers' BART does. Greedy decoding of a fixed number of tokens.

    /usr/bin/python3 -m florence2.bench_eager --package PKG --image IMG --lengths 32,128 \
        --threads 2 --prompt-ids 0,2264,473,5,2274,6190,116,2
Prints one JSON object on stdout.
"""
import argparse
import json
import os
import statistics
import sys
import time

# Imported here, not where they are used: a missing module stops the baseline before it loads
# a model of a gigabyte, and the bench names what to install.
import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from . import files
from . import model as M
from . import ops
from .package import load_modules


def now_ms() -> float:
    return time.perf_counter() * 1000.0


def as_published() -> None:
    """Undoes the engine's own speed-ups in the exporter's modules, so the baseline computes
    the way the published Florence-2 code does: nn.Linear products (F.linear) everywhere,
    attention as two batched matrix products, and the depth-wise and patch convolutions on NCHW
    copies of the tokens."""
    M.linear = lambda x, w, b: F.linear(x, w, b)

    def attend(q, k, v, mask):
        scores = torch.matmul(q, k.transpose(-1, -2)) + mask
        return torch.matmul(scores.softmax(dim=-1), v)

    M.attend = attend

    def depthwise(self, x, h: int, w: int):
        b, n, c = x.shape
        x = self.dw(x.transpose(1, 2).reshape(b, c, h, w))
        return x.flatten(2).transpose(1, 2)

    def patch_embed(self, x, h: int, w: int):
        if x.dim() == 3:
            if self.pre_norm:
                x = self.norm(x)
            b, n, c = x.shape
            x = x.transpose(1, 2).reshape(b, c, h, w)
        x = self.proj(x)
        b, c, h2, w2 = x.shape
        x = x.flatten(2).transpose(1, 2)
        if not self.pre_norm:
            x = self.norm(x)
        return x, h2, w2

    def residual_conv(self, x, h: int, w: int):
        return x + depthwise(self.fn, x, h, w)

    M.DepthWiseConv2d.forward = depthwise
    M.ResidualConv.forward = residual_conv
    M.ConvEmbed.forward = patch_embed


def load(package: str):
    start = now_ms()
    config = files.read_json(os.path.join(package, "config.json"))
    manifest, scripted = load_modules(package)  # float32, shared tensors restored
    florence = M.Florence2(config).eval()
    for part, role in ((florence.vision, "vision"), (florence.text, "text_encoder"),
                       (florence.dec, "decoder")):
        part.load_state_dict(scripted[role].state_dict())
    florence.tie_weights()
    return florence, manifest, now_ms() - start


def preprocess(path: str, manifest: dict) -> torch.Tensor:
    img = manifest["image"]
    image = Image.open(path).convert("RGB").resize((img["width"], img["height"]), Image.BICUBIC)
    x = np.asarray(image, dtype=np.float32) / 255.0
    x = (x - np.array(img["mean"], dtype=np.float32)) / np.array(img["std"], dtype=np.float32)
    return torch.from_numpy(x).permute(2, 0, 1).unsqueeze(0).contiguous()


def decode(florence, hidden: torch.Tensor, tokens: int):
    """Greedy decoding with a cache grown by concatenation; the end token is ignored."""
    dec = florence.dec
    enc_mask = torch.ones(1, hidden.shape[1], dtype=torch.long)
    cross_mask = M.padding_mask(enc_mask)
    cross = [layer.encoder_attn.keys_values(hidden) for layer in dec.decoder.layers]
    past = []
    seq = [2]
    steps = []
    for t in range(tokens):
        start = now_ms()
        x = dec.embed(torch.tensor([[seq[-1]]]), t)
        new_past = []
        for i, layer in enumerate(dec.decoder.layers):
            k, v = layer.self_attn.keys_values(x)
            if past:
                k = torch.cat([past[i][0], k], dim=2)
                v = torch.cat([past[i][1], v], dim=2)
            new_past.append((k, v))
            self_mask = torch.zeros(1, 1, 1, k.shape[2])
            x = layer(x, k, v, self_mask, cross[i][0], cross[i][1], cross_mask)
        past = new_past
        logits = dec.logits(x[:, -1])
        logits[:, 2] = float("-inf")
        seq.append(int(logits.argmax(dim=-1)))
        steps.append(now_ms() - start)
    return seq, steps


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", required=True)
    parser.add_argument("--image", required=True)
    parser.add_argument("--lengths", default="32,128,256")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--prompt-ids", required=True)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--ops-library", metavar="PATH",
                        help="the operator library the package's modules call (see ops.py)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    try:
        # Only to load the package's weights: the baseline itself never calls the operators.
        ops.load_library(args.ops_library)
    except ops.OpsLibraryError:
        if args.ops_library:
            raise
        # A package exported before the operators existed loads without them.
    as_published()

    out = {"threads": torch.get_num_threads(), "torch": torch.__version__}
    with torch.inference_mode():
        florence, manifest, out["load_ms"] = load(args.package)
        ids = torch.tensor([[int(i) for i in args.prompt_ids.split(",")]])
        timings = {"preprocess_ms": [], "vision_ms": [], "text_encoder_ms": []}
        hidden = None
        for _ in range(args.runs + 1):  # the first run warms up
            t0 = now_ms()
            pixels = preprocess(args.image, manifest)
            t1 = now_ms()
            features = florence.vision(pixels)
            t2 = now_ms()
            hidden = florence.text(features, ids, torch.ones_like(ids))
            t3 = now_ms()
            timings["preprocess_ms"].append(t1 - t0)
            timings["vision_ms"].append(t2 - t1)
            timings["text_encoder_ms"].append(t3 - t2)
        for k, v in timings.items():
            out[k] = statistics.median(v[1:])
        out["cached"] = {}
        for length in [int(x) for x in args.lengths.split(",")]:
            seq, steps = decode(florence, hidden, length)
            out["cached"][str(length)] = {"step_ms": steps, "ids": seq}
    json.dump(out, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
