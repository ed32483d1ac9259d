"""Run every ``benchmarks/bench_*.py`` and collect the results in one report.

Each script runs in its own process as ``python benchmarks/bench_<name>.py
--json <out>/<name>.json [--quick]``; its console output goes to
``<out>/<name>.log``. The JSON (``benchmarks/common.report``: title, machine,
rows with their ratios and targets) gets a ``run`` entry (command, seconds,
exit status) and ``<out>/benchmarks.md`` is rewritten: one table per
benchmark, each ratio measured by that script in the same run, each row's
target (``benchmarks/targets.py``) with a met / MISSED column, and the
machine it ran on.

Every row with a target is re-checked here from its JSON (the measured rate
or ratio against the stored target, never the script's own flag) and the
MISSED ones are printed; with ``--strict`` (``make bench STRICT=1``) any
MISSED target makes the exit status 1, as a failing script does.

A script that does not accept ``--json`` (or, with ``--quick``, ``--quick``)
is listed as skipped, never run with flags it lacks. A failing script keeps
its log, loses any stale JSON, and makes the exit status 1.

A script that sets ``OPT_IN = True`` at module level (``bench_learning``: a
campaign of hours) is not part of the default set: it runs only when named
with ``--only``, with the terminal attached (its own live progress; no
``.log``), and a run of opt-in scripts only writes ``<name>.md`` instead of
``benchmarks.md``. Arguments ``run_all`` does not know are passed on to the scripts
named with ``--only`` (e.g. ``--hours 2``).

Usage::

    python benchmarks/run_all.py --out reports/bench [--quick] [--strict] [--only core train]
    python benchmarks/run_all.py --only learning --hours 2 [--name N] [--no-prefect]
    python benchmarks/run_all.py --list
    chesszero bench ...                  # the same
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:  # `chesszero bench` runs this file with runpy
    sys.path.insert(0, str(HERE))

from targets import Target, check_row  # noqa: E402


@dataclass(frozen=True)
class Script:
    """One benchmark script and the options it accepts."""

    name: str
    path: Path
    has_json: bool
    has_quick: bool
    opt_in: bool = False
    """Runs only when named with ``--only``, attached to the terminal."""

    def skip_reason(self, quick: bool) -> str | None:
        missing = [flag for flag, ok in (("--json", self.has_json), ("--quick", self.has_quick or not quick))
                   if not ok]
        return f"lacks {' and '.join(missing)}" if missing else None


@dataclass
class Outcome:
    script: Script
    status: str  # "ok", "failed (exit N)", "skipped: ..."
    seconds: float = 0.0
    result: dict[str, Any] | None = None


def _accepts(source: str, flag: str) -> bool:
    return re.search(rf"""add_argument\(\s*["']{re.escape(flag)}["']""", source) is not None


def _opt_in(source: str) -> bool:
    return re.search(r"^OPT_IN\s*(?::\s*\w+\s*)?=\s*True\b", source, re.MULTILINE) is not None


def discover(folder: Path = HERE) -> list[Script]:
    """The ``bench_*.py`` scripts of ``folder`` in name order, with their flag support."""
    scripts = []
    for path in sorted(folder.glob("bench_*.py")):
        source = path.read_text()
        scripts.append(Script(path.stem.removeprefix("bench_"), path,
                              _accepts(source, "--json"), _accepts(source, "--quick"), _opt_in(source)))
    return scripts


def select(scripts: Sequence[Script], only: Sequence[str] | None) -> list[Script]:
    """The scripts to run: those named in ``only``, else every script that is not opt-in.

    Raises ``ValueError`` naming unknown benchmarks.
    """
    if not only:
        return [s for s in scripts if not s.opt_in]
    unknown = sorted(set(only) - {s.name for s in scripts})
    if unknown:
        raise ValueError(f"unknown benchmarks {unknown}; known: {[s.name for s in scripts]}")
    return [s for s in scripts if s.name in only]


def machine_description() -> dict[str, Any]:
    """Where the numbers come from (CPU model, cores, load when the run started)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    return {
        "cpu": cpu,
        "cpus": os.cpu_count() or 0,
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0,
        "load_1min_at_start": round(load, 2),
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


def report_name(scripts: Sequence[Script]) -> str:
    """``benchmarks.md``, or ``<name>.md`` for a run of opt-in scripts only (so
    ``--only learning`` leaves the regular benchmark report alone)."""
    if scripts and all(s.opt_in for s in scripts):
        return "-".join(s.name for s in scripts) + ".md"
    return "benchmarks.md"


def run_script(script: Script, out: Path, *, quick: bool, timeout: float | None,
               extra: Sequence[str] = ()) -> Outcome:
    """Run one script, keep its log, and attach the run to its JSON.

    ``extra`` arguments are appended to the command. An opt-in script writes
    to the terminal instead of ``<name>.log`` (its live progress stays visible).
    """
    target = out / f"{script.name}.json"
    if target.exists():  # never report a stale result as this run's; kept beside it for comparison
        target.replace(out / f"{script.name}.previous.json")
    command = ([sys.executable, str(script.path), "--json", str(target)] + (["--quick"] if quick else [])
               + list(extra))
    start = time.perf_counter()
    where = "the output above" if script.opt_in else f"{script.name}.log"
    try:
        if script.opt_in:
            code: int | None = subprocess.run(command, cwd=REPO, timeout=timeout, check=False).returncode
        else:
            with open(out / f"{script.name}.log", "w") as log:
                code = subprocess.run(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                      timeout=timeout, check=False).returncode
    except subprocess.TimeoutExpired:
        code = None
    seconds = time.perf_counter() - start
    if code != 0 or not target.exists():
        target.unlink(missing_ok=True)
        why = "timed out" if code is None else f"exit {code}" if code else "wrote no JSON"
        return Outcome(script, f"failed ({why}; see {where})", seconds)
    result = json.loads(target.read_text())
    shown = ["python", os.path.relpath(script.path, REPO), "--json", os.path.relpath(target, REPO),
             *command[4:]]
    result["run"] = {"command": " ".join(shown), "quick": quick, "seconds": round(seconds, 1)}
    target.write_text(json.dumps(result, indent=2) + "\n")
    return Outcome(script, "ok", seconds, result)


def _fmt(value: float | None, suffix: str = "") -> str:
    if value is None:
        return ""
    if abs(value) >= 100:
        return f"{value:,.0f}{suffix}"
    return f"{value:,.2f}{suffix}" if abs(value) >= 0.1 or value == 0 else f"{value:.3g}{suffix}"


ROW_KEYS = ("name", "rate", "unit")
"""Keys of a ``common.Row``; rows without them are drawn as a plain table of their keys."""


def _cell(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return _fmt(value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {_cell(v)}" for k, v in value.items())
    return str(value).replace("|", "\\|")


def _details(extra: Any) -> str:
    return _cell(extra) if isinstance(extra, dict) else ""


def _verdict_cells(row: dict[str, Any]) -> tuple[str, str]:
    """The target and met cells of a row (empty for a row without a target)."""
    try:
        verdict = check_row(row)
    except (ValueError, KeyError, TypeError) as error:
        return "", f"**MISSED** (unreadable target: {error})"
    if verdict.target is None:
        return "", ""
    cited = f"{verdict.target.describe()} ({verdict.target.cited})"
    return cited, verdict.label if verdict.met else f"**{verdict.label}**"


def rows_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown lines for a script's rows: the ``common.Row`` layout (rate, ratio
    against a reference, target and verdict, details) when every row has it,
    otherwise one column per key (e.g. ``bench_learning``'s rows); then the
    sources of the targets shown."""
    if not rows:
        return ["(no rows)"]
    if all(isinstance(r, dict) and all(k in r for k in ROW_KEYS) for r in rows):
        details = any(_details(r.get("extra")) for r in rows)
        lines = ["| benchmark | rate | unit | compared with | ratio | target | met |" + (" details |" if details else ""),
                 "|---|---:|---|---|---:|---|---|" + ("---|" if details else "")]
        sources: dict[str, str] = {}
        for row in rows:
            target_cell, met = _verdict_cells(row)
            if row.get("target"):
                with contextlib.suppress(KeyError, TypeError):
                    sources[str(row["target"]["name"])] = str(row["target"]["source"])
            lines.append(f"| {_cell(str(row['name']))} | {_fmt(row['rate'])} | {row['unit']} | "
                         f"{_cell(str(row.get('reference', '')))} | {_fmt(row.get('ratio'), 'x')} | "
                         f"{target_cell} | {met} |" + (f" {_details(row.get('extra'))} |" if details else ""))
        if sources:
            lines += ["", "Targets: " + "; ".join(f"`{name}`: {source}" for name, source in sources.items()) + "."]
        return lines
    keys: list[str] = []
    for row in rows:
        keys += [k for k in (row if isinstance(row, dict) else {}) if k not in keys]
    if not keys:
        return ["(rows without fields)"]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for row in rows:
        data = row if isinstance(row, dict) else {}
        lines.append("| " + " | ".join(_cell(data.get(k)) for k in keys) + " |")
    return lines


@dataclass(frozen=True)
class Miss:
    """A row whose target was not met (or could not be checked)."""

    benchmark: str
    row: str
    measured: float | None
    target: Target | None
    why: str = ""

    def describe(self) -> str:
        if self.target is None:
            return f"{self.benchmark}: {self.row}: {self.why}"
        if self.measured is None:
            value = "not measured"
        else:
            value = _fmt(self.measured, "x" if self.target.on_ratio else " " + self.target.unit)
        return f"{self.benchmark}: {self.row}: {value}, target {self.target.describe()} ({self.target.source})"


def target_results(outcomes: Sequence[Outcome]) -> tuple[int, list[Miss]]:
    """How many rows met their target, and the rows that missed it, over every measured benchmark."""
    met, missed = 0, []
    for o in outcomes:
        for row in (o.result or {}).get("rows", []):
            if not isinstance(row, dict) or not row.get("target"):
                continue
            name = str(row.get("name", "?"))
            try:
                verdict = check_row(row)
            except (ValueError, KeyError, TypeError) as error:
                missed.append(Miss(o.script.name, name, None, None, f"unreadable target ({error})"))
                continue
            if verdict.met:
                met += 1
            else:
                missed.append(Miss(o.script.name, name, verdict.measured, verdict.target))
    return met, missed


def exit_status(outcomes: Sequence[Outcome], *, strict: bool) -> int:
    """1 when a script failed, or (``strict``) when a target was missed; else 0."""
    if any(o.status.startswith("failed") for o in outcomes):
        return 1
    return 1 if strict and target_results(outcomes)[1] else 0


def markdown(outcomes: Sequence[Outcome], machine: dict[str, Any], *, quick: bool) -> str:
    """``benchmarks.md``: the machine, then one table per benchmark."""
    lines = [
        "# Benchmarks",
        "",
        f"Generated by `python benchmarks/run_all.py{' --quick' if quick else ''}`"
        + (" (reduced budgets)" if quick else "") + "; do not edit.",
        "Each ratio compares two rows measured by the same script in this run on this machine,",
        "so ratios travel between machines better than rates. A target (benchmarks/targets.py) is",
        "checked against the row's ratio, or against its rate when the target is a fixed number;",
        "met / MISSED says whether this run reached it; rows without a target leave both empty.",
        "",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in machine.items()),
        "",
    ]
    for o in outcomes:
        title = o.result.get("title") if o.result else None
        lines += [f"## {o.script.name}" + (f": {title}" if title else ""), ""]
        if o.result is None:
            lines += [f"Not measured: {o.status}.", ""]
            continue
        run = o.result.get("run", {})
        if run.get("command"):
            lines += [f"`{run['command']}` ({o.seconds:.0f} s)", ""]
        lines += rows_table(o.result.get("rows", []))
        lines.append("")
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def main(argv: Sequence[str] | None = None, *, folder: Path = HERE) -> int:
    """``chesszero bench``; ``folder`` holds the ``bench_*.py`` scripts (tests pass their own)."""
    parser = _Parser(prog="chesszero bench", description=__doc__.splitlines()[0], allow_abbrev=False,
                     epilog="Other arguments go to the scripts named with --only "
                            "(e.g. --only learning --hours 2).")
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "bench",
                        help="report folder (default: reports/bench)")
    parser.add_argument("--quick", action="store_true", help="pass --quick: reduced budgets")
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="run only these (e.g. core train); opt-in ones (learning) run only so")
    parser.add_argument("--timeout", type=float, default=None, help="seconds allowed per script")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when any row misses its target (make bench STRICT=1)")
    parser.add_argument("--list", action="store_true", help="list the scripts and exit")
    args, extra = parser.parse_known_args(argv)
    args.out = args.out.resolve()
    scripts = discover(folder)
    console = Console(stderr=True)
    if args.list:
        for s in scripts:
            note = s.skip_reason(quick=True) or "ok"
            print(f"{s.name:<12} {s.path.relative_to(REPO)}  {note}"
                  + (f"  (opt-in: --only {s.name})" if s.opt_in else ""))
        return 0
    if extra and not args.only:
        parser.error(f"unrecognized arguments: {' '.join(extra)} (script arguments need --only NAME)")
    try:
        scripts = select(scripts, args.only)
    except ValueError as error:
        parser.error(str(error))
    args.out.mkdir(parents=True, exist_ok=True)
    machine = machine_description()
    outcomes: list[Outcome] = []
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        overall = progress.add_task("benchmarks", total=len(scripts))
        for i, script in enumerate(scripts, 1):
            reason = script.skip_reason(args.quick)
            if reason:
                outcomes.append(Outcome(script, f"skipped: {script.path.name} {reason}"))
            elif script.opt_in:  # its own live display: ours steps aside
                progress.stop()
                outcomes.append(run_script(script, args.out, quick=args.quick, timeout=args.timeout,
                                           extra=extra))
                progress.start()
            else:
                progress.update(overall, description=f"[{i}/{len(scripts)}] bench_{script.name}")
                outcomes.append(run_script(script, args.out, quick=args.quick, timeout=args.timeout,
                                           extra=extra))
            console.print(f"{script.name:<12} {outcomes[-1].status}"
                          + (f" ({outcomes[-1].seconds:.0f} s)" if outcomes[-1].seconds else ""))
            progress.advance(overall)
    report = args.out / report_name(scripts)
    report.write_text(markdown(outcomes, machine, quick=args.quick))
    console.print(f"wrote {report}")
    met, missed = target_results(outcomes)
    console.print(f"targets: {met} met, {len(missed)} MISSED")
    for miss in missed:
        console.print(f"  MISSED {miss.describe()}", markup=False, highlight=False)
    unchecked = [o.script.name for o in outcomes if o.result is None]
    if args.strict and unchecked:
        console.print(f"--strict: not measured, so their targets were not checked: {', '.join(unchecked)}")
    status = exit_status(outcomes, strict=args.strict)
    if args.strict and missed:
        console.print(f"--strict: {len(missed)} target{'s' if len(missed) > 1 else ''} MISSED: exit status 1")
    return status


if __name__ == "__main__":
    sys.exit(main())
