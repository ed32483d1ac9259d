"""scripts/gpu_check.sh can run where a GPU is lent: a Python image with no
package index, the missing packages carried as wheels (scripts/gpu_wheels.txt),
and a CPU rehearsal of every step."""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gpu_check_support import ROOT
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

IMAGE_PYTHON = "3.12"  # the lent H200's python3
# imported only by a backend the image cannot have (its wheels are far over the 64 MiB a call carries)
NOT_CARRIED = {"tensorrt": "the tensorrt backend, optional; too large to carry"}


def _names(path: Path) -> set[str]:
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {canonicalize_name(Requirement(line).name) for line in lines if line}


def _image() -> set[str]:
    return _names(ROOT / "scripts" / "gpu_image_packages.txt")


def _carried() -> set[str]:
    return _names(ROOT / "scripts" / "gpu_wheels.txt")


def test_image_and_carried_lists_parse_and_do_not_overlap() -> None:
    image, carried = _image(), _carried()
    assert {"torch", "onnx", "onnxruntime", "pybind11", "scikit-build-core", "pytest"} <= image
    lines = (ROOT / "scripts" / "gpu_wheels.txt").read_text().splitlines()
    replacing = {canonicalize_name(Requirement(line.split("#")[0]).name) for line in lines
                 if "# replaces the image's" in line}
    assert image & carried == replacing, "a wheel the image has is carried only to replace its version"
    for line in (ROOT / "scripts" / "gpu_wheels.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            assert "==" in line, f"gpu_wheels.txt pins every wheel: {line!r}"


@pytest.mark.timeout(120)
def test_everything_the_gpu_check_imports_is_in_the_image_or_carried() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "gpu_check_support.py")], cwd=ROOT,
                          capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, done.stderr[-3000:]
    imported: dict[str, list[str]] = json.loads(done.stdout.splitlines()[-1])
    assert {"torch", "chess", "polars", "pydantic"} <= set(imported)  # the scan sees real imports
    provided = _image() | _carried()
    distributions = metadata.packages_distributions()
    missing = {}
    for top, users in imported.items():
        if top in NOT_CARRIED:
            continue
        names = {canonicalize_name(d) for d in distributions.get(top, [])}
        assert names, f"{top} (imported by {users}) is installed nowhere here"
        if not names & provided:
            missing[top] = users
    assert not missing, f"neither in the image nor in scripts/gpu_wheels.txt: {missing}"


def test_carried_wheels_bring_what_they_require() -> None:
    provided = _image() | _carried()
    env = {**default_environment(), "python_version": IMAGE_PYTHON, "python_full_version": "3.12.3",
           "extra": ""}
    for name in sorted(_carried()):
        for text in metadata.requires(name) or []:
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate(env):
                continue  # an extra, or another Python's
            assert canonicalize_name(requirement.name) in provided, f"{name} requires {text}"


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_gpu_check_rehearsal_runs_every_step_on_the_cpu(tmp_path: Path) -> None:
    out = tmp_path / "gpu_check.json"
    env = {k: v for k, v in os.environ.items() if k != "GPU_CHECK_PYTHON"}
    done = subprocess.run(["bash", "scripts/gpu_check.sh", "--rehearse", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=380)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["rehearsal"] is True and result["environment"] == "venv"
    assert set(result["steps"]) == {"build", "tests", "train", "backends"}  # no [gpu] extra in a rehearsal
    assert all(step["exit"] == 0 for step in result["steps"].values()), result["steps"]
    tests = result["tests"]
    assert tests["tests"] >= 10 and tests["failures"] == tests["errors"] == 0
    rows = {row["name"]: row for row in result["training"]["rows"]}
    assert any("ddp x2 (gloo" in name for name in rows), sorted(rows)
    backends = result["backends"]
    assert backends["torch/gate"]["activated"] and backends["torch/gate"]["fidelity"]["passed"]
    assert backends["torch/selfplay_vs_inference"]["ok"]
    assert backends["torch/selfplay_vs_inference"]["selfplay_searches_per_s"] > 0
    assert set(backends["torch/actors_per_gpu"]["actors_per_gpu"]) == {"1", "2"}
    assert "ort-gpu/unavailable" in backends and "tensorrt/unavailable" in backends


@pytest.mark.parametrize(("script", "args"), [("gpu_check.sh", ["--bogus"]), ("gpu_check.sh", ["a.json", "b.json"]),
                                              ("gpu_wheels.sh", ["3.x"])])
def test_the_scripts_refuse_bad_arguments_before_doing_anything(script: str, args: list[str]) -> None:
    wheels = sorted((ROOT / ".whl").glob("*")) if (ROOT / ".whl").exists() else None
    done = subprocess.run(["bash", f"scripts/{script}", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 64 and "usage:" in done.stderr and args[0] in done.stderr
    assert not (ROOT / "--bogus").exists()  # no result file named after the bad flag
    after = sorted((ROOT / ".whl").glob("*")) if (ROOT / ".whl").exists() else None
    assert after == wheels  # wheels fetched earlier are left alone
