"""``chesszero uci --engine alphabeta``: the second engine over UCI (docs/nnue.md).

The native alpha-beta search (``search.alphabeta``) with the NNUE student
(``--net FILE``; default the newest student under ``runs/nnue/``) or the
control evaluator (``--net control``). The command loop mirrors the network
engine's (``uci.engine``): searches run on a background thread, so ``stop``,
``isready`` and ``quit`` are answered while searching; ``stop``, ``ponderhit``
and ``quit`` wait for the search's ``bestmove``; a state change that arrives
during a search acts after it (a search that only ``stop`` ends is stopped
first); a line the engine cannot act on is answered with ``info string
error ...`` and otherwise ignored.

``go`` limits: ``depth``, ``nodes``, ``movetime`` and the clock (``wtime``/
``btime``/``winc``/``binc``/``movestogo``, budgeted by ``uci.timeman``) combine,
the first reached ends the search; ``infinite`` and ``ponder`` search until
``stop`` (a mate found earlier is announced, and ``bestmove`` still waits for
``stop``, as the protocol asks). ``mate`` and ``searchmoves`` are not supported (an ``info string``
says so). One ``info depth seldepth score cp|mate nodes nps time pv`` line per
completed iteration, then ``bestmove`` (with ``ponder`` when the PV has one).

Options: ``Hash`` (MB, 1..4096; resizes and clears the table), ``Threads``
(1 only: the search is single-threaded), ``MoveOverhead`` (ms).
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import chesszero
from chesszero import core
from chesszero.search.alphabeta import AlphaBetaEngine, AlphaBetaLimits, AlphaBetaResult
from chesszero.uci.engine import ENGINE_AUTHOR, game_for
from chesszero.uci.protocol import (
    Command,
    Debug,
    Go,
    GoLimits,
    Info,
    IsReady,
    OptionKind,
    OptionSpec,
    PonderHit,
    Position,
    Quit,
    Register,
    Score,
    SetOption,
    Stop,
    Uci,
    UciError,
    UciNewGame,
    format_info,
    format_info_string,
)
from chesszero.uci.session import UciSession
from chesszero.uci.timeman import TimeSettings, clock_budget_ms


@dataclass
class AlphaBetaSettings:
    """Current values of the UCI options (module docstring)."""

    hash_mb: int = 16
    threads: int = 1
    move_overhead_ms: int = 30

    def specs(self) -> tuple[OptionSpec, ...]:
        spin = OptionKind.SPIN
        return (
            OptionSpec("Hash", spin, self.hash_mb, 1, 4096),
            OptionSpec("Threads", spin, self.threads, 1, 1),
            OptionSpec("MoveOverhead", spin, self.move_overhead_ms, 0, 10_000),
        )


_FIELDS = {"hash": "hash_mb", "threads": "threads", "moveoverhead": "move_overhead_ms"}


def plan_limits(limits: GoLimits, *, white_to_move: bool, move_overhead_ms: int) -> tuple[AlphaBetaLimits, list[str]]:
    """The native search limits of one ``go`` (module docstring), and notes for the GUI."""
    notes = []
    if limits.mate is not None:
        notes.append(f"go mate {limits.mate} is not supported; searching normally")
    if limits.searchmoves:
        notes.append("go searchmoves is not supported; searching all moves")
    if limits.infinite or limits.ponder:
        return AlphaBetaLimits(infinite=True), notes
    settings = TimeSettings(move_overhead_ms=move_overhead_ms)
    movetime = 0
    if limits.movetime_ms is not None:
        movetime = max(settings.min_ms, limits.movetime_ms - move_overhead_ms)
    remaining, increment = limits.clock(white_to_move)
    if remaining is not None:
        budget = clock_budget_ms(remaining, increment or 0, limits.movestogo, settings)
        movetime = budget if movetime == 0 else min(movetime, budget)
    depth = limits.depth or 0
    nodes = limits.nodes or 0
    if not (depth or nodes or movetime):
        return AlphaBetaLimits(infinite=True), notes  # bare `go`: until stop, as Stockfish does
    return AlphaBetaLimits(depth=depth, nodes=nodes, movetime_ms=movetime), notes


def format_result(result: AlphaBetaResult) -> str:
    """The ``info`` line of one completed iteration."""
    score = None
    if result.mate is not None:
        score = Score(mate=result.mate)
    elif result.score_cp is not None:
        score = Score(cp=result.score_cp)
    return format_info(Info(depth=result.depth, seldepth=result.seldepth, nodes=result.nodes, nps=result.nps,
                            time_ms=result.time_ms, score=score, pv=result.pv))


class AlphaBetaUci(UciSession):
    """One UCI session of the alpha-beta engine over ``out`` (module docstring)."""

    def __init__(self, net: str | Path | None, out: TextIO, *, settings: AlphaBetaSettings | None = None) -> None:
        self.settings = settings or AlphaBetaSettings()
        for spec in self.settings.specs():
            try:
                spec.parse(str(spec.default))
            except UciError as error:
                raise ValueError(str(error)) from None
        super().__init__(out)
        self._engine = AlphaBetaEngine(net, hash_mb=self.settings.hash_mb)
        self._game = core.Game()
        self._thread: threading.Thread | None = None
        self._until_stop = False
        self._stop_requested = threading.Event()
        self.debug = False

    @property
    def searching(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _dispatch(self, command: Command) -> bool:
        if isinstance(command, Quit):
            self._finish_search()
            return False
        if isinstance(command, Uci):
            self.emit(f"id name chesszero-alphabeta {chesszero.__version__} ({self._engine.label})")
            self.emit(f"id author {ENGINE_AUTHOR}")
            for spec in self.settings.specs():
                self.emit(spec.format())
            self.emit("uciok")
        elif isinstance(command, IsReady):
            self.emit("readyok")
        elif isinstance(command, (Stop, PonderHit)):
            self._finish_search()
        elif isinstance(command, Debug):
            self.debug = command.on
        elif isinstance(command, Register):
            pass
        else:
            if self.searching:
                if not self._until_stop:
                    assert self._thread is not None
                    self._thread.join()
                self._finish_search()
            self._change_state(command)
        return True

    def _change_state(self, command: Command) -> None:
        if isinstance(command, UciNewGame):
            self._game = core.Game()
            self._engine.clear()
        elif isinstance(command, Position):
            self._game = game_for(command)
        elif isinstance(command, SetOption):
            self._set_option(command)
        elif isinstance(command, Go):
            self._go(command.limits)

    def _set_option(self, command: SetOption) -> None:
        key = command.name.strip().lower()
        spec = {s.name.lower(): s for s in self.settings.specs()}.get(key)
        if spec is None:
            names = ", ".join(s.name for s in self.settings.specs())
            raise UciError(f"unknown option {command.name!r}; options are {names}")
        value = spec.parse(command.value)
        setattr(self.settings, _FIELDS[key], value)
        if key == "hash":
            self._engine.set_hash(int(value))

    def _go(self, go: GoLimits) -> None:
        game = self._game.copy()
        limits, notes = plan_limits(go, white_to_move=game.turn, move_overhead_ms=self.settings.move_overhead_ms)
        for note in notes:
            self.emit(format_info_string(note))
        self._until_stop = limits.infinite
        self._stop_requested.clear()
        self._thread = threading.Thread(target=self._search, args=(game, limits), name="alphabeta-go", daemon=True)
        self._thread.start()

    def _search(self, game: core.Game, limits: AlphaBetaLimits) -> None:
        started = time.monotonic()
        best: str | None = None
        ponder: str | None = None
        try:
            result = self._engine.search(game, limits, on_info=lambda r: self.emit(format_result(r)))
            best, ponder = result.best, result.ponder
            if limits.infinite:  # a search that ended by itself (a proven mate) still waits for stop
                self._stop_requested.wait()
            if self.debug:
                self.emit(format_info_string(f"search took {time.monotonic() - started:.3f} s"))
        except Exception as error:  # every go gets its bestmove
            self.emit(format_info_string(f"error search failed: {type(error).__name__}: {error}"))
            legal = game.legal_uci()
            best = legal[0] if legal else None
        if best is None:
            self.emit("bestmove (none)")
        else:
            self.emit(f"bestmove {best}" + (f" ponder {ponder}" if ponder else ""))

    def _finish_search(self) -> None:
        if self._thread is not None:
            self._stop_requested.set()
            while self._thread.is_alive():  # a stop that lands before the search starts is repeated
                self._engine.stop()
                self._thread.join(timeout=0.02)
            self._thread = None
        self._until_stop = False


def run_alphabeta_uci(net: str | Path | None, stdin: TextIO, stdout: TextIO, *, hash_mb: int = 16) -> int:
    """Runs a UCI session until ``quit`` or end of input; a bad ``net`` or option is
    reported on stderr with status 2 before any protocol traffic."""
    try:
        engine = AlphaBetaUci(net, stdout, settings=AlphaBetaSettings(hash_mb=hash_mb))
    except (ValueError, FileNotFoundError) as error:
        print(f"chesszero uci: error: {error}", file=sys.stderr)
        return 2
    return engine.run(stdin)


__all__ = ["AlphaBetaSettings", "AlphaBetaUci", "format_result", "plan_limits", "run_alphabeta_uci"]
