"""Value probe: does the network's value head know more than a material count?

Searched play of the ``cpu`` preset reaches about 750 on the ladder within a
few generations and stays there, while the raw policy keeps improving
(docs/learning.md). More visits buy little, a bigger trunk nothing, so the
question is what the value head has learned. This module scores value
functions against Stockfish on a campaign's own replay positions:

- positions: a seeded sample of the searched replay rows (:func:`~chesszero.
  evaluate.mate_recall.scan_replay`) or of one player's turns in ladder games
  (:func:`pgn_positions`: where searched play meets Stockfish and loses),
  replayed with the core so the planes carry the game's history, each
  labelled by Stockfish at a fixed depth, from the side to move (a mate is
  ``+-MATE_CP``);
- value functions: any network file (``W - L`` of its WDL head, side to move)
  and, as the reference a learned value has to beat, the material balance
  squashed like the search's material assist (``tanh(pawns / scale)``);
- measures: Spearman rank correlation with Stockfish's centipawns; the sign
  agreement on the positions Stockfish calls clearly decided (``|cp| >=
  decided_cp``; a value of exactly 0 counts half); and the mean absolute
  error against Stockfish's expected score ``2 / (1 + 10^(-cp / 400)) - 1``.

The untrained network scored beside the trained ones is the control.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chesszero.evaluate.players import STOCKFISH_PATH, material_balance

__all__ = ["LEAD_BUCKETS", "MATE_CP", "LabelledPosition", "LeadOutcomes", "ProbePosition", "ValueFit",
           "expected_score", "label_positions", "material_value", "onnx_value", "outcomes_by_lead", "pgn_positions",
           "replay_positions", "score_values", "value_fit"]

MATE_CP = 10_000
"""Centipawns standing for a forced mate (before clipping in the measures)."""

CLIP_CP = 1_500
"""Stockfish's scores are clipped to +-CLIP_CP for the rank correlation."""

ValueFn = Callable[[Sequence["LabelledPosition"]], np.ndarray]
"""``positions -> values in [-1, 1]`` from each position's side to move."""


@dataclass(frozen=True)
class ProbePosition:
    """A position to probe: its FEN and its planes (with the game's history)."""

    fen: str
    planes: np.ndarray  # float32 [52, 8, 8]


@dataclass(frozen=True)
class LabelledPosition:
    """A replay position with Stockfish's score and the material balance, both for the side to move."""

    fen: str
    planes: np.ndarray  # float32 [52, 8, 8], with the game's history
    sf_cp: int  # Stockfish's centipawns at the probe's depth; +-MATE_CP for a mate
    material: int  # pawns, side to move minus the other side


@dataclass(frozen=True)
class ValueFit:
    """How well one value function tracks Stockfish over ``positions``."""

    name: str
    positions: int
    spearman: float | None  # rank correlation with Stockfish's (clipped) centipawns
    decided: int  # positions with |cp| >= the decided threshold
    sign_agreement: float | None  # share of those where the value's sign is Stockfish's
    mae: float | None  # mean |value - expected score|

    def line(self) -> str:
        if not self.positions:
            return f"{self.name}: no positions"
        rho = "-" if self.spearman is None else f"{self.spearman:+.3f}"
        sign = "-" if self.sign_agreement is None else f"{self.sign_agreement:.1%}"
        return (f"{self.name}: Spearman {rho} over {self.positions} positions; sign agrees on {sign} of "
                f"{self.decided} decided positions; mean |value - Stockfish's expected score| {self.mae:.3f}")


LEAD_BUCKETS = ((-99, -9), (-8, -5), (-4, -2), (-1, 1), (2, 4), (5, 8), (9, 99))
"""Material leads in pawns (side to move), inclusive bounds, for :func:`outcomes_by_lead`."""


@dataclass(frozen=True)
class LeadOutcomes:
    """The searched rows whose side to move led by ``low..high`` pawns, and how their games ended for it."""

    low: int
    high: int
    rows: int
    wins: int
    draws: int
    losses: int

    @property
    def mean(self) -> float | None:
        """The mean outcome target (+1 / 0 / -1), or None without rows."""
        return (self.wins - self.losses) / self.rows if self.rows else None

    def line(self) -> str:
        if not self.rows:
            return f"lead {self.low:+d}..{self.high:+d}: no rows"
        return (f"lead {self.low:+d}..{self.high:+d} pawns: {self.rows} rows, mean outcome {self.mean:+.3f} "
                f"(won {self.wins / self.rows:.0%}, drawn {self.draws / self.rows:.0%}, "
                f"lost {self.losses / self.rows:.0%})")


def outcomes_by_lead(shards: Iterable[str | Path],
                     buckets: Sequence[tuple[int, int]] = LEAD_BUCKETS) -> list[LeadOutcomes]:
    """For each material lead bucket, how the games of the searched rows
    (late-tail searches excluded) ended for the side to move: what the
    outcome target teaches the value head about material."""
    from chesszero import core
    from chesszero.evaluate.mate_recall import shard_records

    counts = {b: [0, 0, 0] for b in buckets}  # wins, draws, losses
    for path, rec in shard_records(shards):
        white_result = {"1-0": 1, "0-1": -1}.get(rec["result"], 0)
        tail = rec.get("is_tail_search") or [False] * len(rec["ply"])
        searched = {int(p) for p, t in zip(rec["ply"], tail, strict=True) if not t}
        try:
            game = core.Game(rec["start_fen"])
            for uci in rec["prefix_moves"] or []:
                game.push_uci(uci)
            moves = rec["moves"]
            for p in range(len(moves) + 1):  # a ply-cap game's cut search sits after its last move
                if p in searched:
                    fen = game.fen()
                    white = fen.split()[1] == "w"
                    lead = material_balance(fen, white)
                    outcome = white_result if white else -white_result
                    for b in buckets:
                        if b[0] <= lead <= b[1]:
                            counts[b][1 - outcome] += 1
                if p < len(moves):
                    game.push_uci(moves[p])
        except core.ChessError as exc:
            raise ValueError(f"{path}: game {rec.get('game_id')}: {exc}") from exc
    return [LeadOutcomes(lo, hi, sum(c), *c) for (lo, hi), c in counts.items()]


def expected_score(cp: np.ndarray | Sequence[int]) -> np.ndarray:
    """Stockfish's centipawns as an expected score in [-1, 1] (logistic, 400 cp per factor of ten)."""
    x = np.clip(np.asarray(cp, dtype=np.float64), -CLIP_CP, CLIP_CP)
    return 2.0 / (1.0 + np.power(10.0, -x / 400.0)) - 1.0


def replay_positions(shards: Iterable[str | Path], *, sample_fraction: float = 0.15,
                     seed: int = 0) -> list[ProbePosition]:
    """A seeded sample of the searched rows of ``shards`` (self-play shards)."""
    from chesszero.evaluate.mate_recall import scan_replay

    scan = scan_replay(shards, sample_fraction=sample_fraction, seed=seed)
    return [ProbePosition(p.fen, p.planes) for p in scan.sample]


def pgn_positions(paths: Iterable[str | Path], player: str, *, sample_fraction: float = 1.0, skip_plies: int = 0,
                  seed: int = 0) -> list[ProbePosition]:
    """The positions where ``player`` (a PGN White/Black name) was to move, in
    every game of ``paths`` that it played, after the first ``skip_plies``
    plies, each kept with probability ``sample_fraction`` (seeded)."""
    import chess.pgn

    from chesszero import core

    if not 0.0 <= sample_fraction <= 1.0:
        raise ValueError(f"sample_fraction must lie in [0, 1], got {sample_fraction!r}")
    if skip_plies < 0:
        raise ValueError(f"skip_plies must be >= 0, got {skip_plies}")
    rng = np.random.default_rng(seed)
    out: list[ProbePosition] = []
    for path in paths:
        try:
            handle = io.StringIO(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: cannot read the PGN file: {exc}") from exc
        number = 0
        while (pgn := chess.pgn.read_game(handle)) is not None:
            number += 1
            if pgn.errors:
                raise ValueError(f"{path}: game {number}: {pgn.errors[0]}")
            colours = [c for c, key in ((True, "White"), (False, "Black")) if pgn.headers.get(key) == player]
            if not colours:
                continue
            board = pgn.board()
            try:
                game = core.Game(board.fen())
                for ply, move in enumerate(pgn.mainline_moves()):
                    if ply >= skip_plies and board.turn == colours[0] and rng.random() < sample_fraction:
                        out.append(ProbePosition(game.fen(), game.encode()))
                    game.push_uci(move.uci())
                    board.push(move)
            except core.ChessError as exc:
                raise ValueError(f"{path}: game {number}: {exc}") from exc
    return out


def label_positions(positions: Iterable[ProbePosition], *, depth: int = 8, path: str = STOCKFISH_PATH,
                    threads: int = 1) -> list[LabelledPosition]:
    """Each position with Stockfish's score at ``depth`` (side to move) and its material balance."""
    import chess
    import chess.engine

    if not 1 <= depth <= 40:
        raise ValueError(f"depth must lie in 1..40, got {depth}")
    if not Path(path).is_file():
        raise ValueError(f"{path}: no Stockfish binary there (apt-get install -y stockfish, or pass its path)")
    out = []
    engine = chess.engine.SimpleEngine.popen_uci(path)
    try:
        engine.configure({"Threads": threads, "Hash": 16})
        for pos in positions:
            try:
                board = chess.Board(pos.fen)
            except ValueError as exc:
                raise ValueError(f"{pos.fen!r}: not a FEN python-chess accepts: {exc}") from exc
            if board.is_game_over(claim_draw=False):
                continue  # no move to search; the probe scores positions with one
            info = engine.analyse(board, chess.engine.Limit(depth=depth))
            cp = info["score"].pov(board.turn).score(mate_score=MATE_CP)
            out.append(LabelledPosition(fen=pos.fen, planes=pos.planes, sf_cp=int(cp),
                                        material=material_balance(pos.fen, board.turn == chess.WHITE)))
    finally:
        engine.quit()
    return out


def material_value(scale: float = 5.0) -> ValueFn:
    """The material balance as a value, ``tanh(pawns / scale)`` (the material assist's form)."""
    if scale <= 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    return lambda positions: np.tanh(np.array([p.material for p in positions], dtype=np.float64) / scale)


def onnx_value(path: str | Path, *, threads: int = 1, batch: int = 256) -> ValueFn:
    """``W - L`` of an ONNX network file's WDL head (ONNX Runtime on CPU)."""
    from chesszero.evaluate.mate_recall import load_onnx

    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    evaluator = load_onnx(path, threads=threads)

    def values(positions: Sequence[LabelledPosition]) -> np.ndarray:
        out = []
        for k in range(0, len(positions), batch):
            wdl = np.asarray(evaluator.evaluate(np.stack([p.planes for p in positions[k:k + batch]]))[1],
                             dtype=np.float64)
            out.append(wdl[:, 0] - wdl[:, 2])
        return np.concatenate(out) if out else np.zeros(0)

    return values


def value_fit(name: str, positions: Sequence[LabelledPosition], values: np.ndarray, *,
              decided_cp: int = 200) -> ValueFit:
    """The measures of ``values`` (one per position, side to move, in [-1, 1]) against Stockfish."""
    from scipy.stats import spearmanr

    if decided_cp < 0:
        raise ValueError(f"decided_cp must be >= 0, got {decided_cp}")
    v = np.asarray(values, dtype=np.float64)
    if v.shape != (len(positions),):
        raise ValueError(f"{name}: {v.shape[0] if v.ndim else 0} values for {len(positions)} positions")
    if not np.all(np.isfinite(v)) or np.any(np.abs(v) > 1.0 + 1e-6):
        raise ValueError(f"{name}: values must be finite and lie in [-1, 1]")
    if not positions:
        return ValueFit(name, 0, None, 0, None, None)
    cp = np.array([p.sf_cp for p in positions], dtype=np.float64)
    clipped = np.clip(cp, -CLIP_CP, CLIP_CP)
    rho = None
    if len(positions) > 2 and np.ptp(clipped) > 0 and np.ptp(v) > 0:
        rho = float(spearmanr(v, clipped).statistic)
    decided = np.abs(cp) >= decided_cp
    sign = None
    if decided.any():
        agree = np.where(v[decided] == 0, 0.5, (np.sign(v[decided]) == np.sign(cp[decided])).astype(float))
        sign = float(agree.mean())
    mae = float(np.mean(np.abs(v - expected_score(cp))))
    return ValueFit(name, len(positions), rho, int(decided.sum()), sign, mae)


def score_values(positions: Sequence[LabelledPosition], values: dict[str, ValueFn], *,
                 decided_cp: int = 200) -> list[ValueFit]:
    """:func:`value_fit` of each named value function, in order."""
    return [value_fit(name, positions, fn(positions), decided_cp=decided_cp) for name, fn in values.items()]
