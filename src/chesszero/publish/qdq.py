"""Pure ONNX graph utilities for explicit-quantisation (QDQ) models.

- :func:`canonical_qdq_model`: constants become initializers and every
  QuantizeLinear/DequantizeLinear node owns its scale and zero point, named
  ``<node name>::scale`` / ``<node name>::zero_point``.  Exported INT8
  artifacts are stored in this form, so each quantisation parameter can be
  read, checked or refitted by name; computation is unchanged.
- :func:`distinct_scale_template`: the same graph with all quantisation
  scales pairwise distinct (the TensorRT engine template, see
  :mod:`chesszero.publish.tensorrt_runtime`).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

__all__ = ["canonical_qdq_model", "distinct_scale_template", "quantizer_groups"]

_QDQ = ("QuantizeLinear", "DequantizeLinear")


def canonical_qdq_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy where constants are initializers and each Q/DQ node owns its scale and zero point.

    Names are derived from node names (stable for a given topology), so the
    canonical graphs of two publications of the same network size differ
    only in initializer values -- what a refit needs.  Computation is
    unchanged, and applying it twice changes nothing.
    """
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    inits = {i.name: i for i in graph.initializer}
    kept_nodes = []
    for node in graph.node:
        if node.op_type == "Constant" and len(node.attribute) == 1 and node.attribute[0].name == "value":
            tensor = onnx.TensorProto()
            tensor.CopyFrom(node.attribute[0].t)
            tensor.name = node.output[0]
            graph.initializer.append(tensor)
            inits[tensor.name] = tensor
        else:
            kept_nodes.append(node)
    del graph.node[:]
    graph.node.extend(kept_nodes)
    for index, node in enumerate(graph.node):
        if node.op_type not in _QDQ:
            continue
        base = node.name or f"{node.op_type}_{index}"
        for slot, role in ((1, "scale"), (2, "zero_point")):
            name = f"{base}::{role}"
            if slot >= len(node.input) or node.input[slot] not in inits or node.input[slot] == name:
                continue
            tensor = onnx.TensorProto()
            tensor.CopyFrom(inits[node.input[slot]])
            tensor.name = name
            graph.initializer.append(tensor)
            inits[tensor.name] = tensor
            node.input[slot] = tensor.name
    used = {name for node in graph.node for name in node.input}
    live = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(live)
    return out


def quantizer_groups(graph: onnx.GraphProto) -> list[list[onnx.NodeProto]]:
    """Q nodes with the DQ nodes reading them; lone DQ nodes on their own (graph order)."""
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    groups, grouped = [], set()
    for node in graph.node:
        if node.op_type == "QuantizeLinear":
            dqs = [c for c in consumers.get(node.output[0], []) if c.op_type == "DequantizeLinear"]
            groups.append([node, *dqs])
            grouped.update(id(n) for n in dqs)
    groups.extend([n] for n in graph.node if n.op_type == "DequantizeLinear" and id(n) not in grouped)
    return groups


def distinct_scale_template(canonical: onnx.ModelProto, *, step: float = 2.0**-12) -> onnx.ModelProto:
    """A copy of a canonical model whose quantisation scales are all pairwise distinct.

    Within a quantiser (a Q node and the DQ nodes reading it) the scales stay
    equal to each other; any scalar already used elsewhere is nudged by
    multiples of ``step`` (relative) until unique.  Only the template built
    into the engine is nudged: the first refit installs the real values.
    """
    out = onnx.ModelProto()
    out.CopyFrom(canonical)
    inits = {i.name: i for i in out.graph.initializer}
    seen: set[float] = set()
    for group in quantizer_groups(out.graph):
        names = [node.input[1] for node in group]
        if any(name not in inits for name in names):
            raise ValueError("distinct_scale_template needs a canonical model (run canonical_qdq_model)")
        values = numpy_helper.to_array(inits[names[0]]).astype(np.float32).copy()
        flat = values.reshape(-1)
        for i, value in enumerate(flat):
            k, candidate = 0, np.float32(value)
            while float(candidate) in seen:
                k += 1
                candidate = np.float32(value * (1.0 + k * step))
            flat[i] = candidate
            seen.add(float(candidate))
        for name in names:
            inits[name].CopyFrom(numpy_helper.from_array(values.reshape(values.shape), name))
    return out
