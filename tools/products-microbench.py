#!/usr/bin/python3
"""What the encoders' products reach on this CPU, for the README's performance section.

    FLORENCE_OPS_LIBRARY=build/lib/florence-studio/ops/libflorence_ops.so \\
        /usr/bin/python3 tools/products-microbench.py [--threads 2] [--profile]

1. GFLOP/s of the linear-layer shapes of Florence-2-base's encoders (768x768 image: vision
   stages 0-3, the text encoder) in float32 (LibTorch's F.linear and oneDNN), bfloat16 (oneDNN,
   what the bfloat16 mode runs) and int8 (florence::linear_int8, what the int8 mode runs on the
   large ones): the ceiling for each mode, against which the vision encoder's time in `bench`
   is read (183 G multiply-adds per image at base size).
2. --profile: the base vision encoder (random weights, TorchScript from the exporter's model
   code, linear weights as each mode converts them) run once under LibTorch's profiler: time per
   operator, to show what is not products (convolutions, copies, norms, GELU, softmax).
Medians of 7 runs; the machine's other load shows in every figure, so compare within one run.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "engine", "exporter"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from florence2 import model as M, ops  # noqa: E402

# (rows, in, out) of the base encoders' linear layers at a 768x768 image
SHAPES = [("vision stage 0 qkv", 36864, 128, 384), ("vision stage 0 fc1", 36864, 128, 512),
          ("vision stage 1 fc1", 9216, 256, 1024), ("vision stage 2 qkv", 2304, 512, 1536),
          ("vision stage 2 fc1", 2304, 512, 2048), ("vision stage 2 fc2", 2304, 2048, 512),
          ("vision stage 3 fc1", 576, 1024, 4096), ("text encoder fc1", 590, 768, 3072)]


def median_seconds(f, n=7):
    f()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def int8(w):
    return torch.quantize_per_channel(w, (w.abs().amax(1).double() / 127).clamp_min(1e-30),
                                      torch.zeros(w.shape[0], dtype=torch.long), 0, torch.qint8)


def products():
    print("| shape (rows x in x out) | float32 F.linear | float32 oneDNN | bfloat16 oneDNN | int8 linear_int8 |")
    print("|---|---|---|---|---|")
    for name, rows, k, n in SHAPES:
        x = torch.randn(rows, k)
        w = torch.randn(n, k) * 0.05
        gflop = 2 * rows * k * n / 1e9
        xb, wb = x.bfloat16(), w.bfloat16()
        xm, wm, bm = x.to_mkldnn(), w.to_mkldnn(), torch.zeros(n).to_mkldnn()
        wq = int8(w)
        cells = [median_seconds(lambda: F.linear(x, w)),
                 median_seconds(lambda: torch._C._nn.mkldnn_linear(xm, wm, bm)),
                 median_seconds(lambda: F.linear(xb, wb)),
                 median_seconds(lambda: torch.ops.florence.linear_int8(x, wq, None))]
        print(f"| {name} ({rows}x{k}x{n}) | " + " | ".join(f"{gflop / s:.0f} GFLOP/s" for s in cells) + " |")


def profile(threads):
    config = json.load(open(os.path.join(HERE, "..", "resources", "florence2", "config-base-ft.json")))
    for mode in ("float32", "bfloat16", "int8"):
        torch.manual_seed(0)
        enc = M.VisionEncoder(config).eval()
        with torch.no_grad():
            for m in enc.modules():
                if isinstance(m, torch.nn.Linear):
                    w = m.weight.data
                    if mode == "bfloat16" or (mode == "int8" and min(w.shape) < 512):
                        m.weight = torch.nn.Parameter(w.bfloat16(), requires_grad=False)
                    elif mode == "int8":
                        m.weight = torch.nn.Parameter(int8(w.bfloat16().float()), requires_grad=False)
        enc = torch.jit.script(enc)
        x = torch.randn(1, 3, 768, 768)
        with torch.no_grad():
            s = median_seconds(lambda: enc(x), 3)
            with torch.autograd.profiler.profile() as p:
                enc(x)
        total = sum(e.self_cpu_time_total for e in p.key_averages())
        top = sorted(p.key_averages(), key=lambda e: -e.self_cpu_time_total)[:8]
        print(f"\n{mode}: vision encoder {1000 * s:.0f} ms (median of 3, {threads} threads); "
              f"{2 * 183 / s:.0f} GFLOP/s over its 183 G multiply-adds")
        for e in top:
            print(f"  {e.key:28s} {e.self_cpu_time_total / 1000:7.1f} ms  "
                  f"{100 * e.self_cpu_time_total / total:4.1f}%  ({e.count} calls)")


def main():
    # The engine's allocator settings (engine/platform/Process.cpp): without them glibc maps every
    # large tensor fresh and the page faults cost the Python process 10-20% of a vision pass.
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        os.environ.update(MALLOC_MMAP_THRESHOLD_=str(32 << 20), MALLOC_TRIM_THRESHOLD_=str(1 << 30),
                          MALLOC_TOP_PAD_=str(64 << 20))
        os.execv(sys.executable, [sys.executable] + sys.argv)
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--profile", action="store_true", help="also profile the base vision encoder")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    ops.load_library()
    print(f"LibTorch {torch.__version__}, {args.threads} threads")
    products()
    if args.profile:
        profile(args.threads)


if __name__ == "__main__":
    main()
