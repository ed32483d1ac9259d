"""Study 1's two self-play policies as campaign arms (paper 6.1).

- ``retained``: the recipe as it is (every searched position trained, a
  dedicated full search at the ply-cap cut);
- ``old``: the paper's earlier (affected) design through the recipe's
  ``selfplay.late_tail`` setting: from about two thirds of the ply cap on
  (following the ply-cap schedule) searches are cheap (visit cap // the
  study's divisor) and give no training row, and a capped game's outcome
  target is the preceding search's root value with its sign reversed.

:func:`comparison_rows` puts the arms' per-generation diagnostics side by
side (last generation and mean over the generations that logged them),
beside the paper's affected interval.
"""

from __future__ import annotations

from typing import Any

from chesszero.campaign import metrics as M
from chesszero.config import Config
from chesszero.studies.campaigns import Arm, ArmResult

__all__ = ["QUANTITIES", "arms", "comparison_header", "comparison_rows", "finding", "headline",
           "late_tail_overrides", "mean"]

TAIL_FRACTION = 2 / 3  # the old arm's tail starts at this share of the ply cap

#: (metric key, label, the paper's affected interval or None)
QUANTITIES: tuple[tuple[str, str, str | None], ...] = (
    (M.SELFPLAY_CONVERSION, "conversion (5+ pawn leads won)", None),
    (M.SELFPLAY_CAPPED_SHARE, "capped share", "0.27-0.32"),
    (M.SELFPLAY_CUT_TARGET_SHARE, "rows on a cut target", "0.36-0.38"),
    (M.SELFPLAY_INELIGIBLE_SHARE, "plies without a training row", "~0.14"),
    (M.NON_DECISIVE, "non-decisive rate", None),
)


def late_tail_overrides(cfg: Config, divisor: int) -> dict[str, Any]:
    """The old policy as recipe overrides for a campaign of ``cfg``'s recipe:
    the tail from ``TAIL_FRACTION`` of each ply-cap entry (past the random
    opening), cheap searches at visit cap // ``divisor``, the preceding cut target."""
    floor = cfg.selfplay.random_opening_max_plies + 1
    sp = cfg.selfplay.ply_cap
    from_ply = [[k, max(floor, round(TAIL_FRACTION * cap))] for k, cap in zip(sp.keys, sp.values, strict=True)]
    return {"selfplay.late_tail.from_ply": from_ply, "selfplay.late_tail.visits_divisor": divisor,
            "selfplay.late_tail.cut_target": "preceding"}


def arms(cfg: Config, divisor: int) -> list[Arm]:
    return [Arm("retained", "retained recipe", {}),
            Arm("old", "old policy (late tail cheap and untrained, preceding cut target)",
                late_tail_overrides(cfg, divisor))]


def mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def comparison_rows(results: list[ArmResult]) -> list[list[Any]]:
    """One row per quantity: per arm its last generation's value and its mean
    over the run, then the paper's affected interval."""
    rows = []
    for key, label, paper in QUANTITIES:
        row: list[Any] = [label]
        for r in results:
            series = r.at(key)
            row += [series[-1] if series else None, mean(series)]
        rows.append([*row, paper or "—"])
    return rows


def comparison_header(results: list[ArmResult]) -> list[str]:
    return ["quantity", *[f"{r.arm.slug}: {part}" for r in results for part in ("last generation", "mean")],
            "paper (affected interval)"]


def headline(results: list[ArmResult]) -> dict[str, float]:
    """``<arm>_<metric>_last`` and ``_mean`` for every quantity an arm logged."""
    out: dict[str, float] = {}
    for r in results:
        for key, _, _ in QUANTITIES:
            series = r.at(key)
            short = key.split("/")[-1]
            for part, value in (("last", series[-1] if series else None), ("mean", mean(series))):
                if value is not None:
                    out[f"{r.arm.slug}_{short}_{part}"] = float(value)
    return out


def finding(results: list[ArmResult], generations: int, base_preset: str) -> str:
    """The comparison of the two policies in words, from the measured means."""
    retained, old = results

    def pair(key: str, label: str) -> str:
        a, b = mean(retained.at(key)), mean(old.at(key))
        if a is None or b is None:
            return f"{label} not measured in both arms"
        return f"{label} {b:.0%} (old) vs {a:.0%} (retained)"

    parts = [pair(key, label) for key, label, _ in QUANTITIES]
    capped = mean(old.at(M.SELFPLAY_CAPPED_SHARE)), mean(retained.at(M.SELFPLAY_CAPPED_SHARE))
    conv = mean(old.at(M.SELFPLAY_CONVERSION)), mean(retained.at(M.SELFPLAY_CONVERSION))
    more_capped = None not in capped and capped[0] > capped[1]  # type: ignore[operator]
    converts_less = None not in conv and conv[0] < conv[1]  # type: ignore[operator]
    if more_capped and converts_less:
        verdict = "as in the paper, the old policy reached the cap more often and converted fewer leads."
    else:
        seen = [w for w, ok in (("more capped games", more_capped), ("fewer conversions", converts_less)) if ok]
        verdict = ("the paper's pattern under the old policy (more capped games and fewer conversions) shows only "
                   f"in part here ({', '.join(seen)})" if seen else
                   "the paper's pattern under the old policy (more capped games and fewer conversions) does not "
                   "show here") + "; a longer run is needed to tell the policies apart."
    return (f"Over {generations} generation(s) of the `{base_preset}` recipe from random weights, averaged over "
            "the run, the old policy (late tail cheap and untrained, cut target from the preceding search) "
            "against the retained recipe: " + "; ".join(parts) + ". So " + verdict)
