"""Published artifacts: ONNX metadata, validated loading, and the activation state.

An artifact is an ONNX file (input ``planes [N, 52, 8, 8]``, outputs
``policy_logits [N, 1880]`` and softmaxed ``wdl [N, 3]``, and optionally
``moves_left [N]``, the plies left by the length head) whose
``metadata_props`` say what it is (:class:`ArtifactMetadata`): the core's
encoding version, network size, precision and quantisation scheme, the
SHA-256 of the checkpoint and of the calibration set, and the fidelity
summary.  :func:`load_artifact` refuses anything else with an
:class:`ArtifactError` naming the file -- in particular an artifact written
for another encoding version (:class:`EncodingVersionError`), because such a
network loads, runs and is quietly wrong.

The activation state (:class:`ActiveArtifact`) is a small JSON file naming
the artifact actors should use; :func:`write_activation` replaces it
atomically (temp file, fsync, rename), so readers see the old or the new
record, never a torn one.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import onnx

from chesszero import core
from chesszero.fsio import atomic_write_bytes, file_sha256

__all__ = [
    "ARTIFACT_FORMAT",
    "INPUT_NAME",
    "MOVES_LEFT_OUTPUT",
    "OUTPUT_NAMES",
    "ActiveArtifact",
    "Artifact",
    "ArtifactError",
    "ArtifactMetadata",
    "EncodingVersionError",
    "Precision",
    "atomic_write_bytes",
    "load_artifact",
    "read_activation",
    "update_metadata",
    "write_activation",
]

ARTIFACT_FORMAT = 1
"""Bumped when the artifact's inputs, outputs or metadata change meaning."""
INPUT_NAME = "planes"
OUTPUT_NAMES = ("policy_logits", "wdl")
MOVES_LEFT_OUTPUT = "moves_left"
"""Optional third output: plies left in the game (the remaining-length head,
kept for the search's moves-left utility); ``Artifact.moves_left`` says whether
an artifact has it."""
_PREFIX = "chesszero."


class ArtifactError(ValueError):
    """A file that is not a usable chesszero artifact; the message names the file."""


class EncodingVersionError(ArtifactError):
    """The artifact was exported for a different input/action encoding than the core's."""


class Precision(str, enum.Enum):
    """Arithmetic of the exported network."""

    FP32 = "fp32"
    INT8 = "int8"


@dataclass(frozen=True)
class ArtifactMetadata:
    """What an artifact is; stored as ``chesszero.*`` ONNX metadata_props."""

    encoding_version: int
    network_size: str
    precision: Precision
    checkpoint_sha256: str
    calibration_sha256: str
    calibration_positions: int
    quant_scheme: str = ""
    """:class:`~chesszero.publish.quant_ops.QuantScheme` value for INT8, empty for FP32."""
    tuning_sha256: str = ""
    """Hash of the positions that set activation ranges and fine-tuned QAT."""
    tuning_source: str = ""
    """What those positions were (replay rows with their sequence range, random play, ...);
    the fidelity gate's own positions (``calibration_*``) are never among them."""
    torch_state: str = ""
    """File name (next to the ONNX file) of the deployment network's torch state, if any."""
    fidelity: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Fidelity report summary (empty until the gate has run)."""
    created_at: str = ""
    format: int = ARTIFACT_FORMAT

    def to_props(self) -> dict[str, str]:
        """String key/value pairs for ``ModelProto.metadata_props``."""
        out: dict[str, str] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, enum.Enum):
                value = value.value
            elif isinstance(value, dict):
                value = json.dumps(value, sort_keys=True)
            out[_PREFIX + field.name] = str(value)
        return out

    @classmethod
    def from_props(cls, props: dict[str, str], *, source: str) -> ArtifactMetadata:
        """Parse metadata_props; raises :class:`ArtifactError` naming ``source``."""
        required = ("format", "encoding_version", "network_size", "precision",
                    "checkpoint_sha256", "calibration_sha256", "calibration_positions")
        missing = [key for key in required if _PREFIX + key not in props]
        if missing:
            raise ArtifactError(
                f"{source}: not a chesszero artifact (missing metadata {', '.join(_PREFIX + k for k in missing)})"
            )
        try:
            fmt = int(props[_PREFIX + "format"])
            if fmt != ARTIFACT_FORMAT:
                raise ArtifactError(f"{source}: artifact format {fmt}, this code reads {ARTIFACT_FORMAT}")
            fidelity = props.get(_PREFIX + "fidelity", "") or "{}"
            return cls(
                encoding_version=int(props[_PREFIX + "encoding_version"]),
                network_size=props[_PREFIX + "network_size"],
                precision=Precision(props[_PREFIX + "precision"]),
                checkpoint_sha256=props[_PREFIX + "checkpoint_sha256"],
                calibration_sha256=props[_PREFIX + "calibration_sha256"],
                calibration_positions=int(props[_PREFIX + "calibration_positions"]),
                quant_scheme=props.get(_PREFIX + "quant_scheme", ""),
                tuning_sha256=props.get(_PREFIX + "tuning_sha256", ""),
                tuning_source=props.get(_PREFIX + "tuning_source", ""),
                torch_state=props.get(_PREFIX + "torch_state", ""),
                fidelity=json.loads(fidelity),
                created_at=props.get(_PREFIX + "created_at", ""),
                format=fmt,
            )
        except (ValueError, json.JSONDecodeError) as error:
            if isinstance(error, ArtifactError):
                raise
            raise ArtifactError(f"{source}: malformed chesszero metadata: {error}") from error


@dataclass(frozen=True)
class Artifact:
    """A validated artifact file."""

    path: Path
    metadata: ArtifactMetadata
    sha256: str
    moves_left: bool = False
    """Whether the network also outputs the plies left (:data:`MOVES_LEFT_OUTPUT`)."""


def _load_model(path: Path) -> onnx.ModelProto:
    if not path.is_file():
        raise ArtifactError(f"{path}: artifact file not found")
    try:
        model = onnx.load(str(path))
    except Exception as error:  # protobuf raises DecodeError, RuntimeWarning, ... on junk
        raise ArtifactError(f"{path}: not an ONNX model ({type(error).__name__}: {error})") from error
    if model.ir_version == 0 or not model.graph.node:  # e.g. an empty file parses as an empty proto
        raise ArtifactError(f"{path}: not an ONNX model (no IR version or no graph)")
    return model


def _check_signature(model: onnx.ModelProto, source: str) -> bool:
    """Whether the model has the moves-left output; ArtifactError when the signature is wrong."""
    inputs = [i.name for i in model.graph.input]
    outputs = tuple(o.name for o in model.graph.output)
    if inputs != [INPUT_NAME] or outputs not in (OUTPUT_NAMES, (*OUTPUT_NAMES, MOVES_LEFT_OUTPUT)):
        raise ArtifactError(
            f"{source}: expected input {INPUT_NAME!r} and outputs {OUTPUT_NAMES} (optionally followed by "
            f"{MOVES_LEFT_OUTPUT!r}), found inputs {inputs} and outputs {list(outputs)}"
        )
    return len(outputs) == 3


def load_artifact(path: str | Path, *, check_encoding: bool = True) -> Artifact:
    """Validate an artifact file and return it with its metadata.

    Raises :class:`ArtifactError` (naming the file) when it is missing, not an
    ONNX model, lacks chesszero metadata or has the wrong inputs/outputs, and
    :class:`EncodingVersionError` when its encoding version differs from
    ``core.ENCODING_VERSION`` (``check_encoding=False`` skips only that check,
    for inspection tools).
    """
    path = Path(path)
    model = _load_model(path)
    props = {p.key: p.value for p in model.metadata_props}
    metadata = ArtifactMetadata.from_props(props, source=str(path))
    if check_encoding and metadata.encoding_version != int(core.ENCODING_VERSION):
        raise EncodingVersionError(
            f"{path}: exported for encoding version {metadata.encoding_version}, but the "
            f"core uses encoding version {core.ENCODING_VERSION}; re-export it from its checkpoint"
        )
    moves_left = _check_signature(model, str(path))
    return Artifact(path=path, metadata=metadata, sha256=file_sha256(path), moves_left=moves_left)


def update_metadata(path: str | Path, **changes: Any) -> Artifact:
    """Rewrite some metadata fields of an artifact in place (atomically); returns it reloaded."""
    path = Path(path)
    model = _load_model(path)
    props = {p.key: p.value for p in model.metadata_props}
    metadata = dataclasses.replace(ArtifactMetadata.from_props(props, source=str(path)), **changes)
    props.update(metadata.to_props())
    del model.metadata_props[:]
    for key, value in sorted(props.items()):
        model.metadata_props.add(key=key, value=value)
    atomic_write_bytes(path, model.SerializeToString())
    return load_artifact(path, check_encoding=False)


@dataclass(frozen=True)
class ActiveArtifact:
    """The activation record: which artifact actors should load."""

    path: Path
    sha256: str
    activated_at: str
    fidelity: dict[str, Any]
    previous: str | None = None

    def to_json(self) -> str:
        data = dataclasses.asdict(self)
        data["path"] = str(self.path)
        return json.dumps(data, indent=2, sort_keys=True) + "\n"


def read_activation(state_path: str | Path) -> ActiveArtifact | None:
    """The current activation record, or ``None`` when nothing was ever activated."""
    state_path = Path(state_path)
    if not state_path.exists():
        return None
    try:
        data = json.loads(state_path.read_text())
        return ActiveArtifact(
            path=Path(data["path"]),
            sha256=str(data["sha256"]),
            activated_at=str(data["activated_at"]),
            fidelity=dict(data.get("fidelity", {})),
            previous=data.get("previous"),
        )
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ValueError(f"{state_path}: unreadable activation state: {error}") from error


def write_activation(
    state_path: str | Path, artifact: Artifact, fidelity: dict[str, Any] | None = None
) -> ActiveArtifact:
    """Atomically make ``artifact`` the active one; the previous record is remembered."""
    previous = read_activation(state_path)
    record = ActiveArtifact(
        path=artifact.path.resolve(),
        sha256=artifact.sha256,
        activated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        fidelity=dict(fidelity if fidelity is not None else artifact.metadata.fidelity),
        previous=None if previous is None else str(previous.path),
    )
    atomic_write_bytes(state_path, record.to_json().encode())
    return record
