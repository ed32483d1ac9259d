"""Paired matches between two of the campaign's artifacts (promotion gates).

Both sides search at ``evaluate.visits`` with the evaluation settings, on
``evaluate.openings`` of the campaign's openings (each played with both
colours); match ``index`` k takes the k-th slice of the opening suite so
successive matches of one gate use different openings.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from chesszero.campaign.context import Campaign
from chesszero.campaign.search_settings import evaluation_search

if TYPE_CHECKING:
    from chesszero.evaluate.match import MatchResult


def openings_for(campaign: Campaign, index: int) -> list[str]:
    """The `index`-th slice of `evaluate.openings` openings (wrapping around the suite)."""
    from chesszero.evaluate.openings import load_openings

    count = campaign.cfg.evaluate.openings
    suite = load_openings(campaign.root / "data" / "openings" / "openings.epd")
    return [suite[(index * count + i) % len(suite)] for i in range(count)]


def paired_match(campaign: Campaign, first: str, second: str, *, index: int, event: str,
                 names: tuple[str, str] = ("candidate", "active"), out: Path | None = None) -> MatchResult:
    """Artifact `first` against `second`, searched at `evaluate.visits`; the
    games go to `out` as PGN when given. Errors propagate (the caller's gate
    records them as errored matches, which do not count)."""
    from chesszero.evaluate.engine_player import EnginePlayer
    from chesszero.evaluate.match import play_match
    from chesszero.publish.loading import load_evaluator

    ev, backend = campaign.cfg.evaluate, campaign.cfg.inference.backend
    openings = openings_for(campaign, index)
    a = EnginePlayer(load_evaluator(first, backend=backend, plain_onnx=False), visits=ev.visits, name=names[0],
                     options=evaluation_search(campaign.cfg))
    try:
        b = EnginePlayer(load_evaluator(second, backend=backend, plain_onnx=False), visits=ev.visits,
                         name=names[1], options=evaluation_search(campaign.cfg))
        try:
            result = play_match(a, b, openings, max_plies=ev.ply_cap, event=event)
        finally:
            b.close()
    finally:
        a.close()
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(result.pgn())
    return result


__all__ = ["openings_for", "paired_match"]
