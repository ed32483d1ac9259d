"""Rich progress bars and per-generation summaries for a campaign run."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from chesszero.campaign import headline
from chesszero.campaign import metrics as M
from chesszero.campaign.context import Campaign


class Reporter:
    """Progress (generations, self-play positions) and a summary table per
    generation. Disabled, it does nothing (flows on remote workers)."""

    def __init__(self, campaign: Campaign, *, enabled: bool = True, console: Console | None = None) -> None:
        self.campaign = campaign
        self.enabled = enabled
        self.console = console or Console()
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=self.console, disable=not enabled)
        self.metrics: dict[str, Any] = {}
        self._gens = None
        self._pos = None
        self.layout = ""  # publish.placement's description of the actors, found at the first self-play

    def __enter__(self) -> Reporter:
        self.progress.__enter__()
        state = self.campaign.load_state()
        self._gens = self.progress.add_task("generations", total=self.campaign.cfg.campaign.generations,
                                            completed=state.generation)
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(*exc)  # type: ignore[arg-type]

    def selfplay(self, generation: int, positions: int) -> None:
        if not self.layout:  # after the campaign's start checks (dispatch.drive)
            from chesszero.publish.placement import actor_layout

            self.layout = actor_layout(self.campaign.cfg).describe()
        if self._pos is not None:
            self.progress.remove_task(self._pos)
        self._pos = self.progress.add_task(f"gen {generation} self-play positions ({self.layout})",
                                           total=max(positions, 1))

    def advance_positions(self, n: int) -> None:
        if self._pos is not None:
            self.progress.advance(self._pos, n)

    def phase(self, name: str, metrics: dict[str, Any]) -> None:
        self.metrics.update(metrics)

    def generation_done(self, generation: int) -> None:
        if self._gens is not None:
            self.progress.update(self._gens, completed=generation + 1)
        if self.enabled:
            self.console.print(summary_table(generation, self.metrics))
        self.metrics = {}


def summary_table(generation: int, m: dict[str, Any]) -> Table:
    """One generation at a glance: strength, losses, throughput, terminations.
    Strength is the joint rating or its bound (``> 288``), never the nearest
    rung's point where that rung was swept; the nearest-rung number follows
    as the paper's secondary figure."""
    t = Table(title=f"generation {generation}", show_header=False)
    t.add_column("what")
    t.add_column("value", justify="right")

    def row(label: str, key: str, fmt: str = "{:.3f}") -> None:
        if key in m and m[key] is not None:
            t.add_row(label, fmt.format(m[key]))

    row("games", M.SELFPLAY_GAMES, "{:.0f}")
    row("positions", M.SELFPLAY_POSITIONS, "{:.0f}")
    row("self-play searches/s", M.SELFPLAY_SEARCHES_S, "{:.0f}")
    row("searches/s during training", M.SELFPLAY_SEARCHES_S_OVERLAP, "{:.0f}")
    row("non-decisive rate", M.NON_DECISIVE, "{:.2f}")
    for name in ("checkmate", "threefold_repetition", "ply_cap"):
        row(f"  ended by {name.replace('_', ' ')}", M.termination_key(name), "{:.0f}")
    row("material assist", M.MATERIAL_ASSIST, "{:.2f}")
    row("loss (total)", M.TRAIN_LOSS)
    for head in M.TRAIN_LOSS_HEADS:
        row(f"  loss {head}", M.loss_key(head))
    row("trainer samples/s", M.TRAIN_SAMPLES_S, "{:.0f}")
    row("replay rows", M.REPLAY_SIZE, "{:.0f}")
    row("  new rows at the surprise cap", M.REPLAY_SURPRISE_AT_CAP, "{:.2f}")
    row("  new rows with a mating move", M.REPLAY_WITH_MATE, "{:.3f}")
    row("  new rows with a stalemating move", M.REPLAY_WITH_STALEMATE, "{:.3f}")
    if m.get(M.REPLAY_SHARDS_REJECTED):
        t.add_row("[bold red]shards quarantined (rejected/)[/]", f"{m[M.REPLAY_SHARDS_REJECTED]:.0f}")
    row("fidelity agreement", M.fidelity_key("agreement"))
    row("promoted", "publish/promoted", "{:.0f}")
    row("resign threshold", M.RESIGN_THRESHOLD, "{:.2f}")
    for mode in M.EVAL_MODES:
        joint, nearest = headline.joint_rating(m, mode), headline.nearest_rating(m, mode)
        if joint is not None:
            t.add_row(f"rating ({mode}): joint over rungs, 95%", joint.describe())
        if nearest is not None:
            t.add_row("  nearest rung (the paper's number)", nearest.describe())
        for key in sorted(k for k in m if k.startswith(f"score/{mode}/")):
            row(f"  score vs {key.split('/')[-1]}", key, "{:.2f}")
        for key in sorted(k for k in m if k.startswith(f"material/{mode}/")):
            row(f"  material at the end vs {key.split('/')[-1]}", key, "{:+.1f}")
    return t
