"""Refitting one ONNX template with new weights, on ONNX Runtime, and the faults study 2 injects.

The campaign's runtime (ONNX Runtime on CPU) builds every artifact fresh.
The paper's deployment instead compiled a *template* once and refitted new
weights into it (TensorRT, paper 5.3 / 6.2; ``publish.tensorrt_runtime``).
:class:`RefitOrtRuntime` is that refit path on ONNX Runtime: the template is
the first artifact's canonical QDQ graph (``publish.qdq``) and building an
artifact writes each of its initializers into the template *by name* (the
refitter's contract: names it does not know are not installed) and compiles
the result. With the retained template (``distinct_scale_template``) every
name exists and the refit reproduces a fresh build exactly.

The faults:

- :func:`fold_equal_scales`: the template's quantisation scales that are
  equal are merged into one initializer, as a compiler may do when it sees
  equal constants; a later refit with unequal scales installs only the
  surviving name's value, and the others silently read it (the paper's defect:
  equal template scales + optimisation + a refit with unequal scales).
- :func:`scramble_layer`: one convolution's weights permuted.
- :func:`wrong_scale`: one activation quantisation scale multiplied by a factor.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from chesszero.publish.artifact import Artifact, atomic_write_bytes, load_artifact
from chesszero.publish.qdq import canonical_qdq_model, quantizer_groups
from chesszero.publish.runtime import OrtRuntime, OrtSession, _as_artifact

__all__ = ["RefitOrtRuntime", "equalize_scales", "fold_equal_scales", "refit_model", "scramble_layer", "wrong_scale"]


_SHAPE_CONSTANT = 8


def _scale_names(graph: onnx.GraphProto) -> list[list[str]]:
    return [[node.input[1] for node in group] for group in quantizer_groups(graph)]


def equalize_scales(canonical: onnx.ModelProto, value: float = 6.0 / 255.0) -> onnx.ModelProto:
    """A copy whose scalar (activation) scales all equal ``value``: a template exported
    before calibration, every range at ReLU6's default [0, 6]."""
    out = onnx.ModelProto()
    out.CopyFrom(canonical)
    inits = {i.name: i for i in out.graph.initializer}
    for names in _scale_names(out.graph):
        for name in names:
            if int(np.prod(inits[name].dims)) == 1:
                shape = numpy_helper.to_array(inits[name]).shape
                inits[name].CopyFrom(numpy_helper.from_array(np.full(shape, value, np.float32), name))
    return out


def fold_equal_scales(canonical: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """The template with equal scalar scales merged into one initializer; (model, names removed)."""
    out = onnx.ModelProto()
    out.CopyFrom(canonical)
    inits = {i.name: i for i in out.graph.initializer}
    keeper: dict[bytes, str] = {}
    rename: dict[str, str] = {}
    for names in _scale_names(out.graph):
        for name in names:
            value = numpy_helper.to_array(inits[name])
            if value.size != 1 or name in rename:
                continue
            key = value.astype(np.float32).tobytes()
            first = keeper.setdefault(key, name)
            if first != name:
                rename[name] = first
    for node in out.graph.node:
        for i, name in enumerate(node.input):
            if name in rename:
                node.input[i] = rename[name]
    live = [i for i in out.graph.initializer if i.name not in rename]
    del out.graph.initializer[:]
    out.graph.initializer.extend(live)
    return out, len(rename)


def refit_model(template: onnx.ModelProto, weights: onnx.ModelProto) -> onnx.ModelProto:
    """``template`` with every initializer it names taken from ``weights`` (by name).

    A name of ``weights`` the template lacks is not installed (as a refitter
    ignores weights it has no slot for); a template tensor of at most
    ``_SHAPE_CONSTANT`` elements missing from ``weights`` stays as compiled
    (the exporter numbers such shape constants per export); any other
    missing name or a shape mismatch is a ``ValueError`` (another topology).
    """
    new = {i.name: i for i in canonical_qdq_model(weights).graph.initializer}
    out = onnx.ModelProto()
    out.CopyFrom(template)
    for init in out.graph.initializer:
        if init.name not in new:
            if int(np.prod(init.dims)) <= _SHAPE_CONSTANT:
                continue  # a shape constant compiled into the engine (its name is per export)
            raise ValueError(f"refit: the weights have no initializer {init.name!r} (another topology?)")
        src = new[init.name]
        if list(src.dims) != list(init.dims):
            raise ValueError(f"refit: {init.name!r} has shape {list(src.dims)}, the template {list(init.dims)}")
        init.CopyFrom(src)
    del out.metadata_props[:]
    out.metadata_props.extend(weights.metadata_props)
    return out


class RefitOrtRuntime(OrtRuntime):
    """ONNX Runtime sessions built by refitting one template (module docstring)."""

    name = "onnxruntime-cpu-refit"

    def __init__(self, template: onnx.ModelProto, *, threads: int | None = None) -> None:
        super().__init__(threads=threads)
        self.template = template
        self.refits = 0

    def build(self, artifact: Artifact | str | Path) -> OrtSession:
        import onnxruntime as ort

        artifact = _as_artifact(artifact)
        model = refit_model(self.template, onnx.load(str(artifact.path)))
        session = ort.InferenceSession(model.SerializeToString(), self.session_options(),
                                       providers=["CPUExecutionProvider"])
        self.refits += 1
        return OrtSession(artifact, session)


def _rewrite(artifact: Artifact, out: Path, change: str, edit: object) -> Artifact:
    model = onnx.load(str(artifact.path))
    inits = {i.name: i for i in model.graph.initializer}
    target = edit(model, inits)  # type: ignore[operator]
    if target is None:
        raise ValueError(f"{artifact.path}: nothing to {change}")
    atomic_write_bytes(out, model.SerializeToString())
    torch_state = artifact.path.parent / artifact.metadata.torch_state
    if artifact.metadata.torch_state and torch_state.exists() and not (out.parent / torch_state.name).exists():
        (out.parent / torch_state.name).symlink_to(torch_state)
    return load_artifact(out)


def scramble_layer(artifact: Artifact, out: Path, *, seed: int = 0) -> Artifact:
    """A copy of the artifact with the first INT8 trunk convolution's weights permuted."""
    def edit(model: onnx.ModelProto, inits: dict[str, onnx.TensorProto]) -> str | None:
        for node in model.graph.node:
            name = node.input[0]
            if node.op_type == "QuantizeLinear" and name in inits and len(inits[name].dims) == 4:
                value = numpy_helper.to_array(inits[name])
                flat = value.reshape(-1).copy()
                np.random.default_rng(seed).shuffle(flat)
                inits[name].CopyFrom(numpy_helper.from_array(flat.reshape(value.shape), name))
                return name
        return None
    return _rewrite(artifact, out, "scramble (no INT8 convolution)", edit)


def wrong_scale(artifact: Artifact, out: Path, *, factor: float = 1.0 / 16.0) -> Artifact:
    """A copy with the first activation quantiser's scale multiplied by ``factor`` (Q and DQ alike);
    the default, 1/16, clips that activation at a sixteenth of its calibrated range."""
    def edit(model: onnx.ModelProto, inits: dict[str, onnx.TensorProto]) -> str | None:
        for names in _scale_names(model.graph):
            if len(names) > 1 and all(inits[n].dims == [] or int(np.prod(inits[n].dims)) == 1 for n in names):
                for name in names:
                    value = numpy_helper.to_array(inits[name]) * np.float32(factor)
                    inits[name].CopyFrom(numpy_helper.from_array(value.astype(np.float32), name))
                return names[0]
        return None
    return _rewrite(artifact, out, "rescale (no activation quantiser)", edit)
