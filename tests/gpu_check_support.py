"""The GPU check's support: its verdict, and what it imports.

``scripts/gpu_check.sh`` calls this file (the standard library only at module
level: it must run where the project's install failed) for two things:

- ``requirements OUT.json``: what this machine lacks that GPU-marked tests
  need (``cuda``, ``ort-gpu``, ``tensorrt``, ``two-gpus``): ``None`` for
  present, else the reason;
- ``summary WORK OUT ...``: the steps' results into one JSON, and the exit
  status: :func:`account_tests` (a skipped GPU test must be explained by a
  requirement this machine lacks; in the rehearsal every one must skip),
  :func:`account_measurements` (every measurement bench_gpu can make here
  was made; each target's verdict) and :func:`verdict`.

A GPU test's skip reason starts with the requirement it lacks, ``"REQ: why"``
(``tests/test_gpu.py``); a skip that names none, or names one this machine
has, is unexplained.

Run with no arguments (in a fresh interpreter, from the repository root) it
imports the GPU check's entry modules and prints, as JSON, each third-party
top-level name that the project's own loaded modules import anywhere in their
source (function-level imports too) with the modules that import it
(``tests/test_gpu_check.py``).
"""

from __future__ import annotations

import ast
import importlib
import json
import math
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LOCAL_DIRS = (ROOT / "benchmarks", ROOT / "tests")
# what scripts/gpu_check.sh runs: bench_gpu.py, bench_train.py, pytest on test_gpu.py
ENTRY_MODULES = ("bench_gpu", "bench_train", "conftest", "test_gpu")


def _own_modules() -> dict[str, Path]:
    own: dict[str, Path] = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not file or not file.endswith(".py") or not Path(file).is_absolute():
            continue
        path = Path(file).resolve()
        if path.is_relative_to(ROOT / "src") or any(path.is_relative_to(d) for d in LOCAL_DIRS):
            own[name] = path
    return own


def _is_local(top: str) -> bool:
    return top == "chesszero" or any((d / f"{top}.py").exists() for d in LOCAL_DIRS)


def imported_third_party() -> dict[str, list[str]]:
    sys.path[:0] = [str(d) for d in LOCAL_DIRS]
    for name in ENTRY_MODULES:
        importlib.import_module(name)
    found: dict[str, set[str]] = {}
    for name, path in _own_modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for top in {n.split(".")[0] for n in names}:
                if top in sys.stdlib_module_names or top == "__future__" or _is_local(top):
                    continue
                found.setdefault(top, set()).add(name)
    return {top: sorted(users) for top, users in sorted(found.items())}


# -- what the machine lacks ------------------------------------------------------------------

REQUIREMENTS = {
    "cuda": "a CUDA device torch can use",
    "ort-gpu": "ONNX Runtime's CUDA provider (onnxruntime-gpu)",
    "tensorrt": "TensorRT 10 or newer and a CUDA device",
    "two-gpus": "two CUDA devices (placement over GPUs, NCCL DDP)",
}
"""What GPU-marked tests may need; a skip reason starts with one of these keys."""
INT8_BACKENDS = ("tensorrt", "ort-gpu")  # bench_gpu's INT8 GPU paths (INT8 against FP16)
STEPS = ("build", "tests", "train", "backends")  # gpu_check.sh's steps (gpu-extra: optional)


def probe_requirements() -> dict[str, str | None]:
    """Each of :data:`REQUIREMENTS`: ``None`` when this machine has it, else why not."""
    import torch

    from chesszero.publish.backends import backend_unavailable_reason

    devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
    found: dict[str, str | None] = {
        "cuda": None if devices else f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device"}
    for backend in ("ort-gpu", "tensorrt"):
        try:
            found[backend] = backend_unavailable_reason(backend)
        except Exception as error:  # noqa: BLE001 - the reason is the error
            found[backend] = f"probe failed: {type(error).__name__}: {error}"
    found["two-gpus"] = None if devices >= 2 else f"{devices} CUDA device(s) visible"
    return found


# -- the GPU-marked tests --------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """One GPU-marked test's outcome: ``passed``, ``failed``, ``error`` or ``skipped``."""

    test: str
    outcome: str
    message: str = ""
    """A skip's reason, a failure's message."""


@dataclass(frozen=True)
class Skip:
    test: str
    reason: str
    explained_by: str | None
    """The requirement this machine lacks that the reason names; ``None``: unexplained."""


@dataclass(frozen=True)
class GpuTestAccount:
    ran: list[Case]
    skips: list[Skip]
    problems: list[str]

    def as_dict(self) -> dict[str, Any]:
        outcomes = [case.outcome for case in self.ran]
        return {"tests": len(self.ran) + len(self.skips), "passed": outcomes.count("passed"),
                "failures": outcomes.count("failed"), "errors": outcomes.count("error"),
                "skipped": len(self.skips), "ran": [asdict(case) for case in self.ran],
                "skips": [asdict(skip) for skip in self.skips], "problems": self.problems}


def read_junit(path: Path) -> list[Case]:
    """The cases of pytest's ``--junitxml`` file."""
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for tag, name in (("error", "error"), ("failure", "failed"), ("skipped", "skipped")):
            child = case.find(tag)
            if child is not None:
                outcome, message = name, child.get("message") or (child.text or "").strip()
                if child.get("type") == "pytest.xfail":
                    message = f"xfail: {message}"
                break
        cases.append(Case(f"{case.get('classname', '')}::{case.get('name', '')}", outcome, message))
    return cases


def _listed(items: Sequence[str], most: int = 6) -> str:
    more = f"; and {len(items) - most} more (all in the JSON)" if len(items) > most else ""
    return "; ".join(items[:most]) + more


def account_tests(cases: Sequence[Case], lacking: Mapping[str, str | None] | None, *,
                  rehearsal: bool) -> GpuTestAccount:
    """The skip-accounting rule.

    A skip is explained when its reason starts with ``REQ:`` for a requirement
    this machine lacks (``lacking[REQ]`` a reason); on a GPU run a missing
    ``cuda`` explains nothing (the GPU is listed: torch must use it). Any
    unexplained skip, no test at all, an unprobed machine, or a failed test is a
    problem; in the rehearsal (the CPU) every test must skip.
    """
    excuses = {req: why for req, why in (lacking or {}).items()
               if why is not None and req in REQUIREMENTS and (rehearsal or req != "cuda")}
    skips = []
    for case in cases:
        if case.outcome == "skipped":
            named = case.message.split(":", 1)[0].strip() if ":" in case.message else None
            skips.append(Skip(case.test, case.message, named if named in excuses else None))
    ran = [case for case in cases if case.outcome != "skipped"]
    problems = []
    if not cases:
        problems.append("no GPU-marked test ran or skipped (pytest -m gpu collected none: see the tests step)")
    if lacking is None:
        problems.append("what this machine lacks was not probed (see the tests step), so no skip is explained")
    elif not rehearsal and lacking.get("cuda") is not None:
        problems.append(f"a GPU is listed (nvidia-smi) but torch cannot use it: {lacking['cuda']}")
    unexplained = [f"{s.test} ({s.reason!r})" for s in skips if s.explained_by is None]
    if unexplained:
        problems.append(f"{len(unexplained)} of {len(cases)} GPU tests skipped with no missing requirement to "
                        f"explain them (this machine lacks: {', '.join(sorted(excuses)) or 'nothing'}): "
                        + _listed(unexplained))
    if rehearsal and ran:
        problems.append(f"the rehearsal runs on the CPU, where every GPU test must skip; {len(ran)} ran: "
                        + _listed([f"{case.test} ({case.outcome})" for case in ran]))
    broken = [f"{case.test} ({case.outcome}: {case.message[:200]})" for case in ran if case.outcome != "passed"]
    if broken:
        problems.append(f"{len(broken)} GPU tests failed: " + _listed(broken))
    return GpuTestAccount(ran, skips, problems)


# -- the measurements and their targets ------------------------------------------------------

@dataclass(frozen=True)
class TargetResult:
    target: str
    where: str
    """``backends: torch/selfplay_vs_inference``, ``training: rows[<row name>]``."""
    goal: str
    measured: float | None
    met: bool | None
    """``None``: not measured here, for ``why``."""
    why: str = ""


@dataclass(frozen=True)
class MeasureAccount:
    targets: list[TargetResult]
    failures: list[str] = field(default_factory=list)
    """Measurements this machine can make that were not made."""

    @property
    def missed(self) -> list[TargetResult]:
        return [t for t in self.targets if t.met is False]


def _targets() -> Any:
    path = str(ROOT / "benchmarks")
    if path not in sys.path:
        sys.path.insert(0, path)
    import targets  # benchmarks/targets.py: the standard library only

    return targets


def _with_targets(data: Any, where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if isinstance(data, Mapping):
        if isinstance(data.get("target"), Mapping):
            yield where, data
        for key, value in data.items():
            if key != "target":
                yield from _with_targets(value, f"{where}/{key}" if where else str(key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            label = value.get("name", i) if isinstance(value, Mapping) else i
            yield from _with_targets(value, f"{where}[{label}]")


def _judge(source: str, where: str, entry: Mapping[str, Any]) -> TargetResult:
    """An entry's target re-checked from its numbers (its own ``met`` is not trusted)."""
    goal = _targets().Target.from_dict(entry["target"])
    value = entry.get("ratio") if goal.on_ratio else entry.get("rate")
    measured = float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None
    return TargetResult(goal.name, f"{source}: {where}", f"{goal.describe()} ({goal.cited})", measured,
                        goal.holds(measured), "" if measured is not None else "no number in the row")


def account_measurements(training: Mapping[str, Any] | None, backends: Mapping[str, Any] | None,
                         lacking: Mapping[str, str | None] | None) -> MeasureAccount:
    """Every target row's verdict, and the bench_gpu measurements this machine could make that are
    missing or failed: a gate and self-play for each backend it has (torch always), actors per GPU
    (not tensorrt), INT8 against FP16 when an INT8 GPU path is here (else its target is "not
    measured" with the reasons)."""
    found = [_judge("training", w, e) for w, e in _with_targets(training or {}, "")]
    found += [_judge("backends", w, e) for w, e in _with_targets(backends or {}, "")]
    if backends is None:
        return MeasureAccount(found, ["bench_gpu wrote no results (see the backends step)"])
    lacks = lacking or {}
    here = ["torch"] + [b for b in INT8_BACKENDS if lacking is not None and lacks.get(b) is None]
    failures, checked = [], set()

    def expect(key: str, needs_target: bool = False) -> bool:
        checked.add(key)
        entry = backends.get(key)
        if not isinstance(entry, Mapping):
            failures.append(f"{key}: not measured although this machine can ({entry or 'no entry'})")
        elif not entry.get("ok"):
            failures.append(f"{key}: failed: {entry.get('error')}")
        elif needs_target and not isinstance(entry.get("target"), Mapping):
            failures.append(f"{key}: carries no target")
        else:
            return True
        return False

    for backend in here:
        if not expect(f"{backend}/gate"):
            continue
        if not backends[f"{backend}/gate"].get("activated"):
            gate = backends[f"{backend}/gate"]
            failures.append(f"{backend}/gate: did not activate: {gate.get('error') or gate.get('failures')}")
            continue
        expect(f"{backend}/selfplay_vs_inference", needs_target=True)
        if backend != "tensorrt":
            expect(f"{backend}/actors_per_gpu")
    if any(b in here for b in INT8_BACKENDS):
        expect("int8_vs_fp16", needs_target=True)
    else:
        checked.add("int8_vs_fp16")
        goal = _targets().target("gpu-int8-vs-fp16")
        found.append(TargetResult(goal.name, "backends: int8_vs_fp16", f"{goal.describe()} ({goal.cited})", None,
                                  None, "needs an INT8 GPU path: " + "; ".join(
                                      f"{b}: {lacks.get(b, 'not probed')}" for b in INT8_BACKENDS)))
    for key, entry in backends.items():
        if key not in checked and isinstance(entry, Mapping) and entry.get("ok") is False:
            failures.append(f"{key}: failed: {entry.get('error')}")
    return MeasureAccount(found, failures)


# -- the verdict -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    exit: int
    """0 passed; 1 a step, a GPU test or a measurement failed; 3 only targets missed (enforced)."""
    problems: list[str]
    missed: list[str]
    enforce_targets: bool


def verdict(steps: Mapping[str, Mapping[str, Any]], tests: GpuTestAccount, measured: MeasureAccount, *,
            enforce_targets: bool) -> Verdict:
    problems = [f"step {name} did not run" for name in STEPS if name not in steps]
    for name, step in steps.items():
        if step["exit"] and name != "gpu-extra":
            limit = " (its time limit)" if step["exit"] in (124, 137) else ""
            problems.append(f"step {name} exited {step['exit']}{limit}")
    problems += tests.problems + measured.failures
    missed = [f"{t.target} at {t.where}: {'not measured' if t.measured is None else f'{t.measured:.4g}'}, "
              f"target {t.goal}" for t in measured.missed]
    code = 1 if problems else 3 if missed and enforce_targets else 0
    return Verdict(code, problems, missed, enforce_targets)


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text()) if path.exists() else None
    except ValueError:
        return None


def summarize(work: Path, out: Path, *, start: int, mode: str, rehearsal: bool, targets: bool) -> int:
    """gpu_check.sh's last step: its work folder into ``out`` (JSON); prints the verdict, returns the exit."""
    import platform
    import subprocess

    steps = {}
    for rc in sorted(work.glob("*.rc")):
        code, seconds = rc.read_text().split()
        steps[rc.stem] = {"exit": int(code), "seconds": int(seconds),
                          "log_tail": rc.with_suffix(".log").read_text(errors="replace")[-2000:]}
    lacking = _load(work / "requirements.json")
    try:
        cases = read_junit(work / "tests.xml") if (work / "tests.xml").exists() else []
    except ET.ParseError:
        cases = []
    tests = account_tests(cases, lacking, rehearsal=rehearsal)
    training, backends = _load(work / "train.json"), _load(work / "backends.json")
    measured = account_measurements(training, backends, lacking)
    enforce = targets and not rehearsal
    why_not = "" if enforce else "rehearsal: CPU numbers, no GPU measurement" if rehearsal else "--no-targets"
    result = verdict(steps, tests, measured, enforce_targets=enforce)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    gpus = work / "gpus.txt"
    document = {"commit": commit, "environment": mode, "rehearsal": rehearsal, "python": platform.python_version(),
                "gpus": gpus.read_text().splitlines() if gpus.exists() else [],
                "seconds": int(time.time()) - start, "exit": result.exit, "passed": result.exit == 0,
                "problems": result.problems, "lacking": lacking, "steps": steps, "tests": tests.as_dict(),
                "targets": {"enforced": enforce, "not_enforced_because": why_not,
                            "results": [asdict(t) for t in measured.targets], "missed": result.missed},
                "training": training, "backends": backends}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=2) + "\n")
    account = tests.as_dict()
    print(f"gpu_check: GPU tests: {account['passed']} passed, {account['failures']} failed, {account['errors']} "
          f"errors, {account['skipped']} skipped ({sum(s.explained_by is not None for s in tests.skips)} "
          f"explained by what this machine lacks: {', '.join(k for k, v in (lacking or {}).items() if v) or '-'})")
    for t in measured.targets:
        state = "not measured: " + t.why if t.met is None else "met" if t.met else "MISSED"
        value = "-" if t.measured is None else f"{t.measured:.4g}"
        print(f"gpu_check: target {t.target} {t.goal} at {t.where}: {value} -> {state}")
    for line in result.missed:
        print(f"gpu_check: MISSED{'' if enforce else f' (reported only: {why_not})'}: {line}", file=sys.stderr)
    for line in result.problems:
        print(f"gpu_check: FAILED: {line}", file=sys.stderr)
    verdict_line = {0: "passed", 1: "FAILED", 3: "targets MISSED"}[result.exit]
    print(f"gpu_check: {verdict_line} (exit {result.exit}); {out} ({document['seconds']} s)")
    return result.exit


USAGE = ("usage: gpu_check_support.py [requirements OUT.json | "
         "summary WORK OUT.json START MODE REHEARSE(0|1) TARGETS(0|1)]")


def main(argv: Sequence[str]) -> int:
    if not argv:
        print(json.dumps(imported_third_party()))
        return 0
    if argv[0] == "requirements" and len(argv) == 2:
        found = probe_requirements()
        Path(argv[1]).write_text(json.dumps(found, indent=2) + "\n")
        print("this machine lacks: " + (", ".join(f"{k} ({v})" for k, v in found.items() if v) or "nothing"))
        return 0
    if argv[0] == "summary" and len(argv) == 7:
        return summarize(Path(argv[1]), Path(argv[2]), start=int(argv[3]), mode=argv[4],
                         rehearsal=argv[5] == "1", targets=argv[6] == "1")
    print(f"{USAGE}   (got: {' '.join(argv)})", file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
