"""The UCI text protocol: GUI commands parsed into values, engine replies formatted.

Parsing (``parse_command``) turns one input line into a frozen dataclass
(``Uci``, ``IsReady``, ``Position``, ``Go`` ...) or raises ``UciError``
whose message quotes the offending line; the engine answers that with an
``info string error ...`` line and carries on. Unlike the letter of the UCI
specification (which says to skip unknown leading tokens silently), a line
whose first token is not a command is reported, never half-executed.

Formatting: ``format_info`` (an ``Info`` value), ``format_bestmove``,
``OptionSpec.format`` for the ``option`` lines of the ``uci`` reply.

Value-head conversions used by ``info`` lines (documented once, here):

- ``value_to_cp(v)``: the expected outcome ``v = W - L`` in [-1, 1] (side to
  move) becomes centipawns by ``cp = 90 * tan(1.5637541897 * v)``, the
  mapping Leela Chess Zero uses: 0.1 -> 14, 0.5 -> 89, 0.9 -> 546,
  1 -> 12,780 cp; odd and monotone, so GUIs' cp-based adjudication behaves.
- ``value_to_wdl(v)``: per-mille win/draw/loss from ``v`` by SPEC 5's
  ``wdl(v)`` (r = 1 - |v|; W = max(v, 0) + r/3, D = r/3, L = max(-v, 0) + r/3),
  shown with ``UCI_ShowWDL``; only the search's scalar value is known, so
  the split between draws and decisive results is this convention's, not the
  network's.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

CP_SCALE = 90.0
CP_ANGLE = 1.5637541897
"""``cp = CP_SCALE * tan(CP_ANGLE * v)`` (module docstring)."""


class UciError(ValueError):
    """A command line the engine cannot act on; the message quotes it."""


# ----------------------------------------------------------------------------- commands


@dataclass(frozen=True)
class Uci:
    """``uci``: identify and list options, then ``uciok``."""


@dataclass(frozen=True)
class IsReady:
    """``isready``: answer ``readyok`` once initialisation is done."""


@dataclass(frozen=True)
class UciNewGame:
    """``ucinewgame``: the next search belongs to a new game (drop the tree)."""


@dataclass(frozen=True)
class Stop:
    """``stop``: end the running search and send its ``bestmove``."""


@dataclass(frozen=True)
class Quit:
    """``quit``: stop and exit."""


@dataclass(frozen=True)
class PonderHit:
    """``ponderhit``: the pondered move was played."""


@dataclass(frozen=True)
class Debug:
    """``debug on|off``."""

    on: bool


@dataclass(frozen=True)
class Register:
    """``register ...``: accepted and ignored (no registration needed)."""


@dataclass(frozen=True)
class SetOption:
    """``setoption name <name> [value <value>]``; names may contain spaces."""

    name: str
    value: str | None


@dataclass(frozen=True)
class Position:
    """``position startpos|fen <FEN> [moves m1 m2 ...]``; ``fen`` None is startpos."""

    fen: str | None
    moves: tuple[str, ...] = ()


@dataclass(frozen=True)
class GoLimits:
    """The limits of one ``go`` command (times in milliseconds, None when absent)."""

    nodes: int | None = None
    movetime_ms: int | None = None
    wtime_ms: int | None = None
    btime_ms: int | None = None
    winc_ms: int | None = None
    binc_ms: int | None = None
    movestogo: int | None = None
    depth: int | None = None
    mate: int | None = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: tuple[str, ...] = ()

    def clock(self, white: bool) -> tuple[int | None, int | None]:
        """Remaining time and increment (ms) of White (``white``) or Black."""
        if white:
            return self.wtime_ms, self.winc_ms
        return self.btime_ms, self.binc_ms


@dataclass(frozen=True)
class Go:
    """``go`` with its limits."""

    limits: GoLimits = field(default_factory=GoLimits)


Command = (
    Uci
    | IsReady
    | UciNewGame
    | Stop
    | Quit
    | PonderHit
    | Debug
    | Register
    | SetOption
    | Position
    | Go
)

_SIMPLE: dict[str, Command] = {
    "uci": Uci(),
    "isready": IsReady(),
    "ucinewgame": UciNewGame(),
    "stop": Stop(),
    "quit": Quit(),
    "ponderhit": PonderHit(),
}

_GO_INT = {
    "nodes": "nodes",
    "movetime": "movetime_ms",
    "wtime": "wtime_ms",
    "btime": "btime_ms",
    "winc": "winc_ms",
    "binc": "binc_ms",
    "movestogo": "movestogo",
    "depth": "depth",
    "mate": "mate",
}
_GO_FLAGS = {"infinite", "ponder"}
_GO_NONNEGATIVE = {"nodes", "movetime", "movestogo", "depth", "mate"}
_GO_KEYWORDS = set(_GO_INT) | _GO_FLAGS | {"searchmoves"}


def parse_command(line: str) -> Command | None:
    """The command on ``line``, None for a blank line; ``UciError`` when malformed."""
    tokens = line.split()
    if not tokens:
        return None
    head, args = tokens[0], tokens[1:]
    if head in _SIMPLE:
        if args:
            raise UciError(f"{head!r} takes no arguments: {line.strip()!r}")
        return _SIMPLE[head]
    if head == "debug":
        if args not in (["on"], ["off"]):
            raise UciError(f"expected 'debug on' or 'debug off': {line.strip()!r}")
        return Debug(on=args[0] == "on")
    if head == "register":
        return Register()
    if head == "setoption":
        return _parse_setoption(args, line)
    if head == "position":
        return _parse_position(args, line)
    if head == "go":
        return Go(_parse_go(args, line))
    raise UciError(f"unknown command {head!r}: {line.strip()!r}")


def _parse_setoption(args: list[str], line: str) -> SetOption:
    if not args or args[0] != "name":
        raise UciError(f"expected 'setoption name <id> [value <x>]': {line.strip()!r}")
    rest = args[1:]
    if "value" in rest:
        cut = rest.index("value")
        name_tokens, value = rest[:cut], " ".join(rest[cut + 1 :])
    else:
        name_tokens, value = rest, None
    if not name_tokens:
        raise UciError(f"setoption without an option name: {line.strip()!r}")
    return SetOption(name=" ".join(name_tokens), value=value)


def _parse_position(args: list[str], line: str) -> Position:
    if not args:
        raise UciError(f"expected 'position startpos|fen <FEN> [moves ...]': {line.strip()!r}")
    if "moves" in args:
        cut = args.index("moves")
        spec, moves = args[:cut], tuple(args[cut + 1 :])
    else:
        spec, moves = args, ()
    if spec == ["startpos"]:
        return Position(fen=None, moves=moves)
    if spec and spec[0] == "fen" and len(spec) > 1:
        return Position(fen=" ".join(spec[1:]), moves=moves)
    raise UciError(f"expected 'position startpos' or 'position fen <FEN>': {line.strip()!r}")


def _parse_go(args: list[str], line: str) -> GoLimits:
    values: dict[str, object] = {}
    i = 0
    while i < len(args):
        token = args[i]
        if token in _GO_FLAGS:
            values[token] = True
            i += 1
        elif token in _GO_INT:
            if i + 1 >= len(args):
                raise UciError(f"'go {token}' needs a number: {line.strip()!r}")
            raw = args[i + 1]
            try:
                number = int(raw)
            except ValueError:
                raise UciError(f"'go {token}' needs an integer, got {raw!r}: {line.strip()!r}") from None
            if token in _GO_NONNEGATIVE and number < 0:
                raise UciError(f"'go {token}' must not be negative, got {number}: {line.strip()!r}")
            values[_GO_INT[token]] = number
            i += 2
        elif token == "searchmoves":
            j = i + 1
            while j < len(args) and args[j] not in _GO_KEYWORDS:
                j += 1
            values["searchmoves"] = tuple(args[i + 1 : j])
            i = j
        else:
            raise UciError(f"unknown 'go' parameter {token!r}: {line.strip()!r}")
    return GoLimits(**values)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- replies


def value_to_cp(value: float) -> int:
    """Centipawns for a W - L expectation in [-1, 1] (module docstring)."""
    v = min(1.0, max(-1.0, float(value)))
    return int(round(CP_SCALE * math.tan(CP_ANGLE * v)))


def value_to_wdl(value: float) -> tuple[int, int, int]:
    """Per-mille (win, draw, loss) for a W - L value by SPEC 5's ``wdl(v)``; sums to 1000."""
    v = min(1.0, max(-1.0, float(value)))
    r = 1.0 - abs(v)
    win = round(1000 * (max(v, 0.0) + r / 3))
    loss = round(1000 * (max(-v, 0.0) + r / 3))
    return win, 1000 - win - loss, loss


@dataclass(frozen=True)
class Score:
    """An ``info score``: centipawns, or mate in ``mate`` moves (negative: being mated)."""

    cp: int | None = None
    mate: int | None = None

    def __post_init__(self) -> None:
        if (self.cp is None) == (self.mate is None):
            raise ValueError(f"a score is either cp or mate, got cp={self.cp}, mate={self.mate}")

    def format(self) -> str:
        return f"score mate {self.mate}" if self.mate is not None else f"score cp {self.cp}"


@dataclass(frozen=True)
class Info:
    """One ``info`` line; fields left None are omitted."""

    depth: int | None = None
    seldepth: int | None = None
    nodes: int | None = None
    nps: int | None = None
    time_ms: int | None = None
    score: Score | None = None
    wdl: tuple[int, int, int] | None = None
    pv: tuple[str, ...] = ()


def format_info(info: Info) -> str:
    """``info depth .. seldepth .. time .. nodes .. score .. [wdl ..] nps .. pv ..``."""
    parts = ["info"]
    if info.depth is not None:
        parts += ["depth", str(info.depth)]
    if info.seldepth is not None:
        parts += ["seldepth", str(info.seldepth)]
    if info.time_ms is not None:
        parts += ["time", str(info.time_ms)]
    if info.nodes is not None:
        parts += ["nodes", str(info.nodes)]
    if info.score is not None:
        parts.append(info.score.format())
    if info.wdl is not None:
        parts += ["wdl", *(str(x) for x in info.wdl)]
    if info.nps is not None:
        parts += ["nps", str(info.nps)]
    if info.pv:
        parts += ["pv", *info.pv]
    return " ".join(parts)


def format_info_string(text: str) -> str:
    """``info string <text>`` on one line."""
    return "info string " + " ".join(text.split())


def format_bestmove(move: str | None) -> str:
    """``bestmove <move>``, or ``bestmove (none)`` when there is no legal move."""
    return f"bestmove {move if move is not None else '(none)'}"


# ----------------------------------------------------------------------------- options


class OptionKind(enum.Enum):
    """UCI option types used by this engine."""

    SPIN = "spin"
    CHECK = "check"


@dataclass(frozen=True)
class OptionSpec:
    """One engine option as announced in the ``uci`` reply."""

    name: str
    kind: OptionKind
    default: int | bool
    minimum: int | None = None
    maximum: int | None = None
    help: str = ""

    def __post_init__(self) -> None:
        if self.kind is OptionKind.SPIN and (self.minimum is None or self.maximum is None):
            raise ValueError(f"spin option {self.name!r} needs min and max")

    def format(self) -> str:
        line = f"option name {self.name} type {self.kind.value} default "
        if self.kind is OptionKind.CHECK:
            return line + ("true" if self.default else "false")
        return line + f"{self.default} min {self.minimum} max {self.maximum}"

    def parse(self, raw: str | None) -> int | bool:
        """The value ``raw`` sets; ``UciError`` when missing, malformed or out of range."""
        if raw is None or not raw.strip():
            raise UciError(f"option {self.name!r} needs a value")
        text = raw.strip()
        if self.kind is OptionKind.CHECK:
            if text.lower() not in ("true", "false"):
                raise UciError(f"option {self.name!r} takes true or false, got {text!r}")
            return text.lower() == "true"
        try:
            number = int(text)
        except ValueError:
            raise UciError(f"option {self.name!r} takes an integer, got {text!r}") from None
        assert self.minimum is not None and self.maximum is not None
        if not self.minimum <= number <= self.maximum:
            raise UciError(
                f"option {self.name!r} must lie in {self.minimum}..{self.maximum}, got {number}"
            )
        return number


__all__ = [
    "Command",
    "Debug",
    "Go",
    "GoLimits",
    "Info",
    "IsReady",
    "OptionKind",
    "OptionSpec",
    "PonderHit",
    "Position",
    "Quit",
    "Register",
    "Score",
    "SetOption",
    "Stop",
    "Uci",
    "UciError",
    "UciNewGame",
    "format_bestmove",
    "format_info",
    "format_info_string",
    "parse_command",
    "value_to_cp",
    "value_to_wdl",
]
