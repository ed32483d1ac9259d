"""The UCI engine loop: read commands, keep the position, run searches in the background.

``run_uci(model_path, visits, threads, stdin, stdout)`` is the entry point of
``chesszero uci``. ``UciEngine.handle(line)`` acts on one line; searches run
on a ``job.SearchJob`` thread, so ``stop``, ``isready`` and ``quit`` are
answered while searching. ``stop``, ``ponderhit`` and ``quit`` wait for the
search's ``bestmove``, so the GUI's next ``position``/``go`` always finds the
engine idle. Any line the engine cannot act on -- malformed, an unknown
command or option, an illegal move or bad FEN in ``position`` -- is
answered with ``info string error ...`` and otherwise ignored (a rejected
``position`` leaves the previous position in place); nothing a GUI sends ends
the process except ``quit`` and end of input. A state change (``position``,
``go``, ``ucinewgame``, ``setoption``) that arrives during a search acts
after it, as in Stockfish: a search with a visit or time limit runs to its
end first, one that only ``stop`` would end is stopped (its ``bestmove``
comes first either way), so piped input with no waits is never dropped.

Options (``setoption name <N> value <V>``):

- ``Visits`` (0..1e8): visit cap per move when ``go`` has no ``nodes``
  (0 = none: time limits or ``stop`` end the search); see ``timeman``.
- ``Threads`` (1..128): ONNX Runtime intra-op threads (the tree itself is
  one thread); changing it rebuilds the evaluator.
- ``ParallelLeaves`` (1..256): in-flight leaves per tree (virtual loss),
  i.e. positions per network call; more is faster per visit, slightly less
  sharp per visit.
- ``MoveOverhead`` (ms, 0..10000): reserved per move for GUI latency.
- ``RamLimitMb`` (16..1048576): a search stops when its tree would exceed it.
- ``UCI_ShowWDL``: add ``wdl`` to ``info`` lines.
- ``GumbelRoot``: the Gumbel root (SPEC 6, g = 0: deterministic) instead of
  PUCT; its halving schedule is planned for the visit target (``nodes`` or
  ``Visits``), so a time limit that ends the search earlier cuts a phase short.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from dataclasses import dataclass
from typing import TextIO

import chesszero
from chesszero import core
from chesszero.evaluate.engine_player import SlotSearch
from chesszero.search.analysis import RootRule, SearchOptions
from chesszero.search.evaluators import Evaluator
from chesszero.uci.job import JobSettings, SearchJob, terminal_info
from chesszero.uci.model import (
    EvaluatorSource,
    PendingEvaluator,
    source_from_evaluator,
    source_from_path,
    uniform_source,
)
from chesszero.uci.protocol import (
    Command,
    Debug,
    Go,
    IsReady,
    OptionKind,
    OptionSpec,
    PonderHit,
    Position,
    Quit,
    Register,
    SetOption,
    Stop,
    Uci,
    UciError,
    UciNewGame,
    format_bestmove,
    format_info_string,
)
from chesszero.uci.session import UciSession
from chesszero.uci.timeman import MAX_VISITS, TimeSettings, plan_search

ENGINE_AUTHOR = "the chesszero authors"


@dataclass
class EngineSettings:
    """Current values of the UCI options (module docstring)."""

    visits: int = 800
    threads: int = 1
    parallel_leaves: int = 8
    move_overhead_ms: int = 100
    ram_limit_mb: int = 2048
    show_wdl: bool = False
    gumbel_root: bool = False

    def specs(self) -> tuple[OptionSpec, ...]:
        """The ``option`` lines, with the current values as defaults."""
        spin = OptionKind.SPIN
        return (
            OptionSpec("Visits", spin, self.visits, 0, MAX_VISITS),
            OptionSpec("Threads", spin, self.threads, 1, 128),
            OptionSpec("ParallelLeaves", spin, self.parallel_leaves, 1, 256),
            OptionSpec("MoveOverhead", spin, self.move_overhead_ms, 0, 10_000),
            OptionSpec("RamLimitMb", spin, self.ram_limit_mb, 16, 1_048_576),
            OptionSpec("UCI_ShowWDL", OptionKind.CHECK, self.show_wdl),
            OptionSpec("GumbelRoot", OptionKind.CHECK, self.gumbel_root),
        )

    def validate(self) -> None:
        """ValueError naming the first option outside its range."""
        for spec in self.specs():
            spec.parse(str(spec.default).lower())


_FIELDS = {
    "visits": "visits",
    "threads": "threads",
    "parallelleaves": "parallel_leaves",
    "moveoverhead": "move_overhead_ms",
    "ramlimitmb": "ram_limit_mb",
    "uci_showwdl": "show_wdl",
    "gumbelroot": "gumbel_root",
}


class UciEngine(UciSession):
    """One UCI session over ``out`` (module docstring)."""

    def __init__(
        self, source: EvaluatorSource, out: TextIO, *, settings: EngineSettings | None = None, seed: int = 0
    ) -> None:
        self.settings = settings or EngineSettings()
        try:
            self.settings.validate()
        except UciError as error:
            raise ValueError(str(error)) from None
        super().__init__(out)
        self._source = source
        self._seed = seed
        self._pending = PendingEvaluator(source, self.settings.threads)
        self._search: SlotSearch | None = None
        self._game = core.Game()
        self._job: SearchJob | None = None
        self._pondering = False
        self.debug = False

    @property
    def searching(self) -> bool:
        return self._job is not None and self._job.running

    def root_moves(self) -> list[tuple[str, float, float]]:
        """(move, visits, prior) at the root of the last search, most visited
        first; empty before any search. Only while no search runs."""
        if self.searching:
            raise RuntimeError("root_moves() during a search")
        return [] if self._search is None else self._search.root_moves(0)

    def _dispatch(self, command: Command) -> bool:
        if isinstance(command, Quit):
            self._finish_search()
            return False
        if isinstance(command, Uci):
            self._identify()
        elif isinstance(command, IsReady):
            if not self.searching:
                self._evaluator()
            self.emit("readyok")
        elif isinstance(command, Stop):
            self._finish_search()
        elif isinstance(command, PonderHit):
            if self._pondering and self.searching:
                self._finish_search()  # pondering was the thinking time: play now
        elif isinstance(command, Debug):
            self.debug = command.on
        elif isinstance(command, Register):
            pass
        else:
            if self.searching:
                self._end_search_before(command)
            self._change_state(command)
        return True

    def _end_search_before(self, command: Command) -> None:
        """A state change (``position``, ``go``, ``ucinewgame``, ``setoption``)
        arriving during a search acts after it, as Stockfish does: a search with
        a visit or time limit runs to its end; one that only ``stop`` ends
        (``infinite``, ``ponder``, no limit) is stopped. Its ``bestmove`` comes first."""
        assert self._job is not None
        if self._job.ends_by_itself:
            self._job.wait()
        if self.debug:
            self.emit(format_info_string(f"{type(command).__name__.lower()} after the search in progress"))
        self._finish_search()

    def _change_state(self, command: Command) -> None:
        if isinstance(command, UciNewGame):
            self._game = core.Game()
            if self._search is not None:
                self._search.forget(0)
        elif isinstance(command, Position):
            self._game = game_for(command)
        elif isinstance(command, SetOption):
            self._set_option(command)
        elif isinstance(command, Go):
            self._go(command, started=time.monotonic())

    def _identify(self) -> None:
        self.emit(f"id name chesszero {chesszero.__version__} ({self._source.label})")
        self.emit(f"id author {ENGINE_AUTHOR}")
        for spec in self.settings.specs():
            self.emit(spec.format())
        self.emit("uciok")

    def _set_option(self, command: SetOption) -> None:
        key = command.name.strip().lower()
        spec = {s.name.lower(): s for s in self.settings.specs()}.get(key)
        if spec is None:
            names = ", ".join(s.name for s in self.settings.specs())
            raise UciError(f"unknown option {command.name!r}; options are {names}")
        value = spec.parse(command.value)
        field = _FIELDS[key]
        if getattr(self.settings, field) == value:
            return
        setattr(self.settings, field, value)
        if field == "threads":
            if self._source.uses_threads:
                self._pending = PendingEvaluator(self._source, self.settings.threads)
                self._search = None
            else:
                self.emit(format_info_string(f"Threads has no effect on {self._source.label}"))
        elif field in ("parallel_leaves", "gumbel_root"):
            self._search = None  # rebuilt with the new options (tree dropped)

    # ------------------------------------------------------------------ search

    def _evaluator(self) -> Evaluator | None:
        """The evaluator, waiting for it to load; None (error reported) when it cannot."""
        try:
            evaluator = self._pending.result()
        except Exception as error:  # shown to the GUI; the engine stays up
            self.error(f"cannot load {self._source.label}: {error}")
            return None
        while self._source.warnings:
            self.emit(format_info_string(self._source.warnings.pop(0)))
        return evaluator

    def _slot_search(self, evaluator: Evaluator) -> SlotSearch:
        if self._search is None or self._search.evaluator is not evaluator:
            options = SearchOptions.evaluation()
            options.leaves_per_tree = self.settings.parallel_leaves
            options.root = RootRule.GUMBEL if self.settings.gumbel_root else RootRule.PUCT
            self._search = SlotSearch(evaluator, slots=1, options=options, seed=self._seed)
        return self._search

    def _drop_search(self) -> None:
        self._search = None  # after a failed search the native batch state is unknown

    def _go(self, command: Go, *, started: float) -> None:
        game = self._game.copy()
        legal = game.legal_uci()
        if not legal:
            self.emit(terminal_info(game))
            self.emit(format_bestmove(None))
            return
        evaluator = self._evaluator()
        if evaluator is None:
            self.emit(format_bestmove(None))
            return
        plan = plan_search(
            command.limits,
            white_to_move=game.turn,
            visits_option=self.settings.visits,
            legal_moves=len(legal),
            settings=TimeSettings(move_overhead_ms=self.settings.move_overhead_ms),
        )
        for note in plan.notes:
            self.emit(format_info_string(note))
        job = SearchJob(
            self._slot_search(evaluator),
            game,
            plan,
            JobSettings(ram_limit_mb=self.settings.ram_limit_mb, show_wdl=self.settings.show_wdl),
            self.emit,
            started=started,
            on_failure=self._drop_search,
        )
        self._job = job
        self._pondering = command.limits.ponder
        job.start()

    def _finish_search(self) -> None:
        if self._job is not None:
            self._job.stop()
            self._job = None
        self._pondering = False


def game_for(command: Position) -> core.Game:
    """The game a ``position`` command describes; UciError for a bad FEN or move."""
    try:
        game = core.Game(command.fen)
    except ValueError as error:
        raise UciError(f"invalid FEN {command.fen!r}: {error}") from None
    for ply, move in enumerate(command.moves):
        try:
            game.push_uci(move)
        except ValueError as error:
            raise UciError(
                f"illegal move {move!r} (move {ply + 1} of position command) in {game.fen()!r}: "
                f"{error}; position unchanged"
            ) from None
    return game


def run_uci(
    model_path: str | None,
    visits: int,
    threads: int,
    stdin: TextIO,
    stdout: TextIO,
    *,
    evaluator: Evaluator | None = None,
    parallel_leaves: int | None = None,
    seed: int = 0,
    backend: str = "ort-cpu",
    gumbel_root: bool = False,
) -> int:
    """Runs a UCI session until ``quit`` or end of input; returns the exit status.

    The network comes from ``evaluator`` when given, else from the ONNX
    artifact at ``model_path`` (see ``uci.model``), else a uniform evaluator
    (search without a network, announced in ``id name`` and an info line).
    ``visits`` and ``threads`` are the initial ``Visits`` and ``Threads``;
    ``backend`` the inference backend of the model file.
    A missing model file, a backend that cannot run here or an out-of-range
    option is reported on stderr with status 2 before any protocol traffic.
    """
    try:
        if evaluator is not None:
            source = source_from_evaluator(evaluator)
        elif model_path is not None:
            source = source_from_path(model_path, backend)
        else:
            source = uniform_source()
        settings = EngineSettings(visits=visits, threads=threads, gumbel_root=gumbel_root)
        if parallel_leaves is not None:
            settings = dataclasses.replace(settings, parallel_leaves=parallel_leaves)
        engine = UciEngine(source, stdout, settings=settings, seed=seed)
    except ValueError as error:
        print(f"chesszero uci: error: {error}", file=sys.stderr)
        return 2
    return engine.run(stdin)


__all__ = ["EngineSettings", "UciEngine", "run_uci"]
