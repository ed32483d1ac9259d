"""The learning benchmark's final evaluation: two arms climb the ladder (issue 22).

``final_evaluation(settings, console)`` plays, for every arm of
``settings.arms`` (``final``: the campaign's last active artifact;
``control``: its untrained ``initial`` artifact, under exactly the same
protocol) and every mode (policy only, then ``visits`` visits per move), a
climb up the ladder (``chesszero.evaluate.rung_choice``): the rungs of
``settings.order`` (default ``climb_order`` of ``data/ladder.json``: random,
greedy, sf-n1-r30, sf-n1-r10, sf-n1, sf-n300, then every stronger rung by
rating), one paired match each over the first ``settings.openings`` openings
(both colours: twice as many games), until ``settings.rule`` stops it (two
consecutive rungs scoring below 0.25). Each arm and mode climbs on its own,
so policy-only play may stop earlier; the climbs run side by side
(``settings.workers`` threads), which changes no game. Matches go through
``chesszero.evaluate.match.play_match`` with the network as an
``EnginePlayer`` searching with ``settings.search()`` (the campaign's
evaluation search: no noise, most visits, no material assist).

Each match gives a ``FinalMatch``: W/D/L, the score with its 95% interval,
the nearest-rung style Elo against that rung (bootstrap over opening pairs,
anchored at the rung's calibrated rating; a bound when swept), the
terminations (stalemates among them), the mean final material and the
conversion count (``MatchResult.conversion``: games our side led by 5+
pawns, and how many it won) and the mates in one (``MatchResult.mates_in_one``:
turns with a mate on the board, and how many it took). Per arm and mode, the joint maximum-likelihood
rating over the rungs climbed (``joint_rating``; a bound when every game was
won or lost); per mode, final minus control (``rating_gain``: bootstrap over
both arms' opening pairs, each resampled independently; a bound when either
arm is). Games (JSON + PGN) go to ``settings.games_dir`` as
``<arm>_<mode>_vs_<rung>``. Progress: an overall bar and one bar per match
with its running +W =D -L.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from chesszero.evaluate.rung_choice import ClimbRule, climb, climb_order

FINAL, CONTROL = "final", "control"


@dataclass(frozen=True)
class Arm:
    """One artifact the final evaluation rates: ``final`` or ``control``."""

    name: str
    artifact: Path


@dataclass(frozen=True)
class FinalSettings:
    """What the final evaluation plays (module docstring)."""

    arms: tuple[Arm, ...]
    ladder: Path
    openings_file: Path
    games_dir: Path
    openings: int = 50
    """Paired openings per rung: 2 x this many games (the benchmark's ``--openings``)."""
    visits: int = 64
    order: tuple[str, ...] | None = None
    """Rungs in climbing order; None: ``climb_order`` of the ladder table."""
    rule: ClimbRule = field(default_factory=ClimbRule)
    max_plies: int = 300
    resamples: int = 10_000
    concurrency: int = 16
    threads: int = 1
    workers: int = 1
    """Climbs played side by side (each arm and mode is one climb; the benchmark's
    ``--workers``, default one per usable CPU)."""
    search: Callable[[], Any] | None = None
    """Makes the ``SearchOptions`` of a searched player (None: ``EnginePlayer``'s
    evaluation preset); the benchmark passes the campaign's ``evaluation_search``."""

    def modes(self) -> list[tuple[str, int | None]]:
        """(mode, visits) pairs: policy only (no search), then searched."""
        return [("policy", None), ("searched", self.visits)]


@dataclass(frozen=True)
class FinalMatch:
    """One final match, from the model's point of view."""

    opponent: str
    mode: str
    visits: int | None
    games: int
    wins: int
    draws: int
    losses: int
    score: float
    score_lo: float
    score_hi: float
    elo: float
    elo_lo: float
    elo_hi: float
    elo_bound: bool
    rung_rating: float
    terminations: dict[str, int]
    final_material: float
    conversion_opportunities: int | None
    conversion_converted: int | None
    seconds: float
    arm: str = FINAL
    mate_in_one_available: int | None = None  # turns after the book with a mate on the board (evaluate.mates)
    mate_in_one_played: int | None = None  # of those, the model mated (None: counted by no older version)

    @property
    def stalemates(self) -> int:
        return int(self.terminations.get("stalemate", 0))

    @property
    def conversion_rate(self) -> float | None:
        if not self.conversion_opportunities or self.conversion_converted is None:
            return None
        return self.conversion_converted / self.conversion_opportunities

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "conversion_rate": self.conversion_rate, "stalemates": self.stalemates}


def score_interval(elo: Any) -> tuple[float, float]:
    """The score interval behind an ``EloEstimate``: its bootstrap interval
    mapped back through the Elo curve, or ``[bound, 1]`` / ``[0, bound]`` when
    every game was won or lost (the one-sided Clopper-Pearson bound)."""
    from chesszero.evaluate.elo import expected_score

    if elo.is_bound:
        bound = expected_score(elo.estimate - elo.anchor)
        return (bound, 1.0) if elo.score == 1.0 else (0.0, bound)
    return expected_score(elo.lower - elo.anchor), expected_score(elo.upper - elo.anchor)


def conversion_counts(result: Any) -> tuple[int, int] | None:
    """(opportunities, converted) of the model over a match's games from
    ``MatchResult.conversion`` (the ladder's own count), or None where this
    version of the match code has no conversion count."""
    conversion = getattr(result, "conversion", None)
    if conversion is None:
        return None
    total = conversion()
    return int(total.opportunities), int(total.converted)


def summarize(result: Any, opponent: str, mode: str, visits: int | None, rating: float,
              resamples: int, seconds: float, arm: str = FINAL) -> FinalMatch:
    """A ``FinalMatch`` from a ``MatchResult`` against a rung rated ``rating``."""
    elo = result.elo(rating, resamples=resamples)
    lo, hi = score_interval(elo)
    # the interval comes back through Elo and logistic; a pair of equal scores can land 1 ulp off
    lo, hi = min(lo, result.score), max(hi, result.score)
    conversion = conversion_counts(result)
    mates = result.mates_in_one() if hasattr(result, "mates_in_one") else None
    return FinalMatch(
        opponent=opponent, mode=mode, visits=visits, games=len(result.games), wins=result.wins,
        draws=result.draws, losses=result.losses, score=result.score, score_lo=lo, score_hi=hi,
        elo=elo.estimate, elo_lo=elo.lower, elo_hi=elo.upper, elo_bound=elo.is_bound, rung_rating=rating,
        terminations=dict(Counter(g.termination for g in result.games)),
        final_material=result.final_material(),
        conversion_opportunities=None if conversion is None else conversion[0],
        conversion_converted=None if conversion is None else conversion[1], seconds=round(seconds, 1), arm=arm,
        mate_in_one_available=None if mates is None else mates.available,
        mate_in_one_played=None if mates is None else mates.played)


@dataclass(frozen=True)
class FinalEvaluation:
    """The final matches, the joint rating per arm and mode, the gain per mode
    and the ladder they refer to."""

    matches: list[FinalMatch]
    joint: dict[str, dict[str, dict[str, Any]]]
    """Per arm, per mode: ``JointRating.to_dict()`` plus its ``describe()`` line."""
    gain: dict[str, dict[str, Any]]
    """Per mode (when both arms played): ``RatingGain.to_dict()``."""
    order: list[str]
    ladder: str


class _Bars:
    """The overall bar (its total shrinks when a climb stops early) and one bar per match;
    the climbs' threads share it."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress = progress
        self.total = total
        self._lock = threading.Lock()
        self.overall = progress.add_task("final evaluation", total=total)

    def match(self, label: str, games: int) -> tuple[Any, Callable[[Any], None]]:
        task = self.progress.add_task(label, total=games)
        tally = Counter[float]()

        def on_game(record: Any) -> None:
            tally[record.score] += 1
            self.progress.update(task, advance=1, description=f"{label} +{tally[1.0]:.0f} ={tally[0.5]:.0f} "
                                 f"-{tally[0.0]:.0f}")
            self.progress.advance(self.overall)

        return task, on_game

    def skip(self, games: int) -> None:
        with self._lock:
            self.total -= games
            self.progress.update(self.overall, total=self.total)


def final_evaluation(settings: FinalSettings, console: Console | None = None) -> FinalEvaluation:
    """Plays every arm's climb in both modes; see the module docstring."""
    from chesszero.evaluate.engine_player import EnginePlayer
    from chesszero.evaluate.joint_rating import RungGames, joint_rating_of_matches
    from chesszero.evaluate.ladder import LadderTable, rung_player
    from chesszero.evaluate.match import play_match
    from chesszero.evaluate.openings import load_openings
    from chesszero.evaluate.rating_gain import rating_gain
    from chesszero.publish.loading import load_evaluator

    console = console or Console(stderr=True)
    table = LadderTable.load(settings.ladder)
    suite = load_openings(settings.openings_file)
    if settings.openings > len(suite):
        raise ValueError(f"--openings {settings.openings}: {settings.openings_file} has only {len(suite)}")
    openings = suite[: settings.openings]
    calibrated = {r.name: float(r.rating) for r in table.ordered()}
    order = list(settings.order) if settings.order is not None else climb_order(calibrated)
    ratings = {name: table.rating(name) for name in order}  # an unknown rung: KeyError names it
    games = 2 * len(openings)
    settings.games_dir.mkdir(parents=True, exist_ok=True)
    matches: list[FinalMatch] = []
    results: dict[str, dict[str, dict[str, Any]]] = {}
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn())
    evaluators = {arm.name: load_evaluator(arm.artifact, threads=settings.threads) for arm in settings.arms}
    climbs = [(arm, mode, visits) for arm in settings.arms for mode, visits in settings.modes()]
    with Progress(*columns, console=console) as progress:
        bars = _Bars(progress, len(climbs) * len(order) * games)

        def climb_one(arm: Arm, mode: str, visits: int | None) -> dict[str, Any]:
            played: dict[str, Any] = {}

            def play(opp: str) -> float:
                label = f"{arm.name} {mode} vs {opp}"
                task, on_game = bars.match(label, games)
                options = settings.search() if settings.search is not None and visits is not None else None
                model = EnginePlayer(evaluators[arm.name], visits=visits, name=f"{arm.name}-{mode}",
                                     slots=settings.concurrency, options=options)
                opponent = rung_player(table.rung(opp), seed=0, engines=2)
                began = time.monotonic()
                try:
                    result = play_match(model, opponent, openings, max_plies=settings.max_plies,
                                        concurrency=settings.concurrency, event=f"final: {label}",
                                        on_game=on_game)
                finally:
                    model.close()
                    opponent.close()
                stem = f"{arm.name}_{mode}_vs_{opp}"
                (settings.games_dir / f"{stem}.pgn").write_text(result.pgn())
                (settings.games_dir / f"{stem}.json").write_text(json.dumps(result.to_dict(), indent=1))
                played[opp] = result
                line = summarize(result, opp, mode, visits, ratings[opp], settings.resamples,
                                 time.monotonic() - began, arm.name)
                matches.append(line)
                progress.remove_task(task)
                progress.console.print(f"[green]done[/green] {label}: +{line.wins} ={line.draws} "
                                       f"-{line.losses}  score {line.score:.3f} [{line.score_lo:.3f}, "
                                       f"{line.score_hi:.3f}]  {line.seconds:.0f} s")
                return line.score

            climbed = climb(play, order, settings.rule)
            bars.skip((len(order) - len(climbed)) * games)
            return played

        # The climbs are independent and each match is deterministic on its own:
        # side by side they change the wall time, never the games.
        with ThreadPoolExecutor(max_workers=max(1, min(settings.workers, len(climbs)))) as pool:
            done = list(pool.map(lambda c: climb_one(*c), climbs))
    for (arm, mode, _), played in zip(climbs, done, strict=True):
        results.setdefault(arm.name, {})[mode] = played
    climb_index = {(arm.name, mode): k for k, (arm, mode, _) in enumerate(climbs)}
    position = {name: k for k, name in enumerate(order)}
    matches.sort(key=lambda m: (climb_index[(m.arm, m.mode)], position[m.opponent]))  # the serial order
    joint: dict[str, dict[str, dict[str, Any]]] = {}
    for arm_name, modes in results.items():
        joint[arm_name] = {}
        for mode, played in modes.items():
            rating = joint_rating_of_matches(played, ratings, resamples=settings.resamples)
            joint[arm_name][mode] = {**rating.to_dict(), "describe": rating.describe()}
            console.print(f"{arm_name} {mode}: {rating.describe()}")
    gain: dict[str, dict[str, Any]] = {}
    if FINAL in results and CONTROL in results:
        for mode, _ in settings.modes():
            arms = [[RungGames.from_pair_scores(n, ratings[n], m.pair_scores()) for n, m in results[a][mode].items()]
                    for a in (FINAL, CONTROL)]
            g = rating_gain(*arms, resamples=settings.resamples)
            gain[mode] = g.to_dict()
            console.print(f"{mode}: final minus control {g.describe()}")
    return FinalEvaluation(matches, joint, gain, order, table.header())


def rows_for_report(matches: Sequence[FinalMatch]) -> list[dict[str, Any]]:
    """``common.Row``-shaped dicts for ``run_all``'s markdown (rate = score)."""
    return [{"name": (f"{m.arm}: " if m.arm != FINAL else "") + f"vs {m.opponent}, {m.mode}"
             + (f" ({m.visits} visits)" if m.visits else ""),
             "rate": m.score, "unit": "score",
             "reference": f"95% [{m.score_lo:.2f}, {m.score_hi:.2f}], {m.games} games",
             "ratio": None, "extra": {"wins": m.wins, "draws": m.draws, "losses": m.losses}}
            for m in matches]
