"""Inference backends (``inference.backend``, ``--backend``): the torch backend
against ONNX Runtime on the calibration set, and clear refusals of unknown
or unavailable backends (library, command line, campaign start)."""

from __future__ import annotations

import re
from pathlib import Path

import onnx
import pytest
from publish_support import (  # noqa: F401
    against_ort_cpu,
    calibration,
    one_thread,
    trained_net,
)

from chesszero.campaign.context import Campaign
from chesszero.campaign.dispatch import Limits, drive
from chesszero.cli import main
from chesszero.config import REPO_ROOT
from chesszero.publish import (
    ArtifactError,
)
from chesszero.publish.backends import (
    BackendError,
    backend_unavailable_reason,
    check_backend,
    make_runtime,
    publication_scheme,
)
from chesszero.publish.loading import load_evaluator
from chesszero.publish.pipeline import PublishResult, publish
from chesszero.publish.quant_ops import QuantScheme
from chesszero.publish.runtime import TorchRuntime

UNAVAILABLE = [name for name in ("ort-gpu", "tensorrt") if backend_unavailable_reason(name) is not None]


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_torch_backend_agrees_with_ort_cpu_on_the_calibration_set(published_on_cpu: PublishResult, precision: str) -> None:
    artifact = published_on_cpu.int8 if precision == "int8" else published_on_cpu.fp32
    report = against_ort_cpu(artifact, load_evaluator(artifact.path, backend="torch"))
    assert report.passed, report.failures
    assert report.positions == 516
    # Float32 in both runtimes: the same numbers up to summation order (FP32 measured 4e-13 on an
    # AVX-512 VNNI machine). INT8: the fake-quantised float simulation against ONNX Runtime's integer
    # kernels, where an activation on a rounding boundary can flip by one step, per ISA (measured 4e-7,
    # one position of 516 carrying KL 2e-4; docs/gpu.md states both bounds).
    bound = 1e-5 if precision == "int8" else 1e-11
    assert report.kl_mean < bound and report.agreement == 1.0
    # The comparison can fail: a network trained from another seed does.
    assert not against_ort_cpu(artifact, TorchRuntime().session_for(trained_net(seed=3))).passed


def test_the_gate_measures_the_torch_backend(published_on_cpu: PublishResult, tmp_path: Path) -> None:
    runtime = make_runtime("torch")
    assert runtime.name == "torch-cpu-fp32"  # no GPU here: float32 on the CPU, said in the report
    result = publish(trained_net(), tmp_path / "g", calibration(), runtime=runtime)
    assert result.activated and runtime.active is result.gate.session
    assert result.gate.report is not None and "[torch-cpu-fp32]" in result.gate.report.candidate


def test_each_backend_has_its_publication_scheme() -> None:
    assert publication_scheme("ort-cpu") is QuantScheme.CPU and publication_scheme("torch") is QuantScheme.CPU
    assert publication_scheme("ort-gpu") is QuantScheme.TENSORRT
    assert publication_scheme("tensorrt") is QuantScheme.TENSORRT


def test_unknown_backend_names_are_refused_with_the_known_ones(published_on_cpu: PublishResult) -> None:
    message = r"unknown inference backend 'cuda' \(known: ort-cpu, torch, ort-gpu, tensorrt\)"
    with pytest.raises(BackendError, match=message):
        check_backend("cuda")
    with pytest.raises(BackendError, match=message):
        load_evaluator(published_on_cpu.int8.path, backend="cuda")
    assert isinstance(BackendError("x"), ValueError)  # the command line's exit status 2


@pytest.mark.skipif(not UNAVAILABLE, reason="every GPU backend is available here")
def test_unavailable_backends_say_what_is_missing(tmp_path: Path) -> None:
    for name in UNAVAILABLE:
        reason = backend_unavailable_reason(name)
        with pytest.raises(BackendError, match=f"inference backend '{name}' cannot run on this machine: "):
            check_backend(name)
        with pytest.raises(BackendError, match=re.escape(str(reason))):  # checked before the file is read
            load_evaluator(tmp_path / "missing.onnx", backend=name)


def test_plain_onnx_runs_only_on_ort_cpu(published_on_cpu: PublishResult, tmp_path: Path) -> None:
    model = onnx.load(str(published_on_cpu.fp32.path))
    del model.metadata_props[:]
    plain = tmp_path / "plain.onnx"
    onnx.save(model, str(plain))
    assert load_evaluator(plain, backend="ort-cpu", warnings=[]) is not None
    with pytest.raises(ArtifactError, match="runs only on the ort-cpu backend, not 'torch'"):
        load_evaluator(plain, backend="torch")


def test_command_line_backends(published_on_cpu: PublishResult, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    model = str(published_on_cpu.int8.path)
    assert main(["ladder", "rate", "--model", model, "--backend", "cuda"]) == 2
    assert "unknown inference backend 'cuda'" in capsys.readouterr().err
    assert main(["publish", "--preset", "smoke", "--checkpoint", str(tmp_path / "none.pt"),
                 "--out", str(tmp_path / "o"), "--backend", "fast"]) == 2
    assert "unknown inference backend 'fast'" in capsys.readouterr().err  # before the checkpoint
    if UNAVAILABLE:
        assert main(["uci", "--model", model, "--backend", UNAVAILABLE[0]]) == 2
        assert f"inference backend '{UNAVAILABLE[0]}' cannot run" in capsys.readouterr().err
    out = tmp_path / "shard"
    assert main(["selfplay", "--preset", "smoke", "--model", model, "--backend", "torch",
                 "--games", "1", "--visits", "2", "--out", str(out)]) == 0
    assert '"games": 1' in capsys.readouterr().out and list(out.glob("*.parquet"))


def _campaign(root: Path, backend: str, **overrides: object) -> Campaign:
    return Campaign.open(root, "c", preset="smoke", params=REPO_ROOT / "params.yaml",
                         overrides={"inference.backend": backend, **overrides})


@pytest.mark.skipif(not UNAVAILABLE, reason="every GPU backend is available here")
def test_a_campaign_refuses_an_unavailable_backend_before_any_work(tmp_path: Path) -> None:
    ran: list[object] = []
    campaign = _campaign(tmp_path, UNAVAILABLE[0])
    with pytest.raises(BackendError, match=f"'{UNAVAILABLE[0]}' cannot run on this machine"):
        drive(campaign, Limits(generations=1), lambda stage, args: ran.append(stage) or {},
              lambda jobs, advance: ran.append(jobs))
    assert ran == [] and not campaign.paths.dir.exists()


def test_a_campaign_may_resume_on_another_backend_but_not_another_recipe(tmp_path: Path) -> None:
    _campaign(tmp_path, "ort-cpu").write_config()
    assert _campaign(tmp_path, "torch").cfg.inference.backend.value == "torch"
    with pytest.raises(ValueError, match="changed keys: train.seed"):
        _campaign(tmp_path, "torch", **{"train.seed": 9})
