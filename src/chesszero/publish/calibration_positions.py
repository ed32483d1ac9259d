"""The fixed calibration positions (SPEC 9: 516 real positions with history).

``data/calibration/positions.jsonl`` has one JSON object per line::

    {"id": "calib-0001", "start_fen": "<FEN>", "moves": ["e2e4", ...],
     "fen": "<FEN after the moves>", "ply": 37,
     "source": {"opening": "open-007", "white_nodes": 200, "black_nodes": 50,
                "result": "1-0", "game_plies": 143}}

- ``start_fen`` + ``moves`` (UCI) is the full game history up to the position:
  replay it (``core.Game(start_fen)`` then ``push_uci`` each move) to get the
  history planes and repetition counts right; ``fen`` and ``ply`` are checks.
- ``source`` says which Stockfish-vs-Stockfish game it was sampled from.
- Every position has at least one legal move (no finished games).

``positions.sha256`` holds the file's checksum (``sha256sum`` format).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import chess

from chesszero.fsio import verify_sha256, write_sha256

DEFAULT_POSITIONS = Path("data/calibration/positions.jsonl")
EXPECTED_COUNT = 516


@dataclass(frozen=True)
class CalibrationPosition:
    """One calibration position with its game history."""

    id: str
    start_fen: str
    moves: tuple[str, ...]
    fen: str
    source: dict[str, object] = field(default_factory=dict, compare=False)

    @property
    def ply(self) -> int:
        return len(self.moves)

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "start_fen": self.start_fen,
            "moves": list(self.moves),
            "fen": self.fen,
            "ply": self.ply,
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> CalibrationPosition:
        moves = data.get("moves")
        if not isinstance(moves, list):
            raise ValueError(f"position {data.get('id')!r}: 'moves' must be a list")
        source = data.get("source", {})
        position = cls(
            id=str(data["id"]),
            start_fen=str(data["start_fen"]),
            moves=tuple(str(m) for m in moves),
            fen=str(data["fen"]),
            source=dict(source) if isinstance(source, dict) else {},
        )
        if "ply" in data and data["ply"] != position.ply:
            raise ValueError(
                f"position {position.id!r}: ply {data['ply']} but {position.ply} moves"
            )
        return position

    def check(self) -> None:
        """Replay the moves (python-chess) and check the FEN and that moves remain."""
        board = chess.Board(self.start_fen)
        for uci in self.moves:
            move = chess.Move.from_uci(uci)
            if move not in board.legal_moves:
                raise ValueError(f"position {self.id!r}: illegal move {uci!r} in {board.fen()}")
            board.push(move)
        if board.fen() != self.fen:
            raise ValueError(f"position {self.id!r}: moves reach {board.fen()!r}, not {self.fen!r}")
        if is_finished(board):
            raise ValueError(f"position {self.id!r} is a finished game: {self.fen}")


def is_finished(board: chess.Board) -> bool:
    """Game over under the project's automatic rules (SPEC 6): checkmate,
    stalemate, insufficient material, threefold repetition (the position has
    occurred three times) or a halfmove clock of 100. Unlike python-chess's
    ``claim_draw`` this ignores draws that a move *could* claim."""
    return (
        board.is_checkmate()
        or board.is_stalemate()
        or board.is_insufficient_material()
        or board.is_repetition(3)
        or board.halfmove_clock >= 100
    )


def save_positions(positions: Sequence[CalibrationPosition], path: Path) -> Path:
    """Write the JSONL file and its checksum; returns the checksum path."""
    ids = [p.id for p in positions]
    if len(set(ids)) != len(ids):
        raise ValueError("calibration position ids must be unique")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(p.to_dict(), separators=(",", ":")) for p in positions]
    path.write_text("\n".join(lines) + "\n")
    return write_sha256(path)


def load_positions(
    path: Path = DEFAULT_POSITIONS, *, verify: bool = True, check: bool = False
) -> list[CalibrationPosition]:
    """Read the calibration set (checksum verified; ``check`` replays every position)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"calibration positions not found: {path}")
    if verify:
        verify_sha256(path)
    positions = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            positions.append(CalibrationPosition.from_dict(json.loads(line)))
        except (json.JSONDecodeError, KeyError) as error:
            raise ValueError(f"{path}:{number}: malformed position: {error}") from error
    if check:
        for position in positions:
            position.check()
    return positions
