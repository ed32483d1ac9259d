"""The opening suite: file format, loading and checksum verification.

``data/openings/openings.epd`` holds one opening per line as an EPD record
(the first four FEN fields of the position *after* the opening) followed by
operations, e.g.::

    rnbqkb1r/pp2pppp/... w KQkq - hmvc 0; fmvn 9; id "open-001"; moves "e2e4 c7c5 ..."; ce 12; acd 12;

- ``hmvc``/``fmvn``: halfmove clock and fullmove number (standard EPD opcodes);
- ``id``: the opening's name, unique in the suite;
- ``moves``: the opening as space-separated UCI moves from the standard start
  position (the position history matters to the network and to repetition
  rules, so openings are always replayed from the start, never set from FEN);
- ``ce``: Stockfish centipawn evaluation for the side to move, ``acd``: its depth.

``openings.sha256`` next to it has ``sha256sum`` format (``<hex>  openings.epd``);
``load_openings`` verifies it when present. python-chess is used here only to
read and write EPD and to check that each line's moves reach its position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import chess

from chesszero.fsio import verify_sha256, write_sha256

STANDARD_FEN = chess.STARTING_FEN
DEFAULT_OPENINGS = Path("data/openings/openings.epd")


@dataclass(frozen=True)
class Opening:
    """An opening line played from ``start_fen`` (the standard position)."""

    id: str
    moves: tuple[str, ...]
    start_fen: str = STANDARD_FEN
    eval_cp: int | None = None
    eval_depth: int | None = None
    fen: str = field(default="", compare=False)

    def final_board(self) -> chess.Board:
        """The position after the opening (python-chess, for EPD and PGN only)."""
        board = chess.Board(self.start_fen)
        for uci in self.moves:
            move = chess.Move.from_uci(uci)
            if move not in board.legal_moves:
                raise ValueError(f"opening {self.id!r}: illegal move {uci!r} in {board.fen()}")
            board.push(move)
        return board

    def to_epd(self) -> str:
        """One EPD line in the suite format (see module docstring)."""
        board = self.final_board()
        ops: dict[str, str | int] = {
            "hmvc": board.halfmove_clock,
            "fmvn": board.fullmove_number,
            "id": self.id,
            "moves": " ".join(self.moves),
        }
        if self.eval_cp is not None:
            ops["ce"] = self.eval_cp
        if self.eval_depth is not None:
            ops["acd"] = self.eval_depth
        return board.epd(**ops)

    @classmethod
    def from_epd(cls, line: str) -> Opening:
        """Parse one suite line and check that its moves reach its position."""
        try:
            board, ops = chess.Board.from_epd(line)
        except ValueError as error:
            raise ValueError(f"malformed opening line {line!r}: {error}") from error
        ident, moves = ops.get("id"), ops.get("moves")
        if not isinstance(ident, str) or not isinstance(moves, str):
            raise ValueError(f"opening line needs string 'id' and 'moves' operations: {line!r}")
        ce, acd = ops.get("ce"), ops.get("acd")
        opening = cls(
            id=ident,
            moves=tuple(moves.split()),
            eval_cp=None if ce is None else int(ce),  # type: ignore[arg-type]
            eval_depth=None if acd is None else int(acd),  # type: ignore[arg-type]
            fen=board.fen(),
        )
        reached = opening.final_board()
        if reached.epd() != board.epd():
            raise ValueError(
                f"opening {ident!r}: moves reach {reached.epd()!r} but the line says {board.epd()!r}"
            )
        return opening


def save_openings(openings: Sequence[Opening], path: Path) -> Path:
    """Write the suite and its checksum; returns the checksum file's path."""
    ids = [o.id for o in openings]
    if len(set(ids)) != len(ids):
        raise ValueError(f"opening ids must be unique, got duplicates in {ids!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(o.to_epd() + "\n" for o in openings))
    return write_sha256(path)


def load_openings(path: Path = DEFAULT_OPENINGS, *, verify: bool = True) -> list[Opening]:
    """Read a suite file (checksum verified when ``verify`` and the file exists)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"opening suite not found: {path}")
    if verify:
        verify_sha256(path)
    openings = [Opening.from_epd(line) for line in path.read_text().splitlines() if line.strip()]
    ids = [o.id for o in openings]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: opening ids are not unique")
    if not openings:
        raise ValueError(f"{path}: the opening suite is empty")
    return openings
