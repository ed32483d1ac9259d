"""Saved learning-benchmark data for the report tests: metric histories as a
campaign logs them, final matches, and summaries as ``bench_learning`` writes
them (a run from before issue 22, and one with both arms' climbs)."""

from __future__ import annotations

import sys
from typing import Any

from campaign_support import REPO

sys.path[:0] = [str(REPO / "benchmarks"), str(REPO / "reports")]

from learning_final import FinalMatch  # noqa: E402

from chesszero.campaign import metrics as M  # noqa: E402

OPPONENTS = ("random", "greedy-r50", "greedy")


def series(generations: int, *, conversion: bool) -> dict[str, dict[int, float]]:
    """Metric histories as a campaign logs them (evaluations every other generation)."""
    s: dict[str, dict[int, float]] = {M.GENERATION: {}, M.WALL_S: {}, M.NON_DECISIVE: {}, M.SELFPLAY_GAMES: {},
                                      M.loss_key("value"): {}, M.loss_key("policy"): {}}
    for g in range(generations):
        s[M.GENERATION][g] = g
        s[M.SELFPLAY_GAMES][g] = 10.0
        s[M.WALL_S][g] = 90.0 * (g + 1)
        s[M.NON_DECISIVE][g] = 1.0 - 0.1 * g
        s[M.loss_key("value")][g] = 1.1 - 0.05 * g
        s[M.loss_key("policy")][g] = 3.3 - 0.1 * g
        for t, n in (("threefold_repetition", g), ("ply_cap", 4 - g), ("checkmate", 1)):
            s.setdefault(M.termination_key(t), {})[g] = float(max(n, 0))
        if g % 2 == 0:
            for mode in M.EVAL_MODES:
                for rung in OPPONENTS:
                    s.setdefault(M.score_key(mode, rung), {})[g] = 0.5 + 0.1 * g
        if conversion and g > 0:
            s.setdefault("selfplay/conversion", {})[g] = 0.25 * g
            s.setdefault("selfplay/conversion_opportunities", {})[g] = 4.0
            s.setdefault("conversion/searched/random", {})[g] = 0.5
            s.setdefault("conversion/searched/random_opportunities", {})[g] = 2.0
    s["unrelated/metric"] = {0: 1.0}
    return s


def match(opponent: str, mode: str, score: float, arm: str = "final", stalemates: int = 0,
          mates: tuple[int, int] | None = None) -> FinalMatch:
    wins = int(100 * score)
    return FinalMatch(opponent=opponent, mode=mode, visits=None if mode == "policy" else 64, games=100,
                      wins=wins, draws=0, losses=100 - wins, score=score,
                      score_lo=max(0.0, score - 0.1), score_hi=min(1.0, score + 0.1), elo=0.0, elo_lo=-50.0,
                      elo_hi=50.0, elo_bound=False, rung_rating=0.0,
                      terminations={"checkmate": wins, "ply_cap": max(0, 100 - wins - stalemates),
                                    **({"stalemate": stalemates} if stalemates else {})},
                      final_material=3.0, conversion_opportunities=10, conversion_converted=7, seconds=1.0, arm=arm,
                      mate_in_one_available=None if mates is None else mates[0],
                      mate_in_one_played=None if mates is None else mates[1])


def summary(matches: list[FinalMatch]) -> dict[str, Any]:
    return {"campaign": "unit", "preset": "cpu", "hours": 2.0, "command": "python benchmarks/bench_learning.py",
            "machine": {"cpu": "test cpu", "usable_cpus": 2, "cpus": 2}, "git": {"commit": "abc", "dirty": False},
            "wall": {"campaign_s": 7200.0, "campaign_recorded_s": 7100.0, "final_evaluation_s": 600.0},
            "final_artifact": "runs/unit/artifacts/gen_0003/int8.onnx", "active_generation": 3,
            "final_evaluation": {"openings": 50, "games_per_match": 100, "visits": 64, "max_plies": 300,
                                 "opponents": list(OPPONENTS), "ladder": "ladder anchor test",
                                 "matches": [m.to_dict() for m in matches],
                                 "joint": {"searched": {"describe": "joint 1234 [1200, 1260] over random"}}}}


def climb_summary() -> dict[str, Any]:
    """A run of issue 22's protocol: both arms climbed, the control stopped early."""
    final = [match(o, "searched", s) for o, s in (("random", 1.0), ("greedy", 0.95), ("sf-n1-r30", 0.7),
                                                  ("sf-n1-r10", 0.2), ("sf-n1", 0.1))]
    final += [match("random", "policy", 0.73, stalemates=47, mates=(40, 12)),
              match("greedy", "policy", 0.2, stalemates=5, mates=(9, 3)), match("sf-n1-r30", "policy", 0.1, mates=(0, 0))]
    control = [match("random", "searched", 0.96, "control"), match("greedy", "searched", 0.2, "control"),
               match("sf-n1-r30", "searched", 0.05, "control"),
               match("random", "policy", 0.5, "control", stalemates=3), match("greedy", "policy", 0.1, "control"),
               match("sf-n1-r30", "policy", 0.0, "control")]
    s = summary(final + control)
    order = ["random", "greedy", "sf-n1-r30", "sf-n1-r10", "sf-n1", "sf-n300"]
    joint = {"estimate": 700.0, "lower": 650.0, "upper": 750.0, "direction": "", "describe": "joint 700 [650, 750]"}
    s["control_artifact"] = "runs/unit/artifacts/initial/int8.onnx"
    s["recipe_diff"], s["recipe_base"] = {"search.root": "gumbel"}, "cpu"
    s["final_evaluation"].update({
        "opponents": order, "climb": {"order": order, "below": 0.25, "consecutive": 2,
                                      "rule": "stops after 2 consecutive rungs scoring below 0.25"},
        "joints": {"final": {"searched": joint, "policy": {**joint, "estimate": 250.0, "lower": 220.0,
                                                            "upper": 280.0, "describe": "joint 250 [220, 280]"}},
                   "control": {"searched": {**joint, "estimate": 120.0, "lower": 90.0, "upper": 150.0,
                                            "describe": "joint 120 [90, 150]"},
                               "policy": {"estimate": -300.0, "lower": None, "upper": -300.0, "direction": "<",
                                          "describe": "joint < -300"}}},
        "gain": {"searched": {"estimate": 580.0, "lower": 520.0, "upper": 640.0, "direction": "",
                              "describe": "+580 [+520, +640]"},
                 "policy": {"estimate": 520.0, "lower": 520.0, "upper": None, "direction": ">",
                            "describe": "> +520 (control is a bound (< -300))"}}})
    return s


def progressive_series(generations: int) -> dict[str, dict[int, float]]:
    """A run whose 4x48 -> 6x64 candidate starts at generation 1, fails its
    match at 2, passes at 3 and 4 and is promoted at 4."""
    s = series(generations, conversion=False)
    s[M.PROGRESSIVE_STAGE] = {g: float(g >= 4) for g in range(generations)}
    s[M.CANDIDATE_STARTED] = {1: 1.0}
    s[M.PROMOTION_SCORE] = {2: 0.40, 3: 0.55, 4: 0.60}
    s[M.PROMOTION_ELO] = {2: -70.0, 3: 35.0, 4: 70.0}
    s[f"{M.PROMOTION_ELO}_lo"] = {2: -150.0, 3: -40.0, 4: 0.0}
    s[f"{M.PROMOTION_ELO}_hi"] = {2: 10.0, 3: 110.0, 4: 140.0}
    s[M.PROMOTION_PASSES] = {2: 0.0, 3: 1.0, 4: 2.0}
    s[M.PROMOTION_PROMOTED] = {2: 0.0, 3: 0.0, 4: 1.0}
    return s
