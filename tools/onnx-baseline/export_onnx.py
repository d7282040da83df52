"""Exports the speed demo's Florence-2 (random weights) to ONNX, as onnx-community splits it.

    /usr/bin/python3 tools/onnx-baseline/export_onnx.py --size base --out DIR [--image IMG]

Writes into DIR (skipped when DIR/meta.json says it was made by this same code):
  vision_encoder.onnx           pixel_values [1,3,768,768] -> image_features [1,577,D]
  encoder_model.onnx            image_features, input_ids [1,P] -> last_hidden_state [1,577+P,D]
  decoder_cross_kv.onnx         encoder_hidden_states -> present.{i}.encoder.key/value
  decoder_with_past_model.onnx  input_ids [1,1], past_key_values.{i}.decoder.key/value (past
                                length 0 on the first step), past_key_values.{i}.encoder.key/value
                                -> logits [1,V], present.{i}.decoder.key/value (the past grown
                                by concatenation, as the Hugging Face exports do)
  int8/*.onnx                   the same four, every product with a constant weight quantized
                                as ONNX Runtime's quantize_dynamic does (see quantize_dynamic)
  pixels.bin                    the image preprocessed as the Python baseline does (PIL
                                bicubic to 768x768, ImageNet mean/std), float32, NCHW
  pixels.safetensors            the same tensor for `florence-studio-cli run --pixel-values`
  meta.json                     shapes, prompt ids, the greedy tokens of the eager PyTorch
                                model on these weights (the runner checks its own against them)

The model is the repository's own (engine/exporter/florence2/model.py) computing as the
published code does (bench_eager.as_published: F.linear, matmul attention, NCHW convolutions),
never Florence Studio's operator library, whose operators ONNX cannot express. Its weights are
the speed demo's: every tensor drawn from its own generator seeded by mixSeed(seed, name), as
engine/runtime/ModelLoad.cpp fills an architecture package (the recipe from export.generation_recipe,
checked against --package's manifest when given). Needs the onnx package: apt install python3-onnx.
"""
import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "engine", "exporter")))

from florence2 import bench_eager, ops  # noqa: E402
from florence2 import export as E  # noqa: E402
from florence2 import model as M  # noqa: E402
from florence2.package import get_parameter, mix_seed  # noqa: E402

import onnx  # noqa: E402  (after the repository's modules: their errors are the likelier ones)
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

OPSET = 17
# <CAPTION>'s prompt, "What does the image describe?", as `bench` sends it.
CAPTION_IDS = [0, 2264, 473, 5, 2274, 6190, 116, 2]
REFERENCE_TOKENS = 16
NAMES = ("vision_encoder", "encoder_model", "decoder_cross_kv", "decoder_with_past_model")
DEFAULT_IMAGE = os.path.normpath(os.path.join(HERE, "..", "..", "resources", "samples", "pier.png"))


def log(message: str) -> None:
    print(f"export_onnx: {message}", file=sys.stderr, flush=True)


def code_hash() -> str:
    """Of the files that decide what is exported: a changed one makes run.sh export again."""
    h = hashlib.sha256()
    for path in (__file__, M.__file__, bench_eager.__file__, E.__file__):
        with open(path, "rb") as f:
            h.update(f.read())
    h.update(torch.__version__.encode() + onnx.__version__.encode())
    return h.hexdigest()[:16]


def build_model(size: str, seed: int, package_dir: str = "") -> M.Florence2:
    """Florence-2 of this size with the speed demo's weights, computing as published."""
    config = E.read_json(os.path.join(E.resources_dir(), E.RANDOM_CONFIGS[size]))
    with torch.no_grad():
        model = M.Florence2(config).eval()
    model.tie_weights()
    model.tie_encoder_embedding()
    generated, _ = E.generation_recipe(model)
    if package_dir:
        with open(os.path.join(package_dir, "manifest.json")) as f:
            recipe = json.load(f)["generated_parameters"]
        if recipe["parameters"] != generated:
            raise SystemExit(f"{package_dir}: its manifest's recipe differs from this "
                             "checkout's model (a package of another version?)")
        seed = int(recipe["seed"])
    roles = {"decoder": model.dec, "text_encoder": model.text, "vision": model.vision}
    with torch.no_grad():
        for entry in generated:
            gen = torch.Generator().manual_seed(
                mix_seed(seed, entry["module"] + "/" + entry["names"][0]))
            value = torch.normal(float(entry["mean"]), float(entry["std"]),
                                 tuple(entry["shape"]), generator=gen)
            for name in entry["names"]:
                get_parameter(roles[entry["module"]], name).copy_(value)
    bench_eager.as_published()
    model.config = config
    model.seed = seed
    return model


class Vision(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.vision = model.vision

    def forward(self, pixel_values):
        return self.vision(pixel_values)


class Encoder(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.text = model.text

    def forward(self, image_features, input_ids):
        return self.text(image_features, input_ids, torch.ones_like(input_ids))


class CrossKV(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.layers = model.dec.decoder.layers

    def forward(self, encoder_hidden_states):
        out = []
        for layer in self.layers:
            out += list(layer.encoder_attn.keys_values(encoder_hidden_states))
        return tuple(out)


class DecoderWithPast(torch.nn.Module):
    """One token; per layer the decoder's past keys/values (grown by torch.cat, as transformers'
    BART and its ONNX exports do) and the encoder's, computed once by CrossKV."""

    def __init__(self, model):
        super().__init__()
        self.dec = model.dec

    def forward(self, input_ids, *past):
        dec = self.dec
        x = dec.embed(input_ids, past[0].shape[2])
        zero = torch.zeros(1, 1, 1, 1)
        present = []
        for i, layer in enumerate(dec.decoder.layers):
            k, v = layer.self_attn.keys_values(x)
            k = torch.cat([past[4 * i], k], dim=2)
            v = torch.cat([past[4 * i + 1], v], dim=2)
            present += [k, v]
            x = layer(x, k, v, zero, past[4 * i + 2], past[4 * i + 3], zero)
        return (dec.logits(x[:, -1]),) + tuple(present)


def layer_names(layers: int, prefix: str, kinds=("decoder", "encoder")) -> list:
    return [f"{prefix}.{i}.{kind}.{kv}" for i in range(layers) for kind in kinds
            for kv in ("key", "value")]


def export_all(model: M.Florence2, out: str, pixels: torch.Tensor) -> dict:
    tc = model.config["text_config"]
    layers, heads = tc["decoder_layers"], tc["decoder_attention_heads"]
    head_dim = tc["d_model"] // heads
    ids = torch.tensor([CAPTION_IDS])
    with torch.inference_mode():
        features = model.vision(pixels)
        hidden = model.text(features, ids, torch.ones_like(ids))
        cross = CrossKV(model)(hidden)
        seq, _ = bench_eager.decode(model, hidden, REFERENCE_TOKENS)
    kw = dict(opset_version=OPSET, do_constant_folding=True)

    def timed(what, fn):
        start = time.time()
        fn()
        log(f"{what}: {time.time() - start:.0f} s")

    with torch.no_grad():
        timed("vision_encoder.onnx", lambda: torch.onnx.export(
            Vision(model), (pixels,), os.path.join(out, "vision_encoder.onnx"),
            input_names=["pixel_values"], output_names=["image_features"], **kw))
        timed("encoder_model.onnx", lambda: torch.onnx.export(
            Encoder(model), (features, ids), os.path.join(out, "encoder_model.onnx"),
            input_names=["image_features", "input_ids"], output_names=["last_hidden_state"],
            dynamic_axes={"input_ids": {1: "prompt"}, "last_hidden_state": {1: "sequence"}},
            **kw))
        cross_names = [n.replace("decoder.", "") for n in layer_names(layers, "present",
                                                                        ("encoder",))]
        timed("decoder_cross_kv.onnx", lambda: torch.onnx.export(
            CrossKV(model), (hidden,), os.path.join(out, "decoder_cross_kv.onnx"),
            input_names=["encoder_hidden_states"], output_names=cross_names,
            dynamic_axes={"encoder_hidden_states": {1: "sequence"},
                          **{n: {2: "sequence"} for n in cross_names}}, **kw))
        # Traced with a past of 3 tokens: the position and the concatenation follow the past's
        # length in the graph (the runner starts from a past of 0).
        past = []
        for i in range(layers):
            past += [torch.randn(1, heads, 3, head_dim), torch.randn(1, heads, 3, head_dim),
                     cross[2 * i], cross[2 * i + 1]]
        in_names = ["input_ids"] + layer_names(layers, "past_key_values")
        out_names = ["logits"] + layer_names(layers, "present", ("decoder",))
        axes = {}
        for n in in_names[1:]:
            axes[n] = {2: "past" if ".decoder." in n else "sequence"}
        for n in out_names[1:]:
            axes[n] = {2: "past_plus_one"}
        timed("decoder_with_past_model.onnx", lambda: torch.onnx.export(
            DecoderWithPast(model), (torch.tensor([[2]]), *past),
            os.path.join(out, "decoder_with_past_model.onnx"), input_names=in_names,
            output_names=out_names, dynamic_axes=axes, **kw))
    return {"layers": layers, "heads": heads, "head_dim": head_dim, "d_model": tc["d_model"],
            "vocab_size": tc["vocab_size"], "image_tokens": int(features.shape[1]),
            "reference_ids": seq,
            "reference_first_logits": bench_first_logits(model, hidden)}


def bench_first_logits(model, hidden) -> list:
    """The first step's largest logits, a finer check of the runner's graph than the tokens."""
    with torch.inference_mode():
        x = model.dec.embed(torch.tensor([[2]]), 0)
        zero = torch.zeros(1, 1, 1, 1)
        for layer in model.dec.decoder.layers:
            k, v = layer.self_attn.keys_values(x)
            ck, cv = layer.encoder_attn.keys_values(hidden)
            x = layer(x, k, v, zero, ck, cv, zero)
        logits = model.dec.logits(x[:, -1])[0]
    return [float(v) for v in logits[:8]]


# --------------------------------------------------------------------------------------------
# int8: what onnxruntime.quantization.quantize_dynamic(model, out, weight_type=QInt8) writes for
# MatMul (per-tensor, symmetric int8 weights, uint8 activations quantized at run time). That
# package does not exist here (no PyPI), so the same graph is written with onnx alone.
# --------------------------------------------------------------------------------------------


def quantize_weight(w: np.ndarray):
    """Symmetric per-tensor int8 as quantize_dynamic's default (range -127..127, zero point 0)."""
    absmax = float(np.abs(w).max())
    scale = absmax / 127.0 if absmax > 0 else 1.0
    q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    return q, np.float32(scale)


def quantize_dynamic(src: str, dst: str) -> int:
    """Every MatMul (and Gemm without transA) whose second input is a constant 2-D float
    weight becomes DynamicQuantizeLinear(A) -> MatMulInteger(A_q, W_q, A_zp, W_zp) -> Cast ->
    Mul(A_scale * W_scale) (+ the Gemm's bias), the pattern ONNX Runtime fuses into
    DynamicQuantizeMatMul / MatMulIntegerToFloat. Products of two activations (attention) and
    convolutions stay float32, as quantize_dynamic leaves them with op_types_to_quantize=
    ["MatMul"] (ConvInteger has no fast kernel in ONNX Runtime). Returns the number quantized."""
    model = onnx.load(src)
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    uses = {}
    for node in graph.node:
        for name in node.input:
            uses[name] = uses.get(name, 0) + 1
    new_nodes, done, dropped = [], {}, set()
    count = 0
    for node in graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        weight = node.input[1] if len(node.input) > 1 else ""
        ok = (node.op_type in ("MatMul", "Gemm") and weight in inits
              and len(inits[weight].dims) == 2
              and inits[weight].data_type == TensorProto.FLOAT)
        if node.op_type == "Gemm" and ok:
            ok = (not attrs.get("transA", 0) and attrs.get("alpha", 1.0) == 1.0
                  and attrs.get("beta", 1.0) == 1.0)
        if not ok:
            new_nodes.append(node)
            continue
        count += 1
        transposed = node.op_type == "Gemm" and attrs.get("transB", 0)
        key = (weight, bool(transposed))
        if key not in done:
            w = numpy_helper.to_array(inits[weight])
            q, scale = quantize_weight(w.T if transposed else w)
            base = weight + ("_T" if transposed else "") + "_quantized"
            graph.initializer.extend([
                numpy_helper.from_array(np.ascontiguousarray(q), base),
                numpy_helper.from_array(np.array(scale, dtype=np.float32), base + "_scale"),
                numpy_helper.from_array(np.array(0, dtype=np.int8), base + "_zero_point")])
            done[key] = base
        base = done[key]
        uses[weight] -= 1
        if uses[weight] == 0:
            dropped.add(weight)
        a = node.input[0]
        p = f"{node.name or node.output[0]}_q"
        out = node.output[0] if node.op_type == "MatMul" or len(node.input) < 3 else p + "_mm"
        new_nodes += [
            helper.make_node("DynamicQuantizeLinear", [a], [p + "_a", p + "_a_scale", p + "_a_zp"],
                             name=p + "_DynamicQuantizeLinear"),
            helper.make_node("MatMulInteger", [p + "_a", base, p + "_a_zp", base + "_zero_point"],
                             [p + "_int32"], name=p + "_MatMulInteger"),
            helper.make_node("Cast", [p + "_int32"], [p + "_float"], to=TensorProto.FLOAT,
                             name=p + "_Cast"),
            helper.make_node("Mul", [p + "_a_scale", base + "_scale"], [p + "_scale"],
                             name=p + "_ScaleMul"),
            helper.make_node("Mul", [p + "_float", p + "_scale"], [out], name=p + "_Mul")]
        if out != node.output[0]:
            new_nodes.append(helper.make_node("Add", [out, node.input[2]], [node.output[0]],
                                              name=p + "_Bias"))
    keep = [t for t in graph.initializer if t.name not in dropped]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    del graph.node[:]
    graph.node.extend(new_nodes)
    onnx.checker.check_model(model)
    onnx.save(model, dst)
    return count


def write_safetensors(path: str, name: str, x: torch.Tensor) -> None:
    """One float32 tensor in the safetensors layout (8-byte header length, JSON, raw data)."""
    data = x.contiguous().numpy().astype("<f4").tobytes()
    header = json.dumps({name: {"dtype": "F32", "shape": list(x.shape),
                                "data_offsets": [0, len(data)]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(len(header).to_bytes(8, "little") + header + data)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["tiny", "base", "large"], default="base")
    parser.add_argument("--out", required=True, metavar="DIR")
    parser.add_argument("--image", default=DEFAULT_IMAGE)
    parser.add_argument("--package", metavar="PKG", default="",
                        help="the speed-demo package of this size: its recipe must be this "
                             "model's, and its seed is used")
    parser.add_argument("--seed", type=int, default=1234, help="the speed demos' seed")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--force", action="store_true", help="export even if DIR is current")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    stamp = {"code": code_hash(), "size": args.size, "image": os.path.abspath(args.image)}
    meta_path = os.path.join(args.out, "meta.json")
    if not args.force and os.path.exists(meta_path):
        with open(meta_path) as f:
            old = json.load(f)
        if all(old.get(k) == v for k, v in stamp.items()):
            log(f"{args.out} is current (code {stamp['code']})")
            return 0
    if ops.loaded():
        raise SystemExit("the florence operator library is loaded; ONNX cannot export its "
                         "operators (nothing here should load it)")
    start = time.time()
    model = build_model(args.size, args.seed, args.package)
    os.makedirs(os.path.join(args.out, "int8"), exist_ok=True)
    if os.path.exists(meta_path):
        os.remove(meta_path)  # half-written folders are never taken for current ones
    manifest = {"width": 768, "height": 768, "mean": [0.485, 0.456, 0.406],
                "std": [0.229, 0.224, 0.225]}
    pixels = bench_eager.preprocess(args.image, {"image": manifest})
    pixels.numpy().astype("<f4").tofile(os.path.join(args.out, "pixels.bin"))
    write_safetensors(os.path.join(args.out, "pixels.safetensors"), "pixel_values", pixels)
    meta = export_all(model, args.out, pixels)
    assert not ops.loaded()
    quantized = {}
    for name in NAMES:
        t = time.time()
        quantized[name] = quantize_dynamic(os.path.join(args.out, name + ".onnx"),
                                           os.path.join(args.out, "int8", name + ".onnx"))
        log(f"int8/{name}.onnx: {quantized[name]} products quantized, {time.time() - t:.0f} s")
    meta.update(stamp)
    meta.update({"seed": model.seed, "prompt_ids": CAPTION_IDS, "pixels": "pixels.bin",
                 "pixel_shape": list(pixels.shape), "opset": OPSET, "torch": torch.__version__,
                 "onnx": onnx.__version__, "int8_products": quantized,
                 "parameters": sum(p.numel() for p in model.parameters())})
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    log(f"wrote {args.out} in {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
