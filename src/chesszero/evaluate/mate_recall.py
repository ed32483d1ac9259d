"""Mate recall and target agreement: does the network's policy take the
mates in one it was trained on, and does it pick its targets' top moves?

The learning benchmark counts mates in one taken in play (:mod:`.mates`).
This module asks the question one step closer to training: among a
campaign's own replay positions that hold a mate in one, how often is the
network's top legal move a mate, how much policy mass does it put on the
mating moves, and how often did the stored search target itself pick one?
A network that underfits its targets shows a high target share and a low
top-move share (docs/learning.md: about one mate in ten at generation 39 of
the cpu preset, although the search target took the mate every time).

Positions are replayed from the shards with the core, so the planes carry
the same history and repetition planes the training rows had. Late-tail
searches (never admitted as rows) are skipped. A seeded sample of all the
searched positions gives the general measure beside it: how often the
network's top legal move is the stored target's top move. The positions
where some legal move stalemates get the same questions with the sign
turned: how much weight the stored target and the network put on the
stalemating moves, and how often either's top move is one (the raw policy
stalemates far-ahead games against the random mover; this tells a target
that teaches it from a network that does it on its own).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from chesszero import core
from chesszero.evaluate.mates import ending_moves

__all__ = ["Agreement", "MatePosition", "MateRecall", "ReplayScan", "SampledPosition", "StalematePosition",
           "StalemateRisk", "latest_artifact", "load_onnx", "mate_positions", "mate_recall", "onnx_policy",
           "own_target_fit", "scan_replay", "shard_paths", "shard_records", "stalemate_risk", "target_agreement"]

PolicyFn = Callable[[np.ndarray], np.ndarray]
"""``planes float32[N, 52, 8, 8] -> policy logits [N, 1880]``."""


@dataclass(frozen=True)
class SampledPosition:
    """One searched replay position: its planes, legal actions and target's top action."""

    fen: str
    planes: np.ndarray  # float32 [52, 8, 8], with the game's history
    legal: np.ndarray  # int32 legal action ids
    target_top: int  # the stored search target's highest-weight action


@dataclass(frozen=True)
class MatePosition(SampledPosition):
    """A searched replay position with a mate in one on the board."""

    mates: frozenset[int] = frozenset()  # the legal actions that mate
    target_mass: float = 0.0  # the stored target's weight on the mating actions


@dataclass(frozen=True)
class StalematePosition(SampledPosition):
    """A searched replay position where some legal move stalemates."""

    stalemates: frozenset[int] = frozenset()  # the legal actions that stalemate
    target_mass: float = 0.0  # the stored target's weight on them


@dataclass(frozen=True)
class ReplayScan:
    """What :func:`scan_replay` found: the rows counted, those with a mate in
    one, the seeded sample of all rows and those with a stalemating move."""

    rows: int
    mates: list[MatePosition]
    sample: list[SampledPosition]
    stalemates: list[StalematePosition] = field(default_factory=list)


@dataclass(frozen=True)
class Agreement:
    """How often the network's top legal move is the target's top move, over ``positions``."""

    positions: int
    agree: int
    target_prob_median: float | None  # the network's probability on the target's top move

    def line(self) -> str:
        if not self.positions:
            return "no sampled positions"
        return (f"top move = target's top move on {self.agree} of {self.positions} sampled positions "
                f"({self.agree / self.positions:.0%}); probability on the target's top move: median "
                f"{self.target_prob_median:.3f}")


@dataclass(frozen=True)
class MateRecall:
    """Counts over a set of replay positions (``positions`` of ``rows`` hold a mate in one)."""

    rows: int
    positions: int
    target_top_mates: int
    top_mates: int
    mass_median: float | None
    mass_mean: float | None

    def line(self) -> str:
        if not self.positions:
            return f"{self.rows} searched positions, none with a mate in one"
        return (f"{self.positions} of {self.rows} searched positions hold a mate in one; the search "
                f"target's top move mates on {self.target_top_mates}, the network's top move on "
                f"{self.top_mates} ({self.top_mates / self.positions:.0%}); policy mass on the mates: "
                f"median {self.mass_median:.3f}, mean {self.mass_mean:.3f}")


@dataclass(frozen=True)
class StalemateRisk:
    """Counts over the ``positions`` (of ``rows``) where some legal move stalemates."""

    rows: int
    positions: int
    target_top_stalemates: int  # the stored target's top move stalemates
    top_stalemates: int  # the network's top legal move stalemates
    target_mass_mean: float | None  # the stored target's mean weight on the stalemating moves
    mass_mean: float | None  # the network's mean softmax mass on them

    def line(self) -> str:
        if not self.positions:
            return f"{self.rows} searched positions, none with a stalemating move"
        return (f"{self.positions} of {self.rows} searched positions have a stalemating move; the search "
                f"target's top move stalemates on {self.target_top_stalemates}, the network's top move on "
                f"{self.top_stalemates} ({self.top_stalemates / self.positions:.0%}); mean weight on the "
                f"stalemating moves: target {self.target_mass_mean:.3f}, network {self.mass_mean:.3f}")


def shard_paths(run_dir: str | Path, first: int, last: int) -> list[Path]:
    """The Parquet shards of generations ``first..last`` of a campaign folder."""
    if first < 0 or last < first:
        raise ValueError(f"generations must satisfy 0 <= first <= last, got {first}..{last}")
    root = Path(run_dir) / "shards"
    if not root.is_dir():
        raise ValueError(f"{run_dir}: no shards/ folder (not a campaign run directory?)")
    paths = [p for g in range(first, last + 1) for p in sorted((root / f"gen_{g:04d}").glob("*.parquet"))]
    if not paths:
        raise ValueError(f"{root}: no shards for generations {first}..{last}")
    return paths


def latest_artifact(run: str | Path, last: int) -> Path:
    """The newest ``artifacts/gen_NNNN/int8.onnx`` of generation ``last`` or before."""
    found = sorted(p for p in (Path(run) / "artifacts").glob("gen_*/int8.onnx") if int(p.parent.name[4:]) <= last)
    if not found:
        raise ValueError(f"{run}/artifacts: no gen_*/int8.onnx up to generation {last}; pass --model")
    return found[-1]


def _record_positions(rec: dict, scan: ReplayScan, draw: Callable[[], bool]) -> int:
    """Appends the record's mate, stalemate and sampled (``draw()`` true)
    positions to ``scan``'s lists; returns its searched rows."""
    searched = {int(p): i for i, p in enumerate(rec["ply"])}
    tail = rec.get("is_tail_search") or [False] * len(searched)
    game = core.Game(rec["start_fen"])
    for uci in rec["prefix_moves"] or []:
        game.push_uci(uci)
    moves = rec["moves"]
    rows = 0
    for p in range(len(moves) + 1):
        i = searched.get(p)
        if i is not None and not tail[i]:
            rows += 1
            ids = [int(a) for a in rec["policy_ids"][i]]
            counts = np.asarray(rec["policy_counts"][i], dtype=np.float64)
            here = dict(fen=game.fen(), planes=game.encode(), legal=np.asarray(game.legal_actions()),
                        target_top=ids[int(np.argmax(counts))])
            if draw():
                scan.sample.append(SampledPosition(**here))
            mates, stalemates = ending_moves(game)
            if mates:
                mate_ids = frozenset(game.action_of(u) for u in mates)
                scan.mates.append(MatePosition(**here, mates=mate_ids, target_mass=_mass(ids, counts, mate_ids)))
            if stalemates:
                stale_ids = frozenset(game.action_of(u) for u in stalemates)
                scan.stalemates.append(StalematePosition(**here, stalemates=stale_ids,
                                                         target_mass=_mass(ids, counts, stale_ids)))
        if p < len(moves):
            game.push_uci(moves[p])
    return rows


def _mass(ids: list[int], counts: np.ndarray, among: frozenset[int]) -> float:
    """The target's share on the actions ``among``."""
    return float(sum(c for a, c in zip(ids, counts, strict=True) if a in among) / counts.sum())


def shard_records(shards: Iterable[str | Path]) -> Iterator[tuple[str | Path, dict]]:
    """Every game record of ``shards`` as a dict, with its shard's path; a
    ValueError naming the shard when one is not a readable self-play shard."""
    from chesszero.selfplay.records import read_shard

    for path in shards:
        try:
            frame = read_shard(path)
        except Exception as exc:  # unreadable file, bad Parquet or schema violation
            raise ValueError(f"{path}: not a readable self-play shard: {str(exc).splitlines()[0][:300]}") from exc
        for rec in frame.iter_rows(named=True):
            yield path, rec


def scan_replay(shards: Iterable[str | Path], *, sample_fraction: float = 0.0, seed: int = 0) -> ReplayScan:
    """Replays every game of ``shards``: the searched rows, those with a mate
    in one, and a sample of each row with probability ``sample_fraction``
    (seeded, so the same shards give the same sample)."""
    if not 0.0 <= sample_fraction <= 1.0:
        raise ValueError(f"sample_fraction must lie in [0, 1], got {sample_fraction!r}")
    rng = np.random.default_rng(seed)
    scan, rows = ReplayScan(0, [], []), 0
    for path, rec in shard_records(shards):
        try:
            rows += _record_positions(rec, scan, lambda: bool(rng.random() < sample_fraction))
        except core.ChessError as exc:
            raise ValueError(f"{path}: game {rec.get('game_id')}: {exc}") from exc
    return replace(scan, rows=rows)


def mate_positions(shards: Iterable[str | Path]) -> tuple[int, list[MatePosition]]:
    """The searched rows counted and the positions among them with a mate in one."""
    scan = scan_replay(shards)
    return scan.rows, scan.mates


def _legal_probs(policy: PolicyFn, chunk: Sequence[SampledPosition]) -> list[np.ndarray]:
    """The policy's softmax over each position's legal actions (in ``legal`` order)."""
    logits = np.asarray(policy(np.stack([p.planes for p in chunk])), dtype=np.float64)
    if logits.shape != (len(chunk), int(core.NUM_ACTIONS)):
        raise ValueError(f"policy returned logits of shape {logits.shape}, "
                         f"expected ({len(chunk)}, {int(core.NUM_ACTIONS)})")
    out = []
    for row, pos in zip(logits, chunk, strict=True):
        legal = row[pos.legal]
        prob = np.exp(legal - legal.max())
        out.append(prob / prob.sum())
    return out


def target_agreement(sample: Sequence[SampledPosition], policy: PolicyFn, *, batch: int = 64) -> Agreement:
    """How often ``policy``'s top legal move is the stored target's top move."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    agree, probs = 0, []
    for k in range(0, len(sample), batch):
        chunk = sample[k:k + batch]
        for prob, pos in zip(_legal_probs(policy, chunk), chunk, strict=True):
            agree += int(pos.legal[int(np.argmax(prob))]) == pos.target_top
            probs.append(float(prob[list(pos.legal).index(pos.target_top)]))
    return Agreement(len(sample), agree, float(np.median(probs)) if probs else None)


def _scores_on(positions: Sequence[SampledPosition], moves: Callable[[SampledPosition], frozenset[int]],
               policy: PolicyFn, batch: int) -> tuple[list[float], int]:
    """``policy``'s softmax mass on each position's ``moves(pos)`` and how
    often its top legal move is one of them."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    masses, top = [], 0
    for k in range(0, len(positions), batch):
        chunk = positions[k:k + batch]
        for prob, pos in zip(_legal_probs(policy, chunk), chunk, strict=True):
            among = moves(pos)
            masses.append(float(sum(p for a, p in zip(pos.legal, prob, strict=True) if int(a) in among)))
            top += int(pos.legal[int(np.argmax(prob))]) in among
    return masses, top


def mate_recall(rows: int, positions: Sequence[MatePosition], policy: PolicyFn, *,
                batch: int = 64) -> MateRecall:
    """Scores ``policy`` on ``positions``: top legal move a mate, softmax mass on the mates."""
    masses, top = _scores_on(positions, lambda pos: pos.mates, policy, batch)
    return MateRecall(
        rows=rows, positions=len(positions),
        target_top_mates=sum(p.target_top in p.mates for p in positions), top_mates=top,
        mass_median=float(np.median(masses)) if masses else None,
        mass_mean=float(np.mean(masses)) if masses else None)


def stalemate_risk(rows: int, positions: Sequence[StalematePosition], policy: PolicyFn, *,
                   batch: int = 64) -> StalemateRisk:
    """Scores ``policy`` on ``positions``: top legal move a stalemate, softmax mass on the stalemates."""
    masses, top = _scores_on(positions, lambda pos: pos.stalemates, policy, batch)
    return StalemateRisk(
        rows=rows, positions=len(positions),
        target_top_stalemates=sum(p.target_top in p.stalemates for p in positions), top_stalemates=top,
        target_mass_mean=float(np.mean([p.target_mass for p in positions])) if positions else None,
        mass_mean=float(np.mean(masses)) if masses else None)


def load_onnx(path: str | Path, *, threads: int = 1):
    """An :class:`~chesszero.search.evaluators.OnnxEvaluator` of ``path``, or a
    ValueError naming the file when it is not a loadable network."""
    from chesszero.search.evaluators import OnnxEvaluator

    try:
        return OnnxEvaluator(path, threads=threads)
    except ValueError:
        raise
    except Exception as exc:  # ONNX Runtime's own errors for a file that is not a model
        raise ValueError(f"{path}: not a loadable ONNX network: {str(exc).splitlines()[0][:300]}") from exc


def onnx_policy(path: str | Path, *, threads: int = 1) -> PolicyFn:
    """The policy logits of an ONNX network file (ONNX Runtime on CPU)."""
    evaluator = load_onnx(path, threads=threads)
    return lambda planes: evaluator.evaluate(planes)[0]


def own_target_fit(scan: ReplayScan, policy: PolicyFn) -> dict[str, dict[str, float | int | None]]:
    """Target agreement on the scan's sample, mate recall on its mate positions
    and stalemate risk on its stalemate positions, as plain dicts."""
    from dataclasses import asdict

    return {"target_agreement": asdict(target_agreement(scan.sample, policy)),
            "mate_recall": asdict(mate_recall(scan.rows, scan.mates, policy)),
            "stalemate_risk": asdict(stalemate_risk(scan.rows, scan.stalemates, policy))}
