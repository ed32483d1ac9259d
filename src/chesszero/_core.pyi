"""Type stub of the native extension ``chesszero._core`` (cpp/bindings/module.cpp).

Import through ``chesszero.core`` (board, rules, encoding), ``chesszero.search``
and ``chesszero.selfplay``; the alpha-beta engine (docs/nnue.md) is used from
``_core`` directly. This stub describes every native name.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable, Sequence
from typing import TypedDict

import numpy as np
import numpy.typing as npt

# ----------------------------------------------------------------------------- core

NUM_PLANES: int
NUM_BINARY_PLANES: int
NUM_ACTIONS: int
PACKED_BYTES: int
ENCODING_VERSION: int
HISTORY_MOVES: int

class Termination(enum.Enum):
    """Game-ending codes (cpp/core/game.h); PLY_CAP and RESIGNATION are self-play adjudications."""

    NONE = 0
    CHECKMATE = 1
    STALEMATE = 2
    INSUFFICIENT_MATERIAL = 3
    THREEFOLD_REPETITION = 4
    FIFTY_MOVES = 5
    PLY_CAP = 6
    RESIGNATION = 7

class GameResult(enum.Enum):
    """Result codes from White's point of view (cpp/core/game.h)."""

    ONGOING = 0
    WHITE_WINS = 1
    BLACK_WINS = 2
    DRAW = 3

class ChessError(ValueError): ...
class InvalidFenError(ChessError): ...
class IllegalMoveError(ChessError): ...
class InvalidActionError(ChessError): ...

class _Game:
    def __init__(self, fen: str | None = None) -> None: ...
    def _assign(self, other: _Game) -> None: ...
    def push_uci(self, uci: str) -> None: ...
    def push_action(self, action: int) -> None: ...
    def pop(self) -> str: ...
    def fen(self) -> str: ...
    def start_fen(self) -> str: ...
    def moves(self) -> list[str]: ...
    @property
    def ply(self) -> int: ...
    @property
    def turn(self) -> bool: ...
    @property
    def halfmove_clock(self) -> int: ...
    @property
    def fullmove_number(self) -> int: ...
    @property
    def key(self) -> int: ...
    @property
    def repetitions(self) -> int: ...
    def is_check(self) -> bool: ...
    def legal_uci(self) -> list[str]: ...
    def legal_actions(self) -> npt.NDArray[np.int32]: ...
    def legal_mask(self) -> npt.NDArray[np.bool_]: ...
    def action_of(self, uci: str) -> int: ...
    def uci_of(self, action: int) -> str: ...
    def encode(self) -> npt.NDArray[np.float32]: ...
    def encode_packed(self) -> npt.NDArray[np.uint8]: ...
    def _ending_actions(self) -> tuple[list[int], list[int]]: ...
    def _status(self) -> tuple[int, int]: ...
    def perft(self, depth: int) -> int: ...

def encode_batch(
    games: Sequence[_Game], out: npt.NDArray[np.float32] | None = None
) -> npt.NDArray[np.float32]: ...
def encode_packed_batch(
    games: Sequence[_Game], out: npt.NDArray[np.uint8] | None = None
) -> npt.NDArray[np.uint8]: ...
def unpack_planes(
    packed: npt.NDArray[np.uint8], out: npt.NDArray[np.float32] | None = None
) -> npt.NDArray[np.float32]: ...
def mirror_action(a: int) -> int: ...
def mirror_action_table() -> npt.NDArray[np.int32]: ...
def mirror_planes(planes: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]: ...
def mirror_packed(packed: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]: ...
def action_info(a: int) -> tuple[int, int, str | None]: ...

# --------------------------------------------------------------------------- search

class RootRule(enum.Enum):
    PUCT = 0
    GUMBEL = 1

def quiescent_material(fen: str, depth: int) -> int: ...
def gumbel_halving_counts(budget: int, m: int) -> list[int]: ...
def gumbel_improved_policy(
    raw: float, visits: list[float], prior: list[float], q: list[float], c_visit: float = 50.0, c_scale: float = 1.0
) -> tuple[list[float], list[float], float]: ...

class SearchOptions:
    """Options of one search tree; keyword construction, unknown keys raise ValueError."""

    c_puct: float
    fpu_reduction: float
    dirichlet_epsilon: float
    dirichlet_alpha: float
    forced_playout_k: float
    discount: float
    subtree_retention: float
    leaves_per_tree: int
    virtual_loss: float
    proven_results: bool
    twofold_draws: bool
    draw_score: float
    root: RootRule
    gumbel_considered: int
    gumbel_c_visit: float
    gumbel_c_scale: float
    moves_left_slope: float
    moves_left_cap: float
    moves_left_linear: float
    moves_left_quadratic: float
    leaf_material: float
    leaf_material_scale: float
    leaf_material_depth: int
    def __init__(self, **fields: float | int | bool | RootRule) -> None: ...
    @staticmethod
    def self_play() -> SearchOptions: ...
    @staticmethod
    def evaluation() -> SearchOptions: ...
    def validate(self) -> None: ...

class MoveChoice(enum.Enum):
    SAMPLE = 0
    MOST_VISITS = 1
    POLICY = 2

class MoveChoiceOptions:
    mode: MoveChoice
    temperature: list[tuple[int, float]]
    greedy_after_ply: int
    def __init__(self, **fields: object) -> None: ...
    def temperature_at(self, ply: int) -> float: ...
    def validate(self) -> None: ...

class ActorOptions:
    num_games: int
    max_outstanding: int
    seed: int
    search: SearchOptions
    choice: MoveChoiceOptions
    random_opening_min_plies: int
    random_opening_max_plies: int
    restart_fraction: float
    odds_fraction: float
    odds_min_material: int
    odds_max_material: int
    continuation_fraction: float
    full_search_fraction: float
    fast_visits: int
    policy_entries: int
    id_prefix: str
    def __init__(self, **fields: object) -> None: ...
    def validate(self) -> None: ...

class Searcher:
    def __init__(
        self, num_slots: int, options: SearchOptions, seed: int = 0, max_outstanding: int = 2
    ) -> None: ...
    @property
    def num_slots(self) -> int: ...
    @property
    def outstanding(self) -> int: ...
    @property
    def active(self) -> int: ...
    def start(self, slot: int, game: _Game, visits: int, noise: bool = False) -> None: ...
    def clear(self, slot: int) -> None: ...
    def prepare_batch(self, out_planes: npt.NDArray[np.float32]) -> int: ...
    def submit_results(
        self, logits: npt.ArrayLike, wdl: npt.ArrayLike, moves_left: npt.ArrayLike | None = None
    ) -> None: ...
    def result(self, slot: int, pv_len: int = 16) -> dict[str, object]: ...
    def proofs(self, slot: int) -> list[tuple[list[str], int, int]]: ...
    def choose_move(self, slot: int, choice: MoveChoiceOptions, ply: int = 0) -> str: ...
    def describe_batch(self) -> list[tuple[int, list[str]]]: ...

# ------------------------------------------------------------------------ self-play

class StartKind(enum.Enum):
    """How a self-play game started (cpp/selfplay/game_log.h)."""

    RANDOM = 0
    RESTART = 1
    ODDS = 2

def odds_fen(fen: str, min_pawns: int, max_pawns: int, seed: int) -> str | None: ...

class GameLog:
    id: str
    start_fen: str
    prefix: list[str]
    moves: list[str]
    start: StartKind
    continuation: bool
    @property
    def ply(self) -> npt.NDArray[np.int32]: ...
    @property
    def policy_offsets(self) -> npt.NDArray[np.int32]: ...
    @property
    def policy_ids(self) -> npt.NDArray[np.int16]: ...
    @property
    def policy_counts(self) -> npt.NDArray[np.float32]: ...
    @property
    def policy_prior(self) -> npt.NDArray[np.float32]: ...
    @property
    def policy_discarded(self) -> npt.NDArray[np.float32]: ...
    @property
    def root_value(self) -> npt.NDArray[np.float32]: ...
    @property
    def raw_value(self) -> npt.NDArray[np.float32]: ...
    @property
    def surprise(self) -> npt.NDArray[np.float32]: ...
    @property
    def best_q(self) -> npt.NDArray[np.float32]: ...
    @property
    def visits(self) -> npt.NDArray[np.float32]: ...
    @property
    def is_cap(self) -> npt.NDArray[np.uint8]: ...
    @property
    def is_tail(self) -> npt.NDArray[np.uint8]: ...
    @property
    def ending(self) -> int: ...
    @property
    def result(self) -> int: ...
    resigned_by: int
    resign_threshold: float
    cap_value: float
    visit_cap: int
    ply_cap: int
    seconds: float
    searches: int
    evaluations: int

class Actor:
    def __init__(self, options: ActorOptions) -> None: ...
    @property
    def options(self) -> ActorOptions: ...
    @property
    def outstanding(self) -> int: ...
    @property
    def max_outstanding(self) -> int: ...
    @property
    def active_games(self) -> int: ...
    @property
    def queued_restarts(self) -> int: ...
    @property
    def queued_resumes(self) -> int: ...
    accepting: bool
    def set_limits(
        self,
        visits: int,
        ply_cap: int,
        resign_threshold: float | None = None,
        tail_from_ply: int | None = None,
        tail_visits_divisor: int = 1,
        cap_from_preceding: bool = False,
    ) -> None: ...
    def queue_resume(
        self, game: _Game, prefix_len: int, id: str, start: StartKind, continuation: bool
    ) -> None: ...
    def queue_restart(self, game: _Game, id: str = "") -> None: ...
    def prepare_batch(self, out_planes: npt.NDArray[np.float32]) -> int: ...
    def submit_results(
        self, logits: npt.ArrayLike, wdl: npt.ArrayLike, moves_left: npt.ArrayLike | None = None
    ) -> None: ...
    def take_finished(self) -> list[GameLog]: ...
    def drain(self) -> list[GameLog]: ...
    def counters(self) -> dict[str, int]: ...
    def describe_batch(self) -> list[tuple[int, str, str, list[str]]]: ...

# ----------------------------------------------------------------------------- nnue

def nnue_features(fen: str) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """Sorted active feature indices (side to move's, the other side's) (docs/nnue.md section 1)."""

def nnue_features_batch(fens: Sequence[str]) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """(stm, nstm): int32 [n, 32], each row sorted and padded with -1."""

def nnue_simd_paths() -> list[str]:
    """The SIMD paths this CPU can run, portable first ("scalar", then "avx2", "avx512")."""

def nnue_simd() -> str: ...
def nnue_set_simd(name: str) -> None:
    """'auto' or one of nnue_simd_paths(); ValueError otherwise."""

class NnueNet:
    """A quantised NNUE network (docs/nnue.md); immutable, shareable between threads."""

    @staticmethod
    def load(path: str | os.PathLike[str]) -> NnueNet:
        """Reads a version-1 *.nnue file; ValueError naming the file on any defect."""

    @staticmethod
    def from_arrays(
        w1: npt.NDArray[np.int16], b1: npt.NDArray[np.int16], w2: npt.NDArray[np.int16], b2: int
    ) -> NnueNet:
        """int16 w1 (768, N), b1 (N,), w2 (2N,) and b2, range-checked; ValueError otherwise."""

    @property
    def hidden(self) -> int: ...
    def evaluate(self, fen: str) -> int:
        """Centipawns from the side to move's view."""

    def evaluate_batch(self, fens: Sequence[str]) -> npt.NDArray[np.int32]: ...
    def accumulators(self, fen: str) -> npt.NDArray[np.int16]:
        """int16 (2, N) by refresh, White's perspective first."""

    def trace(self, fen: str, moves: Sequence[str]) -> npt.NDArray[np.int16]:
        """int16 (plies + 1, 2, N): accumulators after each UCI move, updated incrementally."""

    def evaluate_line(self, fen: str, moves: Sequence[str]) -> npt.NDArray[np.int32]:
        """int32 (plies + 1,): centipawns after each move through the search's EvalStack; "0000" is a null move."""

# ----------------------------------------------------------------------- alpha-beta

def control_evaluate(fen: str) -> int:
    """The control evaluator (material + tapered piece-square tables), cp from the side to move's view."""

def alphabeta_see_ge(fen: str, move: str, threshold: int) -> bool:
    """Static exchange evaluation as the alpha-beta search uses it (a diagnostic)."""

class AlphaBetaResult(TypedDict):
    """What AlphaBeta.search returns and on_info receives (a stub-only name).

    score_cp and mate: one is set, the other None (both None when the search
    stopped before depth 1 completed); mate counts full moves, negative when
    the side to move is mated (0: it is checkmated now)."""

    best: str | None  # None only when the position has no legal move
    ponder: str | None
    score_cp: int | None
    mate: int | None
    depth: int
    seldepth: int
    nodes: int
    nps: int
    time_ms: int
    pv: list[str]

class AlphaBeta:
    """Alpha-beta searcher; net=None searches the control evaluator (NNUE nets are not wired yet).

    search() releases the GIL; stop() may be called from another thread meanwhile.
    A second search, clear() or set_hash() while one runs raises RuntimeError."""

    def __init__(self, net: object | None = None, hash_mb: int = 16) -> None: ...
    def search(
        self,
        fen: str,
        moves: Sequence[str] = [],
        depth: int = 0,
        nodes: int = 0,
        movetime_ms: int = 0,
        infinite: bool = False,
        on_info: Callable[[AlphaBetaResult], None] | None = None,
    ) -> AlphaBetaResult: ...
    def stop(self) -> None: ...
    def clear(self) -> None: ...
    def set_hash(self, mb: int) -> None: ...
