"""The rating ladder: fixed opponents calibrated by their own matches (SPEC 10).

Rungs (``DEFAULT_RUNGS``, weakest first) and why:

- ``random``, ``greedy-r50``, ``greedy``: for the first generations of a
  campaign. ``greedy-r50`` plays a seeded half of its moves at random: the
  random mover loses every game to plain greed (24/24 in calibration), a
  sweep whose size the data cannot measure.
- ``sf-n1-r30``, ``sf-n1-r10``: Stockfish's minimum search playing a seeded
  30% / 10% of its moves uniformly at random, for the same reason: greedy
  loses every game to Stockfish's minimum search. A seeded random share is a
  reproducible weakening (Stockfish's own ``Skill Level`` is seeded from
  the clock, so it is not).
- ``sf-n1``: Stockfish's minimum search. Stockfish 15.1 always completes its
  first iterations (~47 nodes, depth 2), so 1, 10 and 20 nodes play
  identical moves; an ``sf-n10`` rung would duplicate ``sf-n1`` and ``sf-n100``
  is barely stronger (pilot: 5.5/10 for ``sf-n1``), so neither is a rung.
- ``sf-n300`` ... ``sf-n20000``: fixed node counts about a factor two apart
  (300, 600, 1000, 2000, 5000, 10000, 20000). At these budgets Stockfish
  gains 250-400 Elo per doubling (pilot: 300 vs 1000 and 1000 vs 5000 were
  clean sweeps), so wider steps would again leave sweeps.

``calibrate`` plays rung-vs-rung paired matches (each rung against the next
``reach`` rungs up), fits all games at once by maximum likelihood
(``rating_fit``, draws as half) and anchors Stockfish at 1,000 nodes at 1700
(the paper's anchor for that budget). The resulting ``LadderTable`` records
the anchor, engine version, calibration date, games per pairing and reach,
and every printed rating carries that header. With ``--progress`` (the
default on a terminal) it shows live progress with ``rich``.

A model is rated at a given search budget by ``rate_on_ladder``: it plays a
rung, walks up after a score above 0.5 and down after one below, and the
rating comes from the match whose score is nearest 0.5 (Elo interval from
the bootstrap in ``elo``, with that rung's rating as the fixed anchor). The
joint maximum-likelihood rating over every rung it played
(``joint_rating``) is the headline printed first; the nearest-rung rating
follows as the paper's number.

Command line (``chesszero.cli.ladder``)::

    chesszero ladder calibrate --games N --out data/ladder.json
    chesszero ladder show data/ladder.json
    chesszero ladder rate --model net.onnx --visits 800 --table data/ladder.json
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

import chess.engine

from chesszero.config.rungs import DEFAULT_RUNGS, Rung, RungKind
from chesszero.evaluate.elo import EloEstimate
from chesszero.evaluate.joint_rating import JointRating, joint_rating_of_matches
from chesszero.evaluate.match import GameRecord, MatchResult, play_match
from chesszero.evaluate.openings import Opening
from chesszero.evaluate.players import (
    STOCKFISH_PATH,
    GreedyPlayer,
    Player,
    RandomPlayer,
    StockfishPlayer,
)
from chesszero.evaluate.rating_fit import PairingResult, fit_ratings

ANCHOR_RUNG = "sf-n1000"
ANCHOR_RATING = 1700.0
DEFAULT_TABLE = Path("data/ladder.json")
"""The calibrated table shipped in the repository (relative to its root, like the openings)."""


def rung_player(rung: Rung, *, seed: int = 0, engines: int = 2) -> Player:
    """A fresh player for `rung` (the caller closes it)."""
    if rung.kind is RungKind.RANDOM:
        return RandomPlayer(seed=seed, name=rung.name)
    if rung.kind is RungKind.GREEDY:
        return GreedyPlayer(seed=seed, name=rung.name, random_share=rung.random_share)
    assert rung.nodes is not None
    return StockfishPlayer(
        nodes=rung.nodes,
        engines=engines,
        name=rung.name,
        random_share=rung.random_share,
        seed=seed,
    )




@dataclass
class LadderTable:
    """Calibrated rungs with their anchor, engine and date, as stored in JSON."""

    rungs: list[Rung]
    anchor: str = ANCHOR_RUNG
    anchor_rating: float = ANCHOR_RATING
    engine: str = ""
    calibrated: str = ""
    games_per_pairing: int = 0
    pairings: list[PairingResult] = field(default_factory=list)
    reach: int = 0
    seconds: float = 0.0
    """Wall-clock time the calibration took."""

    def __post_init__(self) -> None:
        names = [r.name for r in self.rungs]
        if len(set(names)) != len(names):
            raise ValueError(f"rung names must be unique, got {names!r}")
        if self.anchor not in names:
            raise ValueError(f"anchor {self.anchor!r} is not a rung of {names!r}")

    def header(self) -> str:
        """The calibration context printed with every rating."""
        games = f", {self.games_per_pairing} games/pairing" if self.games_per_pairing else ""
        return (
            f"ladder anchor {self.anchor} = {self.anchor_rating:.0f} "
            f"({self.engine or 'engine unknown'}, calibrated {self.calibrated or 'never'}{games})"
        )

    def rung(self, name: str) -> Rung:
        for r in self.rungs:
            if r.name == name:
                return r
        raise KeyError(f"no rung named {name!r}; rungs are {[r.name for r in self.rungs]}")

    def rating(self, name: str) -> float:
        value = self.rung(name).rating
        if value is None:
            raise ValueError(f"rung {name!r} is not calibrated")
        return value

    def ordered(self) -> list[Rung]:
        """Calibrated rungs from weakest to strongest."""
        rated = [r for r in self.rungs if r.rating is not None]
        return sorted(rated, key=lambda r: r.rating or 0.0)

    def describe(self) -> str:
        lines = [self.header()]
        for r in self.ordered():
            lines.append(f"  {r.name:>10}  {r.rating:7.0f}  +/- {r.stderr or 0.0:.0f}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        return {
            "anchor": {"rung": self.anchor, "rating": self.anchor_rating},
            "engine": self.engine,
            "calibrated": self.calibrated,
            "games_per_pairing": self.games_per_pairing,
            "reach": self.reach,
            "seconds": round(self.seconds, 1),
            "rungs": [r.to_dict() for r in self.rungs],
            "pairings": [p.to_dict() for p in self.pairings],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> LadderTable:
        anchor = data["anchor"]
        rungs, pairings = data["rungs"], data.get("pairings", [])
        if not isinstance(anchor, Mapping) or not isinstance(rungs, list):
            raise ValueError("ladder table needs an 'anchor' object and a 'rungs' list")
        return cls(
            rungs=[Rung.from_dict(r) for r in rungs],
            anchor=str(anchor["rung"]),
            anchor_rating=float(anchor["rating"]),
            engine=str(data.get("engine", "")),
            calibrated=str(data.get("calibrated", "")),
            games_per_pairing=int(data.get("games_per_pairing", 0)),  # type: ignore[call-overload]
            pairings=[PairingResult.from_dict(p) for p in pairings],  # type: ignore[union-attr]
            reach=int(data.get("reach", 0)),  # type: ignore[call-overload]
            seconds=float(data.get("seconds", 0.0)),  # type: ignore[arg-type]
        )

    def save(self, path: Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> LadderTable:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"ladder table not found: {path}")
        return cls.from_dict(json.loads(path.read_text()))


def ladder_pairings(rungs: Sequence[Rung], reach: int = 2) -> list[tuple[Rung, Rung]]:
    """Each rung against the next ``reach`` rungs in the given (weak-to-strong) order."""
    if reach < 1:
        raise ValueError(f"reach must be at least 1, got {reach!r}")
    return [
        (rungs[i], rungs[j])
        for i in range(len(rungs))
        for j in range(i + 1, min(len(rungs), i + 1 + reach))
    ]


def stockfish_version(path: str = STOCKFISH_PATH) -> str:
    """The engine's UCI ``id name`` (e.g. "Stockfish 15.1")."""
    engine = chess.engine.SimpleEngine.popen_uci(path)
    try:
        return str(engine.id.get("name", "unknown engine"))
    finally:
        engine.quit()


class CalibrationReporter(Protocol):
    """Receives calibration progress (``progress.RichReporter`` draws it)."""

    def begin(self, pairings: Sequence[tuple[str, str]], games_per_pairing: int) -> None: ...

    def game(self, record: GameRecord) -> None: ...

    def pairing(self, match: MatchResult, seconds: float) -> None: ...

    def end(self, table: LadderTable) -> None: ...


def calibrate(
    openings: Sequence[Opening],
    *,
    games_per_pairing: int,
    rungs: Sequence[Rung] = DEFAULT_RUNGS,
    anchor: str = ANCHOR_RUNG,
    anchor_rating: float = ANCHOR_RATING,
    reach: int = 2,
    concurrency: int = 2,
    engines: int = 1,
    max_plies: int = 300,
    reporter: CalibrationReporter | None = None,
) -> LadderTable:
    """Play the rung-vs-rung matches and fit the ratings; see the module docstring."""
    if games_per_pairing < 2 or games_per_pairing % 2:
        raise ValueError(
            f"games per pairing must be a positive even number, got {games_per_pairing}"
        )
    pairs_needed = games_per_pairing // 2
    if pairs_needed > len(openings):
        raise ValueError(
            f"{games_per_pairing} games per pairing need {pairs_needed} openings, "
            f"the suite has {len(openings)}"
        )
    suite = list(openings[:pairs_needed])
    pairings = ladder_pairings(rungs, reach)
    if reporter is not None:
        reporter.begin([(a.name, b.name) for a, b in pairings], games_per_pairing)
    started = time.monotonic()
    results: list[PairingResult] = []
    for weak, strong in pairings:
        a, b = rung_player(weak, engines=engines), rung_player(strong, engines=engines)
        began = time.monotonic()
        try:
            match = play_match(
                a,
                b,
                suite,
                concurrency=concurrency,
                max_plies=max_plies,
                on_game=reporter.game if reporter is not None else None,
            )
        finally:
            a.close()
            b.close()
        points = sum(g.score for g in match.games)
        results.append(PairingResult(weak.name, strong.name, len(match.games), points))
        if reporter is not None:
            reporter.pairing(match, time.monotonic() - began)
    fit = fit_ratings([r.name for r in rungs], results, anchor=anchor, anchor_rating=anchor_rating)
    table = LadderTable(
        rungs=[r.rated(fit.ratings[r.name], fit.stderr[r.name]) for r in rungs],
        anchor=anchor,
        anchor_rating=anchor_rating,
        engine=stockfish_version() if any(r.kind is RungKind.STOCKFISH for r in rungs) else "",
        calibrated=datetime.now(timezone.utc).date().isoformat(),
        games_per_pairing=games_per_pairing,
        pairings=results,
        reach=reach,
        seconds=time.monotonic() - started,
    )
    if reporter is not None:
        reporter.end(table)
    return table


def choose_rung(scores: Mapping[str, float]) -> str:
    """The rung whose match score is nearest 0.5 (ties: the first given)."""
    if not scores:
        raise ValueError("no rung scores to choose from")
    return min(scores, key=lambda name: abs(scores[name] - 0.5))


@dataclass(frozen=True)
class LadderRating:
    """A player's ladder rating at a budget, with the match it came from."""

    player: str
    budget: str
    rung: str
    elo: EloEstimate
    header: str
    scores: dict[str, float]
    joint: JointRating | None = None
    """Joint maximum-likelihood rating over every rung played (``joint_rating``)."""

    def describe(self) -> str:
        """The headline joint rating (when there is one), then the paper's
        nearest-rung rating with the ladder header on the next line."""
        line = (f"{self.player} @ {self.budget}: nearest rung (the paper's number) "
                f"{self.elo.describe(self.rung)}; {self.header}")
        if self.joint is None:
            return line
        return f"{self.player} @ {self.budget}: {self.joint.describe()}\n{line}"

    def to_dict(self) -> dict[str, object]:
        return {
            "player": self.player,
            "budget": self.budget,
            "rung": self.rung,
            "elo": self.elo.to_dict(),
            "joint": self.joint.to_dict() if self.joint is not None else None,
            "ladder": self.header,
            "scores": dict(self.scores),
        }


def rate_on_ladder(
    player: Player,
    table: LadderTable,
    openings: Sequence[Opening],
    *,
    budget: str,
    start: str | None = None,
    max_matches: int = 3,
    concurrency: int = 8,
    engines: int = 2,
    max_plies: int = 300,
    seed: int | None = 0,
) -> tuple[LadderRating, list[MatchResult]]:
    """Walk the ladder from ``start`` (default: the anchor) and rate ``player``."""
    order = table.ordered()
    names = [r.name for r in order]
    first = start or table.anchor
    if first not in names:
        raise ValueError(f"start rung {first!r} is not a calibrated rung of {names}")
    if max_matches < 1:
        raise ValueError(f"max_matches must be at least 1, got {max_matches!r}")
    position = names.index(first)
    matches: dict[str, MatchResult] = {}
    for _ in range(max_matches):
        rung = order[position]
        opponent = rung_player(rung, engines=engines)
        try:
            matches[rung.name] = play_match(
                player, opponent, openings, concurrency=concurrency, max_plies=max_plies
            )
        finally:
            opponent.close()
        score = matches[rung.name].score
        step = 1 if score > 0.5 else -1 if score < 0.5 else 0
        nxt = position + step
        if step == 0 or not 0 <= nxt < len(order) or names[nxt] in matches:
            break
        position = nxt
    scores = {name: m.score for name, m in matches.items()}
    chosen = choose_rung(scores)
    elo = matches[chosen].elo(table.rating(chosen), seed=seed)
    joint = joint_rating_of_matches(matches, {n: table.rating(n) for n in matches}, seed=seed)
    rating = LadderRating(player.name, budget, chosen, elo, table.header(), scores, joint)
    return rating, list(matches.values())
