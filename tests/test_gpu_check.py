"""scripts/gpu_check.sh can run where a GPU is lent: a Python image with no
package index, the missing packages carried as wheels (scripts/gpu_wheels.txt),
and a CPU rehearsal of every step. It cannot pass without running on the GPU:
the skip-accounting rule (scripted outcomes and what the machine lacks), the
exit status from the targets' verdicts (scripted bench rows), and the rehearsal,
where every GPU test must skip."""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gpu_check_support import (
    REQUIREMENTS,
    ROOT,
    Case,
    account_measurements,
    account_tests,
    main,
    read_junit,
    verdict,
)
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
    assert result["exit"] == 0 and result["passed"] and result["problems"] == []
    assert set(result["steps"]) == {"build", "tests", "train", "backends"}  # no [gpu] extra in a rehearsal
    assert all(step["exit"] == 0 for step in result["steps"].values()), result["steps"]
    assert set(result["lacking"]) == set(REQUIREMENTS) and result["lacking"]["cuda"] is not None
    tests = result["tests"]  # on the CPU every GPU test skipped, each for something the CPU lacks
    assert tests["tests"] >= 10 and tests["skipped"] == tests["tests"] and tests["ran"] == []
    explained = [skip["explained_by"] for skip in tests["skips"]]
    assert "cuda" in explained and set(explained) <= set(REQUIREMENTS), tests["skips"]
    assert all("::test_" in skip["test"] and skip["reason"] for skip in tests["skips"])
    targets = {t["target"]: t for t in result["targets"]["results"]}
    assert result["targets"]["enforced"] is False  # CPU numbers: reported, not enforced
    assert targets["gpu-selfplay-vs-inference"]["measured"] > 0  # the torch backend, on the CPU
    assert targets["gpu-int8-vs-fp16"]["met"] is None and "tensorrt" in targets["gpu-int8-vs-fp16"]["why"]
    assert "gpu_check: passed (exit 0)" in done.stdout
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


# -- the skip-accounting rule (scripted outcomes) ---------------------------------------------

ONE_H200 = {"cuda": None, "ort-gpu": "ONNX Runtime offers ['CPUExecutionProvider']",
            "tensorrt": "the 'tensorrt' Python package is not installed", "two-gpus": "1 CUDA device(s) visible"}
"""The lent machine: one GPU, onnxruntime for the CPU, no TensorRT."""
EVERYTHING = dict.fromkeys(REQUIREMENTS)
CPU_ONLY = {**ONE_H200, "cuda": "torch 2.x (CUDA None) sees no CUDA device"}


def _passed(name: str) -> Case:
    return Case(f"tests.test_gpu::{name}", "passed")


def _skipped(name: str, reason: str) -> Case:
    return Case(f"tests.test_gpu::{name}", "skipped", reason)


ON_ONE_H200 = [_passed("test_torch_backend_on_cuda_agrees_with_ort_cpu[int8]"),
               _passed("test_two_actors_on_one_gpu_play_in_flight_what_each_plays_alone[torch]"),
               _skipped("test_two_actors_on_one_gpu_play_in_flight_what_each_plays_alone[ort-gpu]",
                        f"ort-gpu: {ONE_H200['ort-gpu']}"),
               _skipped("test_tensorrt_refit_reproduces_a_fresh_build", f"tensorrt: {ONE_H200['tensorrt']}"),
               _skipped("test_nccl_ddp_matches_single_process_within_bf16", "two-gpus: NCCL DDP needs two GPUs")]


def test_skips_explained_by_what_the_gpu_machine_lacks_pass() -> None:
    account = account_tests(ON_ONE_H200, ONE_H200, rehearsal=False)
    assert account.problems == []
    assert [skip.explained_by for skip in account.skips] == ["ort-gpu", "tensorrt", "two-gpus"]
    assert [case.test for case in account.ran] == [c.test for c in ON_ONE_H200[:2]]
    listed = account.as_dict()
    assert (listed["tests"], listed["passed"], listed["skipped"]) == (5, 2, 3)
    assert listed["skips"][1] == {"test": "tests.test_gpu::test_tensorrt_refit_reproduces_a_fresh_build",
                                  "reason": f"tensorrt: {ONE_H200['tensorrt']}", "explained_by": "tensorrt"}


@pytest.mark.parametrize(("cases", "lacking", "unexplained"), [
    # CUDA visible, the GPU tests skipped anyway
    ([_skipped(f"test_{i}", "cuda: no CUDA device") for i in range(3)], ONE_H200, 3),
    # nvidia-smi lists a GPU that torch cannot use (a CPU build of torch): a missing cuda explains nothing
    ([_skipped(f"test_{i}", "cuda: no CUDA device") for i in range(3)], CPU_ONLY, 3),
    # the machine has TensorRT: its test may not skip
    (ON_ONE_H200, {**ONE_H200, "tensorrt": None}, 1),
    # two GPUs here, the two-GPU test skipped
    (ON_ONE_H200, {**ONE_H200, "two-gpus": None}, 1),
    # a skip that names no requirement
    ([*ON_ONE_H200, _skipped("test_new", "flaky on this driver")], ONE_H200, 1),
    ([*ON_ONE_H200, _skipped("test_new", "xfail: known bug")], ONE_H200, 1),
    # one more GPU test skipped than the missing backends explain
    ([*ON_ONE_H200, _skipped("test_torch_backend_on_cuda_agrees_with_ort_cpu[fp32]", "ort-gpu: whatever")],
     {**ONE_H200, "ort-gpu": None}, 2),
])
def test_a_skip_no_missing_requirement_explains_fails_the_check(
        cases: list[Case], lacking: dict[str, str | None], unexplained: int) -> None:
    account = account_tests(cases, lacking, rehearsal=False)
    assert sum(skip.explained_by is None for skip in account.skips) == unexplained
    assert any(f"{unexplained} of {len(cases)} GPU tests skipped" in p for p in account.problems), account.problems
    result = verdict(_steps(), account, account_measurements(None, _backends(), ONE_H200), enforce_targets=True)
    assert result.exit == 1


def test_the_gpu_check_fails_with_no_tests_no_probe_a_failure_or_a_gpu_torch_cannot_use() -> None:
    assert "collected none" in account_tests([], ONE_H200, rehearsal=False).problems[0]
    unprobed = account_tests(ON_ONE_H200, None, rehearsal=False)
    assert "not probed" in unprobed.problems[0] and all(s.explained_by is None for s in unprobed.skips)
    failed = account_tests([*ON_ONE_H200, Case("t::test_x", "failed", "assert 1 == 2")], ONE_H200, rehearsal=False)
    assert failed.problems == ["1 GPU tests failed: t::test_x (failed: assert 1 == 2)"]
    assert any("torch cannot use it" in p for p in account_tests(ON_ONE_H200, CPU_ONLY, rehearsal=False).problems)


def test_the_rehearsal_requires_every_gpu_test_to_skip() -> None:
    skipped = [_skipped(f"test_{i}", "cuda: no CUDA device") for i in range(4)]
    assert account_tests(skipped, CPU_ONLY, rehearsal=True).problems == []
    one_ran = account_tests([*skipped, _passed("test_torch_backend_on_cuda_agrees_with_ort_cpu[int8]")], CPU_ONLY,
                            rehearsal=True)
    assert len(one_ran.problems) == 1 and "every GPU test must skip; 1 ran" in one_ran.problems[0]
    other_reason = account_tests([*skipped, _skipped("test_t", "tensorrt: not installed")],
                                 {**CPU_ONLY, "tensorrt": None}, rehearsal=True)
    assert len(other_reason.problems) == 1 and "1 of 5" in other_reason.problems[0]


def test_junit_cases_are_read_with_outcomes_and_reasons(tmp_path: Path) -> None:
    xml = tmp_path / "tests.xml"
    xml.write_text(
        '<testsuites><testsuite name="pytest" tests="4">'
        '<testcase classname="tests.test_gpu" name="test_a[int8]" time="1.0"/>'
        '<testcase classname="tests.test_gpu" name="test_b"><skipped type="pytest.skip" '
        'message="tensorrt: not installed">tests/test_gpu.py:9: tensorrt: not installed</skipped></testcase>'
        '<testcase classname="tests.test_gpu" name="test_c"><failure message="assert 0">tb</failure></testcase>'
        '<testcase classname="tests.test_gpu" name="test_d"><error message="fixture broke">tb</error></testcase>'
        '</testsuite></testsuites>')
    assert read_junit(xml) == [Case("tests.test_gpu::test_a[int8]", "passed"),
                               Case("tests.test_gpu::test_b", "skipped", "tensorrt: not installed"),
                               Case("tests.test_gpu::test_c", "failed", "assert 0"),
                               Case("tests.test_gpu::test_d", "error", "fixture broke")]


def _literal_head(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    return None


def test_every_gpu_test_skip_reason_names_a_requirement() -> None:
    """The convention the accounting relies on: ``reason="REQ: ..."`` and ``pytest.skip("REQ: ...")``
    in tests/test_gpu.py; ``f"{backend}: ..."`` names the parametrized backend (ort-gpu, tensorrt)."""
    tree = ast.parse((ROOT / "tests" / "test_gpu.py").read_text())
    reasons = [kw.value for node in ast.walk(tree) if isinstance(node, ast.Call)
               for kw in node.keywords if kw.arg == "reason"]
    reasons += [node.args[0] for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args
                and isinstance(node.func, ast.Attribute) and node.func.attr == "skip"]
    assert len(reasons) >= 5
    for reason in reasons:
        head = _literal_head(reason)
        if head is None:  # f"{backend}: {reason}"
            assert isinstance(reason, ast.JoinedStr) and ast.unparse(reason).startswith("f'{backend}: "), \
                ast.unparse(reason)
            continue
        assert head.split(":")[0] in REQUIREMENTS and ":" in head, head


# -- the exit status from the targets (scripted rows) ------------------------------------------

def _target(name: str) -> dict[str, object]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from targets import target

    return target(name).as_dict()


def _backends(*, ratio: float = 0.9, here: tuple[str, ...] = ("torch",), int8: float | None = None,
              met: bool | None = None) -> dict[str, object]:
    """bench_gpu's JSON, scripted: ``here`` gated and measured, the others unavailable."""
    found: dict[str, object] = {"machine": {}, "cuda": True, "gpus": ["NVIDIA H200"]}
    for backend in ("torch", "ort-gpu", "tensorrt"):
        if backend not in here:
            found[f"{backend}/unavailable"] = ONE_H200.get(backend) or "not here"
            continue
        found[f"{backend}/gate"] = {"ok": True, "activated": True, "error": None}
        found[f"{backend}/selfplay_vs_inference"] = {
            "ok": True, "ratio": ratio, "target": _target("gpu-selfplay-vs-inference"),
            "met": ratio >= 0.85 if met is None else met}
        found[f"{backend}/actors_per_gpu"] = {"ok": True, "actors_per_gpu": {"1": {}}}
    if int8 is None:
        found["int8_vs_fp16"] = {"ok": False, "error": "RuntimeError: no INT8 GPU path passed its gate here"}
    else:
        found["int8_vs_fp16"] = {"ok": True, "ratio": int8, "target": _target("gpu-int8-vs-fp16"),
                                 "met": int8 >= 1.3}
    return found


def _steps(**exits: int) -> dict[str, dict[str, object]]:
    return {name: {"exit": exits.get(name, 0), "seconds": 1, "log_tail": ""} for name in
            ("build", "tests", "train", "backends")}


def _exit(backends: dict[str, object], lacking: dict[str, str | None] = ONE_H200, *, enforce: bool = True,
          steps: dict[str, dict[str, object]] | None = None, training: dict[str, object] | None = None) -> int:
    # the scripted tests skip only for what ``lacking`` lacks: the verdict turns on the measurements
    cases = [Case(c.test, "passed") if c.outcome == "skipped" and lacking[c.message.split(":")[0]] is None else c
             for c in ON_ONE_H200]
    tests = account_tests(cases, lacking, rehearsal=False)
    assert tests.problems == []
    measured = account_measurements(training, backends, lacking)
    return verdict(steps or _steps(), tests, measured, enforce_targets=enforce).exit


def test_met_targets_pass_and_an_int8_target_without_an_int8_path_is_reported_not_measured() -> None:
    measured = account_measurements(None, _backends(ratio=0.9), ONE_H200)
    assert measured.failures == [] and measured.missed == []
    by_name = {t.target: t for t in measured.targets}
    assert by_name["gpu-selfplay-vs-inference"].met is True and by_name["gpu-selfplay-vs-inference"].measured == 0.9
    assert by_name["gpu-selfplay-vs-inference"].where == "backends: torch/selfplay_vs_inference"
    int8 = by_name["gpu-int8-vs-fp16"]
    assert int8.met is None and "tensorrt: the 'tensorrt' Python package" in int8.why and "ort-gpu: ONNX" in int8.why
    assert _exit(_backends(ratio=0.9)) == 0


def test_a_missed_target_fails_with_exit_3_unless_targets_are_reported_only() -> None:
    assert _exit(_backends(ratio=0.6)) == 3
    assert _exit(_backends(ratio=0.6), enforce=False) == 0  # --no-targets: reported only
    # the row's own met flag is not trusted: re-checked from its ratio
    assert _exit(_backends(ratio=0.6, met=True)) == 3
    everything = _backends(ratio=0.9, here=("torch", "ort-gpu", "tensorrt"), int8=1.1)
    measured = account_measurements(None, everything, EVERYTHING)
    assert [(t.target, t.where) for t in measured.missed] == [("gpu-int8-vs-fp16", "backends: int8_vs_fp16")]
    assert _exit(everything, EVERYTHING) == 3
    assert _exit(_backends(ratio=0.9, here=("torch", "ort-gpu", "tensorrt"), int8=1.6), EVERYTHING) == 0
    # a target on a training row (bench_train's common.Row JSON) counts too
    row = {"name": "delivery", "rate": 1.0, "unit": "samples/s", "ratio": 1.2,
           "target": _target("delivery-vs-trainer"), "met": False}
    assert _exit(_backends(), training={"title": "t", "rows": [row]}) == 3
    missed = account_measurements({"rows": [row]}, _backends(), ONE_H200).missed
    assert [t.where for t in missed] == ["training: rows[delivery]"]


@pytest.mark.parametrize("breakage", ["none", "step", "gate", "no-ort-gate", "int8-error", "no-target",
                                      "no-results"])
def test_a_failed_or_missing_measurement_fails_with_exit_1_even_with_targets_reported_only(breakage: str) -> None:
    lacking: dict[str, str | None] = {**ONE_H200, "ort-gpu": None}
    backends = _backends(ratio=0.9, here=("torch", "ort-gpu"), int8=1.5)
    steps = None
    if breakage == "step":
        steps = _steps(backends=124)
    elif breakage == "gate":
        backends["torch/gate"] = {"ok": True, "activated": False, "error": "fidelity: KL 0.3"}
    elif breakage == "no-ort-gate":  # the probe found ort-gpu, bench_gpu did not gate it
        backends = _backends(ratio=0.9, here=("torch",), int8=None)
    elif breakage == "int8-error":
        backends["int8_vs_fp16"] = {"ok": False, "error": "RuntimeError: CUDA out of memory"}
    elif breakage == "no-target":
        del backends["torch/selfplay_vs_inference"]["target"]  # type: ignore[attr-defined]
    elif breakage == "no-results":
        backends = None  # type: ignore[assignment]
    assert _exit(backends, lacking, steps=steps, enforce=False) == (0 if breakage == "none" else 1)


def test_summary_writes_the_json_and_returns_the_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for name in ("build", "tests", "train", "backends"):
        (work / f"{name}.rc").write_text("0 3\n")
        (work / f"{name}.log").write_text(f"{name} log\n")
    (work / "gpus.txt").write_text("GPU 0: NVIDIA H200\n")
    (work / "requirements.json").write_text(json.dumps(ONE_H200))
    (work / "tests.xml").write_text(
        '<testsuite><testcase classname="tests.test_gpu" name="test_a"/>'
        '<testcase classname="tests.test_gpu" name="test_b"><skipped message="tensorrt: not installed"/>'
        '</testcase></testsuite>')
    (work / "backends.json").write_text(json.dumps(_backends(ratio=0.5)))
    out = tmp_path / "gpu_check.json"
    args = ["summary", str(work), str(out), "0", "image", "0"]
    assert main([*args, "1"]) == 3
    result = json.loads(out.read_text())
    assert result["exit"] == 3 and result["problems"] == [] and result["targets"]["enforced"] is True
    assert result["targets"]["missed"] == ["gpu-selfplay-vs-inference at backends: torch/selfplay_vs_inference: "
                                           "0.5, target >= 0.85x (issue 13)"]
    assert [case["test"] for case in result["tests"]["ran"]] == ["tests.test_gpu::test_a"]
    assert result["tests"]["skips"] == [{"test": "tests.test_gpu::test_b", "reason": "tensorrt: not installed",
                                         "explained_by": "tensorrt"}]
    assert "MISSED" in capsys.readouterr().err
    assert main([*args, "0"]) == 0  # --no-targets
    assert json.loads(out.read_text())["targets"]["not_enforced_because"] == "--no-targets"
    (work / "tests.xml").write_text('<testsuite><testcase classname="tests.test_gpu" name="test_a">'
                                    '<skipped message="cuda: no CUDA device"/></testcase></testsuite>')
    assert main([*args, "0"]) == 1  # CUDA here, the GPU test skipped
    assert "FAILED: 1 of 1 GPU tests skipped" in capsys.readouterr().err
    assert main(["summary", "too", "few"]) == 64
