#!/usr/bin/env python3
"""Exports torchvision models as graph-only ONNX files (data/onnx/).

Each model is built with weights=None (no download) and exported with
torch.onnx.export (opset 17, eval mode, constant folding: batch norm goes into
the convolution weights). Shape arithmetic the exporter leaves in the graph
(Shape -> Gather -> Mul -> Reshape, in attention and segmentation heads) is
then evaluated here with the static input size and replaced by Constant nodes,
as a runtime's graph optimizer would: ONNX's own shape inference cannot see
through it. Intermediate tensors are renamed t0, t1, ... (node names keep the
module paths). The weights are then stripped so the files stay tens of KB: every
floating-point
initializer keeps its name, data type and dims but loses its data. Integer
initializers (reshape targets, axes, pads...) keep their values, since shape
inference reads them. The model's metadata says so
(`tensormem.weights` = `stripped`); tensormem's loader treats every
initializer as a parameter and never reads weight data.

Such a file is a shape description, not a runnable model: onnxruntime would
reject it. That is the point: planning memory needs shapes and order only.

Example:
  /usr/bin/python3 tools/onnx/export_models.py --out data/onnx
  /usr/bin/python3 tools/onnx/export_models.py --models mobilenet_v2 --out /tmp
  /usr/bin/python3 tools/onnx/export_models.py --models vit_b_16 \
      --no-fold-shapes --out /tmp   # then rename to *.unfolded.onnx
"""

import argparse
import io
import os
import sys

import numpy as np
import onnx
import torch
import torchvision
from onnx import helper, numpy_helper

OPSET = 17

# name -> (constructor, input resolution)
MODELS = {
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), 224),
    "mobilenet_v3_large": (
        lambda: torchvision.models.mobilenet_v3_large(weights=None), 224),
    "resnet50": (lambda: torchvision.models.resnet50(weights=None), 224),
    "inception_v3": (
        lambda: torchvision.models.inception_v3(
            weights=None, aux_logits=False, init_weights=False), 299),
    "deeplabv3_mobilenet_v3": (
        lambda: torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None, aux_loss=False), 513),
    "efficientnet_b0": (
        lambda: torchvision.models.efficientnet_b0(weights=None), 224),
    "vit_b_16": (lambda: torchvision.models.vit_b_16(weights=None), 224),
}

_FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
                onnx.TensorProto.DOUBLE, onnx.TensorProto.BFLOAT16}


class _MainOutput(torch.nn.Module):
    """Segmentation models return a dict; export its "out" tensor only."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        result = self.model(x)
        return result["out"] if isinstance(result, dict) else result


def _strip_tensor(tensor):
    """Drops a float tensor's data, keeping name, type and dims."""
    if tensor.data_type not in _FLOAT_TYPES:
        return False
    for field in ("raw_data", "float_data", "double_data", "int32_data"):
        tensor.ClearField(field)
    return True


def _attribute(node, name, default=None):
    for attribute in node.attribute:
        if attribute.name == name:
            return helper.get_attribute_value(attribute)
    return default


def _slice(node, x, starts, ends, axes=None, steps=None):
    axes = range(len(starts)) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * x.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        index[axis] = slice(int(start), int(end), int(step))
    return x[tuple(index)]


def _shape(node, shape):
    start, end = _attribute(node, "start", 0), _attribute(node, "end", None)
    return np.array(shape[start:end], dtype=np.int64)


# op -> numpy evaluation of the small integer tensors of shape arithmetic.
_EVALUATORS = {
    "Gather": lambda n, x, i: np.take(x, i, axis=_attribute(n, "axis", 0)),
    "Slice": _slice,
    "Concat": lambda n, *xs: np.concatenate(xs, axis=_attribute(n, "axis")),
    "Unsqueeze": lambda n, x, axes: np.expand_dims(x, tuple(int(a) for a in axes)),
    "Squeeze": lambda n, x, axes=None: np.squeeze(
        x, None if axes is None else tuple(int(a) for a in axes)),
    "Cast": lambda n, x: x.astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[_attribute(n, "to")]),
    "Add": lambda n, a, b: a + b,
    "Sub": lambda n, a, b: a - b,
    "Mul": lambda n, a, b: a * b,
    "Div": lambda n, a, b: a // b if a.dtype.kind in "iu" else a / b,
    "Equal": lambda n, a, b: np.equal(a, b),
    "Where": lambda n, c, a, b: np.where(c, a, b),
    "ConstantOfShape": lambda n, shape: np.full(
        tuple(shape), numpy_helper.to_array(_attribute(n, "value")).reshape(-1)[0]
        if _attribute(n, "value") is not None else np.float32(0)),
    "Identity": lambda n, x: x,
}


def _static_shapes(model):
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    shapes = {}
    for value in list(inferred.graph.input) + list(inferred.graph.value_info):
        dims = value.type.tensor_type.shape.dim
        if value.type.tensor_type.HasField("shape") and all(
                d.HasField("dim_value") for d in dims):
            shapes[value.name] = [d.dim_value for d in dims]
    return shapes


def fold_shape_arithmetic(model):
    """Replaces nodes computing small integer tensors from static shapes by
    Constant nodes; returns how many were replaced."""
    known = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer
             if t.data_type == onnx.TensorProto.INT64}
    folded = 0
    while True:
        shapes = _static_shapes(model)
        replaced = False
        for position, node in enumerate(model.graph.node):
            value = None
            if node.op_type == "Constant" and _attribute(node, "value") is not None:
                known[node.output[0]] = numpy_helper.to_array(_attribute(node, "value"))
                continue
            if node.op_type == "Shape" and node.input[0] in shapes:
                value = _shape(node, shapes[node.input[0]])
            elif node.op_type in _EVALUATORS and all(
                    not name or name in known for name in node.input):
                inputs = [known[name] if name else None for name in node.input]
                value = np.asarray(_EVALUATORS[node.op_type](node, *inputs))
            if value is None or value.size > 64:
                continue
            known[node.output[0]] = value
            model.graph.node.remove(node)
            model.graph.node.insert(position, helper.make_node(
                "Constant", [], [node.output[0]], name=node.name,
                value=numpy_helper.from_array(value, node.output[0])))
            folded += 1
            replaced = True
        if not replaced:
            return folded


def shorten_tensor_names(model):
    """Renames intermediate tensors t0, t1, ... (node names, which carry the
    module path, stay): the exporter's names repeat each node's path twice."""
    keep = {v.name for v in list(model.graph.input) + list(model.graph.output)}
    keep |= {t.name for t in model.graph.initializer}
    names = {}
    for node in model.graph.node:
        for output in node.output:
            if output and output not in keep:
                names[output] = f"t{len(names)}"
    for node in model.graph.node:
        for position, name in enumerate(node.input):
            node.input[position] = names.get(name, name)
        for position, name in enumerate(node.output):
            node.output[position] = names.get(name, name)
    del model.graph.value_info[:]


def strip_weights(model):
    stripped = sum(_strip_tensor(t) for t in model.graph.initializer)
    # Large float constants exported as Constant nodes carry weights too.
    for node in model.graph.node:
        if node.op_type != "Constant":
            continue
        for attribute in node.attribute:
            if attribute.name == "value" and attribute.t.ByteSize() > 1024:
                stripped += _strip_tensor(attribute.t)
    entry = model.metadata_props.add()
    entry.key = "tensormem.weights"
    entry.value = ("stripped: float initializers keep name, type and dims; "
                   "their data is removed")
    return stripped


def export(name, out_dir, fold_shapes=True):
    constructor, resolution = MODELS[name]
    torch.manual_seed(0)
    model = _MainOutput(constructor()).eval()
    example = torch.randn(1, 3, resolution, resolution)
    buffer = io.BytesIO()
    # Gradients stay enabled: under no_grad, attention takes a fused fast
    # path that has no ONNX export.
    torch.onnx.export(model, example, buffer, opset_version=OPSET,
                      do_constant_folding=True, input_names=["input"],
                      output_names=["output"])
    proto = onnx.load_from_string(buffer.getvalue())
    folded = fold_shape_arithmetic(proto) if fold_shapes else 0
    stripped = strip_weights(proto)
    shorten_tensor_names(proto)
    proto.producer_name = "tensormem tools/onnx/export_models.py"
    proto.doc_string = (f"torchvision {torchvision.__version__} {name}, "
                        f"1x3x{resolution}x{resolution} float32, weights stripped")
    path = os.path.join(out_dir, f"{name}.onnx")
    onnx.save(proto, path)
    print(f"{path}: {os.path.getsize(path)} bytes, {len(proto.graph.node)} nodes, "
          f"{folded} shape nodes folded, {stripped} weight tensors stripped",
          file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS),
                        help="comma-separated names (default: all)")
    parser.add_argument("--out", default="data/onnx", help="output directory")
    parser.add_argument("--no-fold-shapes", action="store_true",
                        help="keep the exporter's shape arithmetic (the test "
                             "files tests/data/onnx/*.unfolded.onnx)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.models.split(","):
        if name not in MODELS:
            parser.error(f"unknown model '{name}'; known: {', '.join(MODELS)}")
        export(name, args.out, fold_shapes=not args.no_fold_shapes)


if __name__ == "__main__":
    main()
