"""Publication (SPEC 9): training network -> gated, active inference artifact.

Modules:

- ``quant_ops``: INT8 grids, activation quantiser, weight/bias fake quantisation.
- ``deploy_net``: the folded deployment network (optionally fake-quantised).
- ``fold``: BatchNorm and branch-scale folding into a deployment copy.
- ``policy_fold``: the policy head with query and key folded into one projection.
- ``calibration_positions``: the 516 calibration positions (format, loading, checksum).
- ``calibration``: the calibration positions as planes + legal masks + hash.
- ``quantize``: activation-range calibration and QAT fine-tuning (distillation).
- ``export``: ONNX export (FP32, INT8 QDQ) and the deployment torch state.
- ``qdq``: ONNX graph utilities (canonical QDQ naming, distinct-scale template).
- ``artifact``: ONNX metadata, validated loading, activation state file.
- ``runtime``: the runtime interface; ONNX Runtime CPU and PyTorch.
- ``torch_cuda``: the PyTorch session on CUDA (autocast, CUDA graphs, pinned buffers).
- ``ort_gpu``: ONNX Runtime's CUDA/TensorRT providers (``onnxruntime-gpu``).
- ``tensorrt_runtime``: TensorRT (only with the ``tensorrt`` package and a GPU).
- ``backends``: inference backends by name (``inference.backend``): check, build.
- ``fidelity``: agreement / KL / WDL comparison and its JSON report.
- ``pipeline``: ``publish`` and ``gate_and_activate``.
- ``loading``: ``load_evaluator``, the one way from a model file to an evaluator.

Typical use::

    from chesszero.publish import PublishSettings, load_calibration_set, publish
    calib = load_calibration_set(limit=cfg.publish.calibration_positions)
    result = publish("ckpt.pt", "artifacts/gen-0012", calib,
                     settings=PublishSettings.from_config(cfg.publish),
                     state_path="artifacts/active.json")
    if not result.activated:
        print(result.gate.error or result.gate.report.failures)
"""

from chesszero.publish.artifact import (
    ActiveArtifact,
    Artifact,
    ArtifactError,
    ArtifactMetadata,
    EncodingVersionError,
    Precision,
    load_artifact,
    read_activation,
    write_activation,
)
from chesszero.publish.calibration import (
    CalibrationSet,
    calibration_set_from_games,
    load_calibration_set,
)
from chesszero.publish.deploy_net import DeployNet
from chesszero.publish.export import Provenance, export_onnx, load_deploy_state, save_deploy_state
from chesszero.publish.fidelity import FidelityReport, FidelityThresholds, measure_fidelity
from chesszero.publish.fold import fold_conv_bn, fold_network
from chesszero.publish.pipeline import (
    GateOutcome,
    PublishResult,
    PublishSettings,
    gate_and_activate,
    network_sha256,
    publish,
)
from chesszero.publish.quant_ops import QuantMode, QuantScheme
from chesszero.publish.quantize import QatSettings, calibrate, finetune, quantize_network
from chesszero.publish.runtime import OrtRuntime, Runtime, Session, TorchRuntime

__all__ = [
    "ActiveArtifact",
    "Artifact",
    "ArtifactError",
    "ArtifactMetadata",
    "CalibrationSet",
    "DeployNet",
    "EncodingVersionError",
    "FidelityReport",
    "FidelityThresholds",
    "GateOutcome",
    "OrtRuntime",
    "Precision",
    "Provenance",
    "PublishResult",
    "PublishSettings",
    "QatSettings",
    "QuantMode",
    "QuantScheme",
    "Runtime",
    "Session",
    "TorchRuntime",
    "calibrate",
    "calibration_set_from_games",
    "export_onnx",
    "finetune",
    "fold_conv_bn",
    "fold_network",
    "gate_and_activate",
    "load_artifact",
    "load_calibration_set",
    "load_deploy_state",
    "measure_fidelity",
    "network_sha256",
    "publish",
    "quantize_network",
    "read_activation",
    "save_deploy_state",
    "write_activation",
]
