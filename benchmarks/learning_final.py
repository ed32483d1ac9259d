"""The learning benchmark's final evaluation: the final artifact against fixed rungs.

``final_evaluation(settings, console)`` plays, for every mode (policy only,
then ``visits`` visits per move) and every rung of ``settings.opponents``
(ladder rungs from ``data/ladder.json``), one paired match over the first
``settings.openings`` openings of the suite (each opening with both colours)
through ``chesszero.evaluate.match.play_match`` with the network as an
``EnginePlayer`` searching with ``settings.search()`` (the campaign's
evaluation search: no noise, most visits, no material assist). Each match
gives a ``FinalMatch``: W/D/L, the score with its 95%
interval and the Elo with its interval from ``MatchResult.elo`` (bootstrap over
opening pairs, anchored at the rung's calibrated rating), the terminations,
the mean final material and, where the match code has it
(``MatchResult.conversion``), the conversion count: games in which our side
led by 5+ pawns at some point, and how many of them it won.
Per mode, the joint maximum-likelihood rating over the rungs played
(``chesszero.evaluate.joint_rating``; a bound when every game was won or
lost) sits beside them. Match games (JSON + PGN) go to
``settings.games_dir``. Progress: an overall bar over all games and one bar
per match with its running +W =D -L.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
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

OPPONENTS = ("random", "greedy-r50", "greedy")
"""Issue 10's opponents for the learning benchmark, weakest first."""


@dataclass(frozen=True)
class FinalSettings:
    """What the final evaluation plays (module docstring)."""

    artifact: Path
    ladder: Path
    openings_file: Path
    games_dir: Path
    openings: int = 50
    visits: int = 64
    opponents: tuple[str, ...] = OPPONENTS
    max_plies: int = 300
    resamples: int = 10_000
    concurrency: int = 16
    threads: int = 1
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

    @property
    def conversion_rate(self) -> float | None:
        if not self.conversion_opportunities or self.conversion_converted is None:
            return None
        return self.conversion_converted / self.conversion_opportunities

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "conversion_rate": self.conversion_rate}


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
              resamples: int, seconds: float) -> FinalMatch:
    """A ``FinalMatch`` from a ``MatchResult`` against a rung rated ``rating``."""
    elo = result.elo(rating, resamples=resamples)
    lo, hi = score_interval(elo)
    conversion = conversion_counts(result)
    return FinalMatch(
        opponent=opponent, mode=mode, visits=visits, games=len(result.games), wins=result.wins,
        draws=result.draws, losses=result.losses, score=result.score, score_lo=lo, score_hi=hi,
        elo=elo.estimate, elo_lo=elo.lower, elo_hi=elo.upper, elo_bound=elo.is_bound, rung_rating=rating,
        terminations=dict(Counter(g.termination for g in result.games)),
        final_material=result.final_material(),
        conversion_opportunities=None if conversion is None else conversion[0],
        conversion_converted=None if conversion is None else conversion[1], seconds=round(seconds, 1))


@dataclass(frozen=True)
class FinalEvaluation:
    """The final matches, the joint rating per mode and the ladder they refer to."""

    matches: list[FinalMatch]
    joint: dict[str, dict[str, Any]]
    """Per mode: ``JointRating.to_dict()`` plus its ``describe()`` line."""
    ladder: str


def final_evaluation(settings: FinalSettings, console: Console | None = None) -> FinalEvaluation:
    """Plays every (mode, opponent) match; see the module docstring."""
    from chesszero.evaluate.engine_player import EnginePlayer
    from chesszero.evaluate.joint_rating import joint_rating_of_matches
    from chesszero.evaluate.ladder import LadderTable, rung_player
    from chesszero.evaluate.match import play_match
    from chesszero.evaluate.openings import load_openings
    from chesszero.publish.loading import load_evaluator

    console = console or Console(stderr=True)
    table = LadderTable.load(settings.ladder)
    suite = load_openings(settings.openings_file)
    if settings.openings > len(suite):
        raise ValueError(f"--openings {settings.openings}: {settings.openings_file} has only {len(suite)}")
    openings = suite[: settings.openings]
    ratings = {name: table.rating(name) for name in settings.opponents}  # unknown rung: KeyError names it
    evaluator = load_evaluator(settings.artifact, threads=settings.threads)
    plan = [(mode, visits, opp) for mode, visits in settings.modes() for opp in settings.opponents]
    settings.games_dir.mkdir(parents=True, exist_ok=True)
    matches: list[FinalMatch] = []
    results: dict[str, dict[str, Any]] = {mode: {} for mode, _ in settings.modes()}
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn())
    with Progress(*columns, console=console) as progress:
        overall = progress.add_task("final evaluation", total=len(plan) * 2 * len(openings))
        for k, (mode, visits, opp) in enumerate(plan, 1):
            label = f"[{k}/{len(plan)}] {mode} vs {opp}"
            current = progress.add_task(label, total=2 * len(openings))
            tally = Counter[float]()

            def on_game(record: Any, label: str = label, current: Any = current,
                        tally: Counter[float] = tally) -> None:
                tally[record.score] += 1
                progress.update(current, advance=1, description=f"{label} +{tally[1.0]:.0f} "
                                f"={tally[0.5]:.0f} -{tally[0.0]:.0f}")
                progress.advance(overall)

            options = settings.search() if settings.search is not None and visits is not None else None
            model = EnginePlayer(evaluator, visits=visits, name=f"model-{mode}", slots=settings.concurrency,
                                 options=options)
            opponent = rung_player(table.rung(opp), seed=0, engines=2)
            began = time.monotonic()
            try:
                result = play_match(model, opponent, openings, max_plies=settings.max_plies,
                                    concurrency=settings.concurrency, event=f"final {mode} vs {opp}",
                                    on_game=on_game)
            finally:
                model.close()
                opponent.close()
            (settings.games_dir / f"{mode}_vs_{opp}.pgn").write_text(result.pgn())
            (settings.games_dir / f"{mode}_vs_{opp}.json").write_text(json.dumps(result.to_dict(), indent=1))
            results[mode][opp] = result
            line = summarize(result, opp, mode, visits, ratings[opp], settings.resamples,
                             time.monotonic() - began)
            matches.append(line)
            progress.remove_task(current)
            progress.console.print(f"[green]done[/green] {mode} vs {opp}: +{line.wins} ={line.draws} "
                                   f"-{line.losses}  score {line.score:.3f} [{line.score_lo:.3f}, "
                                   f"{line.score_hi:.3f}]  {line.seconds:.0f} s")
    joint = {}
    for mode, played in results.items():
        rating = joint_rating_of_matches(played, ratings, resamples=settings.resamples)
        joint[mode] = {**rating.to_dict(), "describe": rating.describe()}
        console.print(f"{mode}: {rating.describe()}")
    return FinalEvaluation(matches, joint, table.header())


def rows_for_report(matches: Sequence[FinalMatch]) -> list[dict[str, Any]]:
    """``common.Row``-shaped dicts for ``run_all``'s markdown (rate = score)."""
    return [{"name": f"vs {m.opponent}, {m.mode}" + (f" ({m.visits} visits)" if m.visits else ""),
             "rate": m.score, "unit": "score",
             "reference": f"95% [{m.score_lo:.2f}, {m.score_hi:.2f}], {m.games} games",
             "ratio": None, "extra": {"wins": m.wins, "draws": m.draws, "losses": m.losses}}
            for m in matches]
