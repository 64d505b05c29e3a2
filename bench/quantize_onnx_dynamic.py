#!/usr/bin/env python3
"""Writes the int8 model that ONNX Runtime's `quantize_dynamic` makes of an
exported encoder, for the ONNX Runtime int8 peer of the encoder benches.

The onnxruntime Python package (which holds quantize_dynamic) cannot be
installed here; the rewrite it does is small and documented, so this
script does the same with the `onnx` package (Debian's python3-onnx):

- every MatMul whose second input is a constant float matrix W [K, N]
  (transformers' nn.Linear exports as such a MatMul plus an Add) becomes

      x_q, x_scale, x_zero = DynamicQuantizeLinear(x)      uint8, per tensor
      y_i = MatMulInteger(x_q, W_q, x_zero, W_zero)         int32
      y   = Cast(y_i, float) * (x_scale * W_scale)

  with W_q int8 symmetric (quantize_dynamic's QuantType.QInt8 default),
  one scale for the whole matrix (per_channel=False, its default) or one
  per output column (--per-channel);
- MatMuls of two activations (attention's) stay f32, as quantize_dynamic
  leaves them: their second input is not a weight.

ONNX Runtime's graph optimizer (level "all") fuses each such group into
its DynamicQuantizeMatMul / MatMulIntegerToFloat kernels, as it does for
quantize_dynamic's own output.

    apt-get install python3-onnx
    /usr/bin/python3 quantize_onnx_dynamic.py IN.onnx OUT.onnx [--per-channel]
"""
import argparse

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto


def quantize_weight(w, per_channel):
    """int8 codes in [-127, 127] and their scale(s) (symmetric)."""
    peak = np.abs(w).max(axis=0) if per_channel else np.abs(w).max()
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return codes, scale


def rewrite(model, per_channel):
    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    nodes, added, count = [], [], 0
    for node in graph.node:
        w = weights.get(node.input[1]) if node.op_type == "MatMul" else None
        if w is None or w.data_type != TensorProto.FLOAT or len(w.dims) != 2:
            nodes.append(node)
            continue
        count += 1
        tag = f"dq{count}"
        codes, scale = quantize_weight(numpy_helper.to_array(w), per_channel)
        zero = np.zeros(scale.shape, np.int8)
        added += [numpy_helper.from_array(codes, f"{tag}_w"),
                  numpy_helper.from_array(scale, f"{tag}_w_scale"),
                  numpy_helper.from_array(zero, f"{tag}_w_zero")]
        x = node.input[0]
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [x],
                             [f"{tag}_x", f"{tag}_x_scale", f"{tag}_x_zero"]),
            helper.make_node("MatMulInteger",
                             [f"{tag}_x", f"{tag}_w", f"{tag}_x_zero", f"{tag}_w_zero"],
                             [f"{tag}_i32"]),
            helper.make_node("Cast", [f"{tag}_i32"], [f"{tag}_f32"],
                             to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{tag}_x_scale", f"{tag}_w_scale"],
                             [f"{tag}_scale"]),
            helper.make_node("Mul", [f"{tag}_f32", f"{tag}_scale"], [node.output[0]]),
        ]
    used = {name for n in nodes for name in n.input}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + added)
    return count


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source")
    parser.add_argument("out")
    parser.add_argument("--per-channel", action="store_true")
    args = parser.parse_args()
    model = onnx.load(args.source)
    count = rewrite(model, args.per_channel)
    if count == 0:
        raise SystemExit(f"{args.source}: no MatMul over a constant weight to quantize")
    onnx.checker.check_model(model)
    onnx.save(model, args.out)
    print(f"wrote {args.out}: {count} MatMuls int8")


if __name__ == "__main__":
    main()
