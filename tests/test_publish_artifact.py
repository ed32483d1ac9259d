"""Artifact files: metadata, refusal of foreign or broken files, activation state, runtimes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper
from publish_support import calibration, one_thread, random_games, trained_net  # noqa: F401

from chesszero import core
from chesszero.publish.artifact import (
    Artifact,
    ArtifactError,
    ArtifactMetadata,
    EncodingVersionError,
    Precision,
    load_artifact,
    read_activation,
    update_metadata,
    write_activation,
)
from chesszero.publish.calibration import load_calibration_set
from chesszero.publish.calibration_positions import CalibrationPosition, save_positions
from chesszero.publish.export import Provenance, export_onnx, load_deploy_state, save_deploy_state
from chesszero.publish.fold import fold_network
from chesszero.publish.quantize import quantize_network
from chesszero.publish.runtime import OrtRuntime, TorchRuntime
from chesszero.search.evaluators import Evaluator


@pytest.fixture(scope="module")
def fp32_artifact(tmp_path_factory: pytest.TempPathFactory) -> Artifact:
    root = tmp_path_factory.mktemp("artifact")
    deploy = fold_network(trained_net())
    save_deploy_state(deploy, root / "fp32.pt")
    return export_onnx(deploy, root / "fp32.onnx", Provenance("abc", "def", 128), torch_state="fp32.pt")


def _copy(artifact: Artifact, dest: Path) -> Path:
    dest.write_bytes(artifact.path.read_bytes())
    return dest


def test_metadata_round_trips_through_onnx_props() -> None:
    meta = ArtifactMetadata(
        encoding_version=3, network_size="6x64", precision=Precision.INT8, checkpoint_sha256="a" * 64,
        calibration_sha256="b" * 64, calibration_positions=516, quant_scheme="cpu",
        torch_state="int8.pt", fidelity={"passed": True, "kl_mean": 0.001}, created_at="now",
    )
    props = meta.to_props()
    assert all(key.startswith("chesszero.") and isinstance(v, str) for key, v in props.items())
    assert ArtifactMetadata.from_props(props, source="x") == meta


def test_exported_artifact_carries_its_provenance(fp32_artifact: Artifact) -> None:
    meta = load_artifact(fp32_artifact.path).metadata
    assert meta.encoding_version == int(core.ENCODING_VERSION)
    assert (meta.network_size, meta.precision, meta.quant_scheme) == ("2x16", Precision.FP32, "")
    assert (meta.checkpoint_sha256, meta.calibration_sha256, meta.calibration_positions) == ("abc", "def", 128)
    assert fp32_artifact.sha256 == hashlib.sha256(fp32_artifact.path.read_bytes()).hexdigest()


def test_encoding_version_mismatch_is_refused(fp32_artifact: Artifact, tmp_path: Path) -> None:
    path = _copy(fp32_artifact, tmp_path / "old.onnx")
    update_metadata(path, encoding_version=int(core.ENCODING_VERSION) - 1)
    with pytest.raises(EncodingVersionError, match="encoding version") as info:
        load_artifact(path)
    assert str(path) in str(info.value)
    with pytest.raises(EncodingVersionError):
        OrtRuntime(threads=1).build(path)
    assert load_artifact(path, check_encoding=False).metadata.encoding_version == core.ENCODING_VERSION - 1


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "not an ONNX model"), (b"\x08\x07garbage\xff\xfe" * 50, "not an ONNX model"),
     (b"ir_version: 7", "not an ONNX model")],
)
def test_non_onnx_files_are_refused_naming_the_file(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(content)
    with pytest.raises(ArtifactError, match=message) as info:
        load_artifact(path)
    assert str(path) in str(info.value)


def test_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="not found"):
        load_artifact(tmp_path / "nothing.onnx")


def _plain_model(inputs: list[str], outputs: list[str]) -> onnx.ModelProto:
    nodes = [helper.make_node("Identity", [inputs[0]], [name]) for name in outputs]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_onnx_without_chesszero_metadata_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plain.onnx"
    onnx.save(_plain_model(["planes"], ["policy_logits", "wdl"]), str(path))
    with pytest.raises(ArtifactError, match="not a chesszero artifact") as info:
        load_artifact(path)
    assert str(path) in str(info.value) and "chesszero.encoding_version" in str(info.value)


def test_wrong_inputs_or_outputs_are_refused(fp32_artifact: Artifact, tmp_path: Path) -> None:
    model = _plain_model(["x"], ["policy_logits", "wdl"])
    model.metadata_props.extend(onnx.load(str(fp32_artifact.path)).metadata_props)
    path = tmp_path / "renamed.onnx"
    onnx.save(model, str(path))
    with pytest.raises(ArtifactError, match="expected input 'planes'"):
        load_artifact(path)


def test_malformed_metadata_is_refused(fp32_artifact: Artifact, tmp_path: Path) -> None:
    path = _copy(fp32_artifact, tmp_path / "odd.onnx")
    model = onnx.load(str(path))
    for prop in model.metadata_props:
        if prop.key == "chesszero.precision":
            prop.value = "fp7"
    onnx.save(model, str(path))
    with pytest.raises(ArtifactError, match="malformed chesszero metadata"):
        load_artifact(path)


def test_metadata_update_keeps_the_network(fp32_artifact: Artifact, tmp_path: Path) -> None:
    path = _copy(fp32_artifact, tmp_path / "copy.onnx")
    planes = calibration().planes
    before = OrtRuntime(threads=1).build(path).evaluate(planes)
    updated = update_metadata(path, fidelity={"passed": False})
    after = OrtRuntime(threads=1).build(updated).evaluate(planes)
    assert updated.metadata.fidelity == {"passed": False}
    assert updated.sha256 != fp32_artifact.sha256
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)
    assert list(tmp_path.iterdir()) == [path]  # no temp files left behind


def test_activation_state_round_trip(fp32_artifact: Artifact, tmp_path: Path) -> None:
    state = tmp_path / "state" / "active.json"
    assert read_activation(state) is None
    first = write_activation(state, fp32_artifact, {"passed": True})
    assert read_activation(state) == first and first.previous is None
    second = write_activation(state, fp32_artifact)
    assert read_activation(state).previous == str(fp32_artifact.path.resolve())
    assert second.sha256 == fp32_artifact.sha256
    assert json.loads(state.read_text())["path"] == str(fp32_artifact.path.resolve())
    assert [p.name for p in state.parent.iterdir()] == ["active.json"]
    state.write_text("{ not json")
    with pytest.raises(ValueError, match=str(state)):
        read_activation(state)


def test_torch_runtime_builds_from_the_artifact(fp32_artifact: Artifact) -> None:
    planes = calibration().planes
    policy, wdl = TorchRuntime().build(fp32_artifact).evaluate(planes)
    ort_policy, ort_wdl = OrtRuntime(threads=1).build(fp32_artifact).evaluate(planes)
    np.testing.assert_allclose(policy, ort_policy, atol=1e-4)
    np.testing.assert_allclose(wdl, ort_wdl, atol=1e-5)


def test_torch_runtime_refuses_artifacts_without_or_with_broken_state(
    fp32_artifact: Artifact, tmp_path: Path
) -> None:
    no_state = update_metadata(_copy(fp32_artifact, tmp_path / "a.onnx"), torch_state="")
    with pytest.raises(ArtifactError, match="no deployment state"):
        TorchRuntime().build(no_state)
    bad = tmp_path / "bad.pt"
    torch.save({"format": 99}, bad)
    with pytest.raises(ArtifactError, match="not a usable deployment state") as info:
        load_deploy_state(bad, precision=Precision.FP32)
    assert str(bad) in str(info.value)
    (tmp_path / "text.pt").write_text("hello")
    with pytest.raises(ArtifactError, match="text.pt"):
        load_deploy_state(tmp_path / "text.pt", precision=Precision.FP32)


@pytest.mark.parametrize("int8_stem", [False, True])
def test_deploy_state_round_trip_keeps_the_int8_network(tmp_path: Path, int8_stem: bool) -> None:
    """save/load of a fake-quantised network (its stem mode, corrections and ranges) computes the same."""
    int8 = quantize_network(fold_network(trained_net(), int8_stem=int8_stem), calibration())
    save_deploy_state(int8, tmp_path / "int8.pt")
    again = load_deploy_state(tmp_path / "int8.pt", precision=Precision.INT8)
    assert again.int8_stem is int8_stem
    x = torch.from_numpy(calibration().planes.copy())
    with torch.no_grad():
        for a, b in zip(int8(x), again(x), strict=True):
            torch.testing.assert_close(a, b)


def test_deploy_state_of_format_one_still_loads(tmp_path: Path) -> None:
    """A state written before INT8 stems and bias corrections (format 1) loads as a float-stem network."""
    int8 = quantize_network(fold_network(trained_net()), calibration())
    save_deploy_state(int8, tmp_path / "int8.pt")
    state = torch.load(tmp_path / "int8.pt", weights_only=True)
    state["format"] = 1
    del state["int8_stem"]
    state["state_dict"] = {k: v for k, v in state["state_dict"].items() if not k.endswith("bias_correction")}
    torch.save(state, tmp_path / "old.pt")
    old = load_deploy_state(tmp_path / "old.pt", precision=Precision.INT8)
    x = torch.from_numpy(calibration().planes.copy())
    with torch.no_grad():
        torch.testing.assert_close(old(x)[0], int8(x)[0])


def test_runtime_without_active_session_refuses_to_evaluate() -> None:
    runtime = OrtRuntime(threads=1)
    with pytest.raises(RuntimeError, match="no artifact is active"):
        runtime.evaluate(calibration().planes)
    with pytest.raises(ValueError, match="threads"):
        OrtRuntime(threads=0)


def test_sessions_reject_malformed_planes(fp32_artifact: Artifact) -> None:
    session = OrtRuntime(threads=1).build(fp32_artifact)
    with pytest.raises(ValueError, match=r"\[N, 52, 8, 8\]"):
        session.evaluate(np.zeros((2, 51, 8, 8), np.float32))


def test_calibration_set_from_positions_file(tmp_path: Path) -> None:
    games = random_games(6, seed=3)
    positions = [
        CalibrationPosition(id=f"p{i}", start_fen=g.start_fen(), moves=tuple(g.moves()), fen=g.fen())
        for i, g in enumerate(games)
    ]
    path = tmp_path / "positions.jsonl"
    save_positions(positions, path)
    calib = load_calibration_set(path)
    assert len(calib) == 6 and calib.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    np.testing.assert_array_equal(calib.planes, core.encode_batch(games))
    np.testing.assert_array_equal(calib.legal, np.stack([g.legal_mask() for g in games]))
    first = load_calibration_set(path, limit=4)
    assert len(first) == 4 and first.sha256 != calib.sha256
    with pytest.raises(ValueError, match="6 calibration positions, 7 requested"):
        load_calibration_set(path, limit=7)


def test_runtimes_and_sessions_are_search_evaluators(fp32_artifact: Artifact) -> None:
    runtime = OrtRuntime(threads=1)
    session = runtime.build(fp32_artifact)
    runtime.activate(session)
    torch_session = TorchRuntime().build(fp32_artifact)
    for evaluator in (runtime, session, torch_session):
        assert isinstance(evaluator, Evaluator)
        policy, wdl = evaluator.evaluate(calibration().planes[:3])
        assert policy.shape == (3, 1880) and policy.dtype == np.float32
        np.testing.assert_allclose(wdl.sum(axis=1), 1.0, rtol=1e-5)
