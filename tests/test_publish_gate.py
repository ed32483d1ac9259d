"""The publication pipeline and its fidelity gate: pass, reject, keep the previous artifact."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper
from publish_support import (  # noqa: F401
    assert_integer_kernels_agree,
    calibration,
    legal_kl,
    one_thread,
    random_games,
    torch_threads,
    trained_net,
)

from chesszero import core
from chesszero.model import ChessNet
from chesszero.publish.artifact import (
    Precision,
    load_artifact,
    read_activation,
    update_metadata,
)
from chesszero.publish.fidelity import FidelityThresholds
from chesszero.publish.pipeline import PublishResult, PublishSettings, gate_and_activate, publish
from chesszero.publish.quantize import QatSettings
from chesszero.publish.runtime import OrtRuntime, TorchRuntime
from chesszero.train.checkpoint import Checkpoint, save_checkpoint

THRESHOLDS = FidelityThresholds()  # the recipe defaults: 0.95 / 0.01 / 0.02


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> tuple[PublishResult, OrtRuntime, Path]:
    root = tmp_path_factory.mktemp("publish")
    runtime = OrtRuntime(threads=1)
    state = root / "active.json"
    replay = [core.encode_batch(random_games(32, seed=7))]  # stands in for replay batches
    settings = PublishSettings(qat=QatSettings(steps=2, lr=1e-5, batch_size=32), thresholds=THRESHOLDS)
    with torch_threads(1):
        result = publish(trained_net(), root / "gen-0001", calibration(), settings=settings,
                         runtime=runtime, state_path=state, batches=lambda: replay)
    return result, runtime, state


def _copy_artifact(result: PublishResult, dest: Path) -> Path:
    dest.mkdir()
    for name in ("int8.onnx", "int8.pt"):
        shutil.copy(result.directory / name, dest / name)
    return dest / "int8.onnx"


def _rewrite(path: Path, edit) -> None:
    model = onnx.load(str(path))
    edit({i.name: i for i in model.graph.initializer}, model)
    onnx.save(model, str(path))


def _gate(path: Path, runtime: OrtRuntime, state: Path):
    reference = TorchRuntime().session_for(trained_net())
    return gate_and_activate(path, reference, calibration(), runtime=runtime, thresholds=THRESHOLDS,
                             state_path=state, report_path=path.with_name("fidelity.json"))


def test_good_artifact_passes_and_is_activated(published) -> None:
    result, runtime, state = published
    gate = result.gate
    assert gate.passed and gate.activated and gate.error is None
    report = gate.report
    assert report.agreement >= 0.95 and report.kl_mean <= 0.01 and report.wdl_mae <= 0.02
    active = read_activation(state)
    assert active is not None and active.path == (result.directory / "int8.onnx").resolve()
    assert active.sha256 == load_artifact(active.path).sha256
    assert runtime.active is gate.session
    on_disk = json.loads((result.directory / "fidelity.json").read_text())
    assert on_disk["passed"] is True and on_disk["positions"] == len(calibration())
    assert result.int8.metadata.fidelity == report.summary()
    assert load_artifact(result.directory / "int8.onnx").metadata.fidelity["passed"] is True


def test_runtimes_built_from_the_artifact_agree(published) -> None:
    result, runtime, _ = published
    planes = calibration().planes
    legal = calibration().legal
    ort_policy, ort_wdl = runtime.evaluate(planes)
    torch_policy, torch_wdl = TorchRuntime().build(result.int8).evaluate(planes)
    assert_integer_kernels_agree(torch_policy, ort_policy, legal)
    assert np.abs(ort_wdl - torch_wdl).mean() < 1e-4
    fp32 = OrtRuntime(threads=1).build(result.fp32)
    assert result.fp32.metadata.precision is Precision.FP32
    fp32_policy, _ = fp32.evaluate(planes)
    source_policy, _ = TorchRuntime().session_for(trained_net()).evaluate(planes)
    np.testing.assert_allclose(fp32_policy, source_policy, atol=1e-4)


@pytest.mark.parametrize("fault", ["conv_weights", "quant_scale"])
def test_broken_artifact_is_rejected_and_previous_stays_active(
    published, tmp_path: Path, fault: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A faulty refit: one layer's weights scrambled, or one quantisation scale wrong."""
    result, runtime, state = published
    before_state = state.read_bytes()
    before_session = runtime.active
    broken = _copy_artifact(result, tmp_path / "broken")

    def edit(inits, model) -> None:
        if fault == "conv_weights":
            name = "blocks.0.conv2.weight"
            w = numpy_helper.to_array(inits[name])
            inits[name].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(w[::-1]), name))
        else:
            name = "/blocks.0/mid_q/DequantizeLinear::scale"  # canonical QDQ naming
            scale = numpy_helper.to_array(inits[name])
            inits[name].CopyFrom(numpy_helper.from_array(scale * 3, name))

    _rewrite(broken, edit)
    with caplog.at_level(logging.WARNING, logger="chesszero.publish.pipeline"):
        outcome = _gate(broken, runtime, state)
    assert not outcome.passed and not outcome.activated
    assert outcome.report is not None and outcome.report.failures
    assert "rejected" in caplog.text
    assert state.read_bytes() == before_state
    assert runtime.active is before_session
    assert json.loads(broken.with_name("fidelity.json").read_text())["passed"] is False


def test_encoding_version_mismatch_is_refused_by_the_gate(published, tmp_path: Path) -> None:
    result, runtime, state = published
    before_state = state.read_bytes()
    foreign = _copy_artifact(result, tmp_path / "foreign")
    update_metadata(foreign, encoding_version=int(core.ENCODING_VERSION) + 1)
    outcome = _gate(foreign, runtime, state)
    assert not outcome.activated and outcome.report is None
    assert "EncodingVersionError" in outcome.error and "encoding version" in outcome.error
    assert str(foreign) in outcome.error
    assert state.read_bytes() == before_state


def test_corrupt_file_is_refused_by_the_gate(published, tmp_path: Path) -> None:
    _, runtime, state = published
    before_state = state.read_bytes()
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x00\x01definitely not a model" * 10)
    outcome = _gate(junk, runtime, state)
    assert not outcome.activated and outcome.artifact is None
    assert "ArtifactError" in outcome.error and str(junk) in outcome.error
    assert state.read_bytes() == before_state


def test_second_good_publication_replaces_the_first(published, tmp_path: Path) -> None:
    result, _, _ = published
    runtime = OrtRuntime(threads=1)
    state = tmp_path / "active.json"
    first = _copy_artifact(result, tmp_path / "a")
    second = _copy_artifact(result, tmp_path / "b")
    assert _gate(first, runtime, state).activated
    outcome = _gate(second, runtime, state)
    assert outcome.activated
    active = read_activation(state)
    assert active.path == second.resolve() and active.previous == str(first.resolve())
    assert runtime.active is outcome.session


def test_publish_from_a_checkpoint_file_records_its_hash(tmp_path: Path) -> None:
    net = trained_net()
    ckpt = save_checkpoint(tmp_path / "ckpt.pt", Checkpoint(
        step=1, model_size="2x16", model=net.state_dict(), optimizer={}))
    calib = calibration(32, seed=5)
    result = publish(ckpt, tmp_path / "out", calib, runtime=OrtRuntime(threads=1))
    digest = hashlib.sha256(ckpt.read_bytes()).hexdigest()
    assert result.int8.metadata.checkpoint_sha256 == digest == result.fp32.metadata.checkpoint_sha256
    assert result.int8.metadata.calibration_sha256 == calib.sha256
    assert result.int8.metadata.calibration_positions == 32


def test_unreadable_checkpoint_is_refused_naming_the_file(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a usable training checkpoint") as info:
        publish(junk, tmp_path / "out", calibration(), runtime=OrtRuntime(threads=1))
    assert str(junk) in str(info.value)
    with pytest.raises(ValueError, match="checkpoint file not found"):
        publish(tmp_path / "missing.pt", tmp_path / "out", calibration())


def test_fresh_network_passes_despite_near_uniform_policy(tmp_path: Path) -> None:
    """A step-0 network's policy is nearly flat: its exact top-1 is noise, so
    moves the source scores within ``TIE_TOLERANCE`` of its best count as agreeing."""
    torch.manual_seed(3)
    result = publish(ChessNet("2x16").eval(), tmp_path / "fresh", calibration(),
                     runtime=OrtRuntime(threads=1))
    assert result.gate.passed, result.gate.report.failures
    assert result.gate.report.agreement == 1.0  # exact top-1 would be ~0.95: ties decide it
