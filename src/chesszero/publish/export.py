"""Exporting a deployment network: ONNX (FP32 or INT8 QDQ) and its torch state.

:func:`export_onnx` writes a float :class:`DeployNet` as an FP32 artifact
and a fake-quantised one as an INT8 artifact with explicit
QuantizeLinear/DequantizeLinear nodes (TorchScript exporter,
``dynamo=False``: the dynamo exporter cannot export fake quantisation).
Before export, a copy of the network is frozen (:meth:`DeployNet.freeze`), so
every scale is a constant and every conv bias is already on its int32 grid:
the QDQ graph computes what the fake-quantised torch model computes.  The
exported graph is checked to carry one QuantizeLinear per quantised weight
and per activation quantiser (an exporter that silently dropped fake
quantisation would otherwise produce a float "INT8" artifact), and stored in
canonical QDQ form (:func:`~chesszero.publish.qdq.canonical_qdq_model`: each
Q/DQ node's scale is an initializer named ``<node name>::scale``).

:func:`save_deploy_state` / :func:`load_deploy_state` store the deployment
network itself (for the PyTorch eager runtime), tensors only.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import warnings
from datetime import datetime, timezone
from pathlib import Path

import onnx
import torch

from chesszero import core
from chesszero.model.network import ChessNet
from chesszero.publish.artifact import (
    INPUT_NAME,
    MOVES_LEFT_OUTPUT,
    OUTPUT_NAMES,
    Artifact,
    ArtifactError,
    ArtifactMetadata,
    Precision,
    atomic_write_bytes,
    load_artifact,
)
from chesszero.publish.deploy_net import DeployNet
from chesszero.publish.fold import fold_network
from chesszero.publish.qdq import canonical_qdq_model
from chesszero.publish.quant_ops import QuantMode, QuantScheme

__all__ = [
    "OPSET",
    "Provenance",
    "export_onnx",
    "load_deploy_state",
    "save_deploy_state",
]

OPSET = 17
"""ONNX opset of exported artifacts (and the minimum accepted)."""
_STATE_FORMAT = 2
"""2 adds ``int8_stem`` and each convolution's ``bias_correction`` buffer; a
format-1 state (float stem, no corrections) still loads.  ``moves_left``
(the folded length head kept) is optional: a state without it has none."""


@dataclasses.dataclass(frozen=True)
class Provenance:
    """Where an artifact comes from (recorded in its metadata)."""

    checkpoint_sha256: str
    calibration_sha256: str
    calibration_positions: int
    tuning_sha256: str = ""
    """Positions that set activation ranges and QAT (empty: not recorded)."""
    tuning_source: str = ""


def _precision(net: DeployNet) -> Precision:
    if net.quant_mode is QuantMode.FAKE_QUANT:
        return Precision.INT8
    if net.quant_mode is QuantMode.FLOAT:
        return Precision.FP32
    raise ValueError(f"cannot export a network in quant mode {net.quant_mode.value!r}")


def _expected_quantize_nodes(net: DeployNet) -> int:
    return sum(1 for _ in net.quantized_convs()) + sum(1 for _ in net.act_quants())


def _to_onnx(net: DeployNet, opset: int) -> onnx.ModelProto:
    example = torch.zeros(2, core.NUM_PLANES, 8, 8)
    buffer = io.BytesIO()
    batch = {0: "batch"}
    outputs = [*OUTPUT_NAMES, MOVES_LEFT_OUTPUT] if net.moves_left else list(OUTPUT_NAMES)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer chatter about constants is expected here
        torch.onnx.export(
            net,
            (example,),
            buffer,
            input_names=[INPUT_NAME],
            output_names=outputs,
            dynamic_axes={name: batch for name in (INPUT_NAME, *outputs)},
            opset_version=opset,
            do_constant_folding=True,
            dynamo=False,
        )
    return onnx.load_from_string(buffer.getvalue())


def export_onnx(
    net: DeployNet,
    path: str | Path,
    provenance: Provenance,
    *,
    torch_state: str = "",
    opset: int = OPSET,
) -> Artifact:
    """Export ``net`` (float -> FP32, fake-quantised -> INT8 QDQ) to ``path``, atomically.

    ``net`` is not modified.  ``torch_state`` names a companion file written
    by :func:`save_deploy_state` next to ``path`` (recorded in the metadata).
    Returns the validated :class:`Artifact`.
    """
    if opset < OPSET:
        raise ValueError(f"opset {opset} is not supported; artifacts use opset >= {OPSET}")
    precision = _precision(net)
    frozen = copy.deepcopy(net).cpu().eval()
    if precision is Precision.INT8:
        frozen.freeze()
    model = _to_onnx(frozen, opset)
    if precision is Precision.INT8:
        model = canonical_qdq_model(model)
    quantize_nodes = sum(1 for node in model.graph.node if node.op_type == "QuantizeLinear")
    expected = _expected_quantize_nodes(net) if precision is Precision.INT8 else 0
    if quantize_nodes != expected:
        raise RuntimeError(
            f"ONNX export produced {quantize_nodes} QuantizeLinear nodes, expected {expected} "
            f"for a {precision.value} {net.size.name} network"
        )
    onnx.checker.check_model(model)
    metadata = ArtifactMetadata(
        encoding_version=int(core.ENCODING_VERSION),
        network_size=net.size.name,
        precision=precision,
        checkpoint_sha256=provenance.checkpoint_sha256,
        calibration_sha256=provenance.calibration_sha256,
        calibration_positions=provenance.calibration_positions,
        tuning_sha256=provenance.tuning_sha256,
        tuning_source=provenance.tuning_source,
        quant_scheme=net.quant_scheme.value if precision is Precision.INT8 else "",
        torch_state=torch_state,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    for key, value in metadata.to_props().items():
        model.metadata_props.add(key=key, value=value)
    atomic_write_bytes(path, model.SerializeToString())
    return load_artifact(path)


def save_deploy_state(net: DeployNet, path: str | Path) -> Path:
    """Write the deployment network (weights and calibrated ranges) for torch runtimes."""
    state = {
        "format": _STATE_FORMAT,
        "encoding_version": int(core.ENCODING_VERSION),
        "network_size": net.size.name,
        "quant_scheme": net.quant_scheme.value,
        "int8_stem": net.int8_stem,
        "moves_left": net.moves_left,
        "state_dict": {k: v.detach().cpu().clone() for k, v in net.state_dict().items()
                       if not k.endswith(("export_scales", "export_bias"))},
    }
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return atomic_write_bytes(path, buffer.getvalue())


def load_deploy_state(path: str | Path, *, precision: Precision) -> DeployNet:
    """Rebuild a deployment network saved by :func:`save_deploy_state` (CPU, eval).

    ``precision`` selects float (FP32) or fake-quantised (INT8) execution.
    Raises :class:`ArtifactError` naming the file when it is not such a state.
    """
    path = Path(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(state, dict) or state.get("format") not in (1, _STATE_FORMAT):
            raise ValueError(f"format {state.get('format') if isinstance(state, dict) else None!r}")
        if int(state["encoding_version"]) != int(core.ENCODING_VERSION):
            raise ValueError(
                f"encoding version {state['encoding_version']} differs from the core's "
                f"{core.ENCODING_VERSION}"
            )
        int8_stem = bool(state.get("int8_stem", False))
        moves_left = bool(state.get("moves_left", False))
        net = fold_network(ChessNet(str(state["network_size"]), aux_heads=moves_left).eval(), int8_stem=int8_stem,
                           moves_left=moves_left)
        weights = dict(state["state_dict"])
        if state["format"] == 1:  # before bias corrections existed: they were zero
            weights |= {k: v for k, v in net.state_dict().items() if k.endswith("bias_correction")}
        net.load_state_dict(weights)
        net.set_quant_scheme(QuantScheme(state["quant_scheme"]))
    except (OSError, RuntimeError, ValueError, KeyError) as error:
        raise ArtifactError(f"{path}: not a usable deployment state ({error})") from error
    net.set_quant_mode(QuantMode.FAKE_QUANT if precision is Precision.INT8 else QuantMode.FLOAT)
    return net.eval().requires_grad_(False)

