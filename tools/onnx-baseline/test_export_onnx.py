"""Quick checks of export_onnx.py without ONNX Runtime (seconds, tiny configuration).

    /usr/bin/python3 tools/onnx-baseline/test_export_onnx.py

Not part of CTest: it needs python3-onnx, which the build does not. The runner's comparisons
with PyTorch and with the engine (runner.js, check_cli.js) are the end-to-end checks.
"""
import json
import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_onnx as X  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def small_graph(folder: str) -> tuple:
    """x [2,4] -> MatMul(x, W) -> Gemm(., V^T, b) -> MatMul(., .^T) (two activations)."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=(4, 6)).astype(np.float32)
    v = rng.normal(size=(5, 6)).astype(np.float32)
    b = rng.normal(size=(5,)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
             helper.make_node("Gemm", ["h", "V", "b"], ["g"], transB=1, name="gemm"),
             helper.make_node("Transpose", ["g"], ["gt"]),
             helper.make_node("MatMul", ["g", "gt"], ["y"], name="aa")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(v, "V"),
         numpy_helper.from_array(b, "b")])
    path = os.path.join(folder, "small.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path, w, v


class QuantizeDynamic(unittest.TestCase):
    def test_weight_products_become_integer_products(self):
        with tempfile.TemporaryDirectory() as tmp:
            src, w, v = small_graph(tmp)
            dst = os.path.join(tmp, "int8.onnx")
            self.assertEqual(X.quantize_dynamic(src, dst), 2)  # not the activation product
            model = onnx.load(dst)
            ops = [n.op_type for n in model.graph.node]
            self.assertEqual(ops.count("MatMulInteger"), 2)
            self.assertEqual(ops.count("DynamicQuantizeLinear"), 2)
            self.assertEqual(ops.count("MatMul"), 1)
            self.assertNotIn("Gemm", ops)
            inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
            self.assertNotIn("W", inits)  # float weights no longer used are dropped
            self.assertNotIn("V", inits)
            for name, original in (("W_quantized", w), ("V_T_quantized", v.T)):
                q = inits[name]
                self.assertEqual(q.dtype, np.int8)
                self.assertEqual(int(inits[name + "_zero_point"]), 0)
                scale = float(inits[name + "_scale"])
                self.assertAlmostEqual(scale, float(np.abs(original).max()) / 127, places=6)
                self.assertLessEqual(float(np.abs(q * scale - original).max()), scale / 2 + 1e-6)
            # The Gemm's bias is added after the rescale.
            bias = [n for n in model.graph.node if n.op_type == "Add"]
            self.assertEqual([n.input[1] for n in bias], ["b"])


class Export(unittest.TestCase):
    def test_tiny_decoder_with_past_has_the_hugging_face_interface(self):
        import torch
        model = X.build_model("tiny", 1234)
        self.assertFalse(X.ops.loaded())
        # Tied as the speed demo's: one tensor for both embeddings and the LM head.
        self.assertIs(model.dec.lm_head.weight, model.text.encoder.embed_tokens.weight)
        with tempfile.TemporaryDirectory() as tmp:
            pixels = torch.zeros(1, 3, 768, 768)
            meta = X.export_all(model, tmp, pixels)
            decoder = onnx.load(os.path.join(tmp, "decoder_with_past_model.onnx"))
            inputs = [i.name for i in decoder.graph.input]
            outputs = [o.name for o in decoder.graph.output]
            layers = meta["layers"]
            self.assertEqual(inputs, ["input_ids"] + X.layer_names(layers, "past_key_values"))
            self.assertEqual(outputs, ["logits"] +
                             X.layer_names(layers, "present", ("decoder",)))
            past = decoder.graph.input[1].type.tensor_type.shape.dim[2]
            self.assertEqual(past.dim_param, "past")  # the past's length is not frozen
            self.assertEqual(len(meta["reference_ids"]), X.REFERENCE_TOKENS + 1)

    def test_a_package_of_another_recipe_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            config = X.E.read_json(os.path.join(X.E.resources_dir(), "config-tiny.json"))
            m = X.M.Florence2(config)
            m.tie_weights()
            m.tie_encoder_embedding()
            generated, _ = X.E.generation_recipe(m)
            generated[3]["std"] = 0.5
            with open(os.path.join(tmp, "manifest.json"), "w") as f:
                json.dump({"generated_parameters": {"seed": 1, "parameters": generated}}, f)
            with self.assertRaises(SystemExit):
                X.build_model("tiny", 1234, tmp)


if __name__ == "__main__":
    unittest.main()
