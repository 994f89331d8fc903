#!/usr/bin/env python3
"""Exports a torchvision model's intermediate tensors as a tensormem buffer set.

torch.fx traces the model, shape propagation gives every tensor's size, and each
intermediate tensor becomes one row `id,first_task,last_task,size` (docs/design.md
§3.2, TFLite convention): the index of the operator that produces it and of the
last operator that reads it, in execution order.

By default the graph is first brought to the form a deployment converter such as
TFLite's produces: batch norm is folded into the convolution before it, an
activation whose input has no other reader is fused into the producer, and
view-like ops (flatten, reshape, dropout in eval) share their input's buffer.
`--no-fuse` keeps PyTorch's eager graph as it is.

Example:
  tools/torch/export_buffers.py mobilenet_v2 --resolution 224 -o mobilenet_v2.csv
"""

import argparse
import operator
import sys

import torch
import torch.fx
from torch.nn.utils.fusion import fuse_conv_bn_eval
from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata

import models as model_zoo

# Elementwise activations a converter fuses into the op that produces their input.
_ACTIVATION_MODULES = (torch.nn.ReLU, torch.nn.ReLU6, torch.nn.Hardswish,
                       torch.nn.Hardsigmoid, torch.nn.SiLU, torch.nn.Sigmoid,
                       torch.nn.GELU)
_ACTIVATION_FUNCTIONS = {torch.relu, torch.nn.functional.relu,
                         torch.nn.functional.relu6, torch.nn.functional.hardswish,
                         torch.nn.functional.hardsigmoid, torch.nn.functional.silu,
                         torch.sigmoid, torch.nn.functional.gelu}
# Ops whose output can share the input's buffer (same bytes, new shape or no-op).
_VIEW_MODULES = (torch.nn.Flatten, torch.nn.Dropout, torch.nn.Identity)
_VIEW_FUNCTIONS = {torch.flatten, torch.reshape, torch.nn.functional.dropout}
_VIEW_METHODS = {"view", "reshape", "flatten", "contiguous", "squeeze",
                 "unsqueeze"}


def _tensor_bytes(meta):
    """Bytes of a node's output; a tuple (e.g. attention's) counts as one buffer."""
    if isinstance(meta, TensorMetadata):  # itself a named tuple: test it first
        numel = 1
        for dim in meta.shape:
            numel *= int(dim)
        return numel * torch.empty((), dtype=meta.dtype).element_size()
    if isinstance(meta, (tuple, list)):
        return sum(_tensor_bytes(element) for element in meta)
    return 0


def _is_activation(node, modules):
    if node.op == "call_module":
        return isinstance(modules[node.target], _ACTIVATION_MODULES)
    return node.op == "call_function" and node.target in _ACTIVATION_FUNCTIONS


def _is_view(node, modules):
    if node.op == "call_module":
        return isinstance(modules[node.target], _VIEW_MODULES)
    if node.op == "call_method":
        return node.target in _VIEW_METHODS
    return node.op == "call_function" and node.target in _VIEW_FUNCTIONS


def _tensor_inputs(node):
    """The graph nodes among `node`'s arguments, in argument order."""
    found = []
    torch.fx.node.map_arg((node.args, node.kwargs), found.append)
    return found


class _AttentionOutput(torch.nn.Module):
    """Attention as one op (its Python internals cannot be traced)."""

    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def forward(self, query, key, value):
        return self.attention(query, key, value, need_weights=False)[0]


class _TupleAttention(torch.nn.Module):
    """Returns attention's (output, None) as a real tuple, so callers may unpack it.

    torch.fx cannot unpack a traced tuple under Python 3.11.
    """

    def __init__(self, attention):
        super().__init__()
        self.output = _AttentionOutput(attention)

    def forward(self, query, key, value, need_weights=False, **unused):
        return self.output(query, key, value), None


class _Tracer(torch.fx.Tracer):
    def is_leaf_module(self, module, qualified_name):
        return (isinstance(module, (_AttentionOutput, _PatchEmbedding)) or
                super().is_leaf_module(module, qualified_name))


def _make_traceable(model):
    """Wraps the parts of a vision transformer that torch.fx cannot trace."""
    if hasattr(model, "_process_input"):
        # Registered as a submodule (so the tracer can name it) and set on the
        # instance (so forward's self._process_input finds it before the method).
        patch_embedding = _PatchEmbedding(model._process_input)
        model.add_module("patch_embedding", patch_embedding)
        object.__setattr__(model, "_process_input", patch_embedding)
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.MultiheadAttention):
                setattr(parent, name, _TupleAttention(child))


class _PatchEmbedding(torch.nn.Module):
    """A vision transformer's input step as one op (it unpacks x.shape in Python)."""

    def __init__(self, process_input):
        super().__init__()
        self.process_input = process_input

    def forward(self, x):
        return self.process_input(x)


def _fold_batch_norms(graph_module):
    """Folds each BatchNorm2d that only follows a Conv2d into it (eval mode)."""
    modules = dict(graph_module.named_modules())
    graph = graph_module.graph
    for node in list(graph.nodes):
        if node.op != "call_module" or not isinstance(
                modules[node.target], torch.nn.BatchNorm2d):
            continue
        producer = node.args[0]
        if (not isinstance(producer, torch.fx.Node) or producer.op != "call_module" or
                not isinstance(modules[producer.target], torch.nn.Conv2d) or
                len(producer.users) > 1):
            continue
        folded = fuse_conv_bn_eval(modules[producer.target], modules[node.target])
        parent_name, _, name = producer.target.rpartition(".")
        setattr(graph_module.get_submodule(parent_name), name, folded)
        modules[producer.target] = folded
        node.replace_all_uses_with(producer)
        graph.erase_node(node)
    graph_module.recompile()


def trace_model(model, example, fuse):
    """Returns (graph module, module table) with tensor_meta on every node."""
    model.eval()
    _make_traceable(model)
    graph = _Tracer().trace(model)
    graph_module = torch.fx.GraphModule(model, graph)
    if fuse:
        _fold_batch_norms(graph_module)
    with torch.no_grad():
        ShapeProp(graph_module).propagate(example)
    return graph_module, dict(graph_module.named_modules())


def extract_buffers(graph_module, modules, fuse):
    """Returns the buffers as dicts {first_task, last_task, size} and the op count.

    Only computed tensors count: model inputs, weights and non-tensor values
    (shapes, sizes) are not intermediate tensors.
    """
    buffer_of = {}  # node -> index into `buffers` (aliases map to their source)
    buffers = []
    task = -1
    for node in graph_module.graph.nodes:
        if node.op in ("placeholder", "get_attr"):
            continue
        if node.op == "output":
            for source in _tensor_inputs(node):
                if source in buffer_of:
                    buffers[buffer_of[source]]["last_task"] = max(task, 0)
            continue
        meta = node.meta.get("tensor_meta")
        size = _tensor_bytes(meta)
        inputs = [n for n in _tensor_inputs(node) if n in buffer_of]
        first_input = inputs[0] if inputs else None
        if fuse and first_input is not None and size > 0 and (
                _is_view(node, modules) or
                (_is_activation(node, modules) and len(first_input.users) == 1)):
            # Shares its input's buffer: no new tensor and no new operator.
            buffer_of[node] = buffer_of[first_input]
            continue
        if node.op == "call_function" and node.target is operator.getitem and size:
            # An element or slice of a computed value: a view of its buffer.
            if first_input is not None:
                buffer_of[node] = buffer_of[first_input]
            continue
        if size == 0:
            continue  # shape arithmetic and other non-tensor values
        task += 1
        for source in inputs:
            buffers[buffer_of[source]]["last_task"] = task
        buffer_of[node] = len(buffers)
        buffers.append({"first_task": task, "last_task": task, "size": size,
                        "name": node.name})
    return buffers, task + 1


def format_csv(buffers):
    lines = ["id,first_task,last_task,size"]
    for index, buffer in enumerate(buffers):
        lines.append(f"{index},{buffer['first_task']},{buffer['last_task']},"
                     f"{buffer['size']}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help=f"one of: {', '.join(model_zoo.names())}")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--resolution", type=int, default=None,
                        help="input height and width (default: the model's own)")
    parser.add_argument("--no-fuse", dest="fuse", action="store_false",
                        help="keep PyTorch's eager graph (no folding or sharing)")
    parser.add_argument("-o", "--output", help="CSV path (default: stdout)")
    args = parser.parse_args(argv)

    try:
        model, example = model_zoo.build(args.model, args.batch, args.resolution)
    except ValueError as error:
        print(f"export_buffers: {error}", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    graph_module, modules = trace_model(model, example, args.fuse)
    buffers, operators = extract_buffers(graph_module, modules, args.fuse)
    text = format_csv(buffers)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
    else:
        sys.stdout.write(text)
    total = sum(b["size"] for b in buffers)
    print(f"{args.model}: {len(buffers)} intermediate tensors over {operators} "
          f"operators, {total} bytes ({total / 1e6:.1f} MB) with one buffer each",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
