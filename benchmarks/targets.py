"""Every benchmark target of the project, in one place, and how a row is checked.

A :class:`Target` says what a row must reach and where the project asked for
it (an issue, the paper). A target in ``x`` is checked against the row's
ratio (two rates measured in the same run on this machine); any other unit is
checked against the row's rate, which must be in that unit (a fixed target,
e.g. 200,000 positions/s: never shown as a ratio to the constant). Rows
without a target carry ``None`` and show no verdict.

Scripts attach targets with :func:`target` (``Row(..., target=target("..."))``);
``common.report`` writes the verdict into the JSON and the printed table;
``run_all.py`` re-checks every row it collects with :func:`check_row` (so a
script's own ``met`` flag is never trusted) and ``--strict`` fails on a miss.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

Op = Literal[">=", ">", "<=", "<"]
OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}

RATIO = "x"
"""The unit of a target on a row's ratio."""

PAPER_TRAINER_RATE = 25_300.0
"""Samples/s of the paper's trainer (training alone); only ever a fixed target here."""


@dataclass(frozen=True)
class Target:
    """What a measured row must reach: ``measured <op> value`` in ``unit``."""

    name: str
    op: Op
    value: float
    unit: str
    """``x``: the row's ratio; otherwise the row's rate, in this unit."""
    source: str
    """Where the project asks for it (short: it is printed in the table)."""

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"target {self.name!r}: unknown operator {self.op!r} (one of {sorted(OPS)})")
        if not math.isfinite(self.value):
            raise ValueError(f"target {self.name!r}: value must be finite, got {self.value!r}")

    @property
    def on_ratio(self) -> bool:
        return self.unit == RATIO

    def describe(self) -> str:
        """``>= 50x``, ``<= 2 s``, ``>= 200,000 positions/s``."""
        value = f"{self.value:,.0f}" if abs(self.value) >= 1000 else f"{self.value:g}"
        return f"{self.op} {value}x" if self.on_ratio else f"{self.op} {value} {self.unit}"

    @property
    def cited(self) -> str:
        """The source's citation, before its colon (``issue 3``)."""
        return self.source.split(":", 1)[0]

    def holds(self, measured: float | None) -> bool:
        """Whether ``measured`` meets the target (a missing or NaN measurement does not)."""
        if measured is None or not math.isfinite(measured):
            return False
        return OPS[self.op](measured, self.value)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Target:
        return cls(name=str(data["name"]), op=data["op"], value=float(data["value"]),
                   unit=str(data["unit"]), source=str(data["source"]))


@dataclass(frozen=True)
class Verdict:
    """A row checked against its target (``target`` None: the row has none)."""

    target: Target | None
    measured: float | None = None
    met: bool | None = None

    @property
    def label(self) -> str:
        """``met``, ``MISSED``, or empty for a row without a target."""
        if self.target is None:
            return ""
        if self.measured is None or not math.isfinite(self.measured):
            return "MISSED (not measured)"
        return "met" if self.met else "MISSED"


def check(target: Target | None, *, rate: float, unit: str, ratio: float | None) -> Verdict:
    """Checks one measured row (its rate, unit and ratio) against ``target``.

    Raises ``ValueError`` when a rate target's unit is not the row's: a
    target in positions/s cannot judge a row in ms.
    """
    if target is None:
        return Verdict(None)
    if target.on_ratio:
        measured = ratio
    else:
        if unit != target.unit:
            raise ValueError(f"target {target.name!r} is in {target.unit!r}, the row is in {unit!r}")
        measured = rate
    return Verdict(target, measured, target.holds(measured))


def check_row(row: Mapping[str, Any]) -> Verdict:
    """:func:`check` for a row as written to JSON (``target`` a dict or absent)."""
    data = row.get("target")
    if not data:
        return Verdict(None)
    ratio = row.get("ratio")
    return check(Target.from_dict(data), rate=float(row["rate"]), unit=str(row["unit"]),
                 ratio=None if ratio is None else float(ratio))


_ALL = (
    Target("perft-vs-stockfish", ">=", 0.5, RATIO,
           "issue 2: perft at least 50% of Stockfish 15.1's go perft, one thread"),
    Target("perft-vs-python-chess", ">=", 100.0, RATIO, "issue 2: perft over 100x python-chess"),
    Target("encode-planes", ">=", 200_000.0, "positions/s",
           "issue 2: encoding at least 200,000 positions/s per core into float32 planes"),
    Target("tree-vs-python", ">=", 50.0, RATIO,
           "issue 3: tree throughput (uniform evaluator) at least 50x the pure-Python PUCT"),
    Target("selfplay-vs-inference", ">=", 0.85, RATIO,
           "issue 3: self-play at least 85% of pure inference, same model and batches"),
    Target("delivery-vs-trainer", ">=", 1.44, RATIO,
           "issue 4: delivery at least 1.44x the trainer's demand (the paper's headroom)"),
    Target("delivery-vs-paper-trainer", ">=", 1.44 * PAPER_TRAINER_RATE, "samples/s",
           "fixed: issue 4's 1.44x of the paper's 25,300 samples/s trainer"),
    Target("materialize-vs-supply", ">=", 6.0, RATIO,
           "issue 4: materialisation at least 6x the cpu preset's self-play supply"),
    Target("int8-vs-fp32", ">=", 1.5, RATIO, "issue 5: ONNX Runtime INT8 at least 1.5x FP32"),
    Target("int8-vs-fp32-1-thread", ">=", 2.0, RATIO,
           "issue 24: INT8 over FP32 at one thread restored to at least 2x (issue 5: 1.5x)"),
    Target("int8-no-regression", ">=", 0.9, RATIO,
           "issue 24: INT8 over FP32 within 10% of the previous run's on this machine (a drop shows as MISSED)"),
    Target("se-inference-cost", ">=", 0.8, RATIO,
           "issue 22: squeeze-and-excitation measured with its inference cost; the project's bound "
           "for trying it: the gated INT8 network keeps at least 0.8x the plain one's rate"),
    Target("attack-inference-cost", ">=", 0.8, RATIO,
           "issue 22: attack planes measured with their inference cost; the same bound as "
           "squeeze-and-excitation's: the INT8 network with them keeps at least 0.8x the plain one's rate"),
    Target("int8-agreement", ">=", 0.95, "share", "issue 5: fidelity gate, top-1 legal agreement"),
    Target("int8-kl", "<=", 0.01, "nats", "issue 5: fidelity gate, mean legal-policy KL"),
    Target("int8-wdl-mae", "<=", 0.02, "abs. error", "issue 5: fidelity gate, WDL mean absolute error"),
    Target("web-first-move", "<=", 2.0, "s",
           "issue 16: the model's first move within 2 s of opening the page, 64 visits"),
    Target("gpu-selfplay-vs-inference", ">=", 0.85, RATIO,
           "issue 13: GPU self-play at least 85% of pure GPU inference at the actors' batch"),
    Target("gpu-int8-vs-fp16", ">=", 1.3, RATIO, "issue 13: INT8 at least 1.3x FP16 with the gate passing"),
    Target("nnue-nps-vs-stockfish", ">=", 1.0, RATIO,
           "issue 23: alpha-beta + NNUE nodes/s at least Stockfish 15.1's, same positions and nodes, 1 thread"),
    Target("nnue-vs-teacher", ">=", 0.75, "score",
           "issue 23: the student scores at least 0.75 against its teacher at equal time a move"),
    Target("nnue-vs-control", ">=", 0.55, "score",
           "issue 23: the student scores at least 0.55 against the control evaluator, same search and time"),
    Target("nnue-size", "<=", 256 * 1024, "bytes", "issue 23: the student file is at most 256 KB"),
    Target("overlap-trainer-threads", ">=", 1.1, RATIO,
           "issue 22: strength per CPU-hour; the campaign's trainer threads beside its overlap actors "
           "at least 1.1x torch's default"),
    Target("overlap-actors-threads", ">=", 0.95, RATIO,
           "issue 22: the overlap actors no slower (0.95x) beside the trainer at the campaign's threads"),
    Target("eval-parallel-matches", ">=", 1.4, RATIO,
           "issue 22: strength per CPU-hour; an evaluation's ladder matches side by side at least 1.4x "
           "one at a time (2+ usable CPUs)"),
    Target("learning-gain-searched", ">=", 800.0, "Elo",
           "issue 22: searched joint rating at least 800 above the untrained network's, 2 h from random weights"),
    Target("learning-gain-policy", ">=", 400.0, "Elo",
           "issue 22: policy-only joint rating at least 400 above the untrained network's, 2 h"),
)
TARGETS: dict[str, Target] = {t.name: t for t in _ALL}


def target(name: str) -> Target:
    """The project's target called ``name``; ``KeyError`` names the known ones."""
    try:
        return TARGETS[name]
    except KeyError:
        raise KeyError(f"no benchmark target {name!r}; known: {sorted(TARGETS)}") from None
