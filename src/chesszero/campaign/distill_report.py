"""The distillation report: ``distill.md`` (tables), ``distill.png`` (figure)
and ``summary.json`` in the report folder (``campaign.distill`` builds the summary).

The figure has two panels: the student's Elo relative to its teacher with
the 95% bootstrap interval, at equal visits and at equal wall time per move
(the dotted line is the issue's target, a score of 0.40, i.e. -70 Elo); and
the student's training loss per chunk of steps (total, policy, value).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from chesszero.campaign.state import write_json_atomic

__all__ = ["TARGET_SCORE", "write_report"]

TARGET_SCORE = 0.40
"""Issue 11: the student at equal wall time per move scores at least this against its teacher."""

_CONDITIONS = (("equal_visits", "equal visits"), ("equal_time", "equal wall time per move"))


def _elo(m: dict[str, Any]) -> str:
    if m["elo_is_bound"]:
        return f"{'>=' if m['score'] == 1.0 else '<='} {m['elo']:+.0f} (one-sided bound)"
    return f"{m['elo']:+.0f} [{m['elo_lower']:+.0f}, {m['elo_upper']:+.0f}]"


def _match_table(summary: dict[str, Any]) -> list[str]:
    lines = ["| condition | student visits | teacher visits | games | student W-D-L | student score | "
             "Elo student - teacher [95% CI] |", "|---|---:|---:|---:|---|---:|---|"]
    for key, label in _CONDITIONS:
        m = summary.get(key)
        if m is None:
            continue
        lines.append(f"| {label} | {m['student_visits']} | {m['opponent_visits']} | {m['games']} | "
                     f"{m['wins']}-{m['draws']}-{m['losses']} | {m['score']:.3f} | {_elo(m)} |")
    return lines


def _markdown(summary: dict[str, Any]) -> str:
    t, d = summary["training"], summary["distill"]
    a = t["agreement"]
    teacher = summary["teacher"]
    out = [f"# Distillation `{summary['name']}`", "",
           f"Teacher: {t['teacher_size']} ({t['teacher_parameters']:,} parameters), checkpoint "
           f"`{teacher['checkpoint']}`" + (f" of campaign `{teacher['campaign']}`" if teacher["campaign"] else "")
           + (f", MLflow run `{teacher['run_id']}`" if teacher["run_id"] else "") + ".",
           f"Student: {t['student_size']} ({t['student_parameters']:,} parameters), supervision "
           f"`{d['supervision']}`" + (f" (teacher weight {d['teacher_weight']})" if d["supervision"] == "mix" else "")
           + f", temperature {d['temperature']}, {t['steps']} steps of {d['global_batch']} rows on {t['rows']:,} "
           f"snapshot rows ({', '.join(Path(p).name for p in summary['snapshots'])}).", ""]
    if "equal_visits" in summary or "equal_time" in summary:
        s = summary["speed"]
        out += ["## Student vs teacher (paired matches on the campaign openings)", "",
                *_match_table(summary), "",
                f"Search speed as a match runs it ({s['positions']} opening positions, median of {s['repeats']} "
                f"interleaved runs): teacher {s['teacher_visits_per_s']:.0f} visits/s, student "
                f"{s['student_visits_per_s']:.0f} visits/s (x{s['ratio']:.2f}); at equal wall time the student "
                f"searches {summary['equal_time']['student_visits']} visits per move to the teacher's "
                f"{summary['equal_time']['opponent_visits']}.", ""]
        score = summary["equal_time"]["score"]
        verdict = "met" if score >= TARGET_SCORE else "not met"
        out += [f"Target (issue 11): the student at equal wall time per move scores at least {TARGET_SCORE:.2f} "
                f"against its teacher: **{verdict}** ({score:.3f}).", ""]
    out += ["## Student vs teacher on held-out snapshot rows", "",
            "| positions | top-1 agreement | KL(teacher ‖ student) | WDL MAE | search-policy CE student | "
            "search-policy CE teacher |", "|---:|---:|---:|---:|---:|---:|",
            f"| {a['positions']} | {a['top1_agreement']:.3f} | {a['policy_kl']:.4f} | {a['wdl_mae']:.4f} | "
            f"{a['student_search_ce']:.4f} | {a['teacher_search_ce']:.4f} |", ""]
    out += ["## Publication (fidelity gate, INT8 vs the source network)", "",
            "| network | passed | agreement | KL | WDL MAE |", "|---|---|---:|---:|---:|"]
    for label in ("student", "teacher"):
        f = summary["publish"][label]["metrics"]
        out.append(f"| {label} | {f.get('passed')} | {f.get('agreement', math.nan):.4f} | "
                   f"{f.get('kl_mean', math.nan):.5f} | {f.get('wdl_mae', math.nan):.5f} |")
    if summary.get("ladder"):
        out += ["", "## Student and teacher on the ladder", "", "| rung | network | visits | games | W-D-L | score |",
                "|---|---|---:|---:|---|---:|"]
        for label, rungs in summary["ladder"].items():
            for rung, m in rungs.items():
                out.append(f"| {rung} | {label} | {m['student_visits']} | {m['games']} | "
                           f"{m['wins']}-{m['draws']}-{m['losses']} | {m['score']:.3f} |")
    return "\n".join(out) + "\n"


def _figure(summary: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from chesszero.evaluate.elo import elo_difference

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    shown = [(label, summary[key]) for key, label in _CONDITIONS if key in summary]
    for i, (_, m) in enumerate(shown):
        low, high = m["elo"] - m["elo_lower"], m["elo_upper"] - m["elo"]
        left.errorbar([i], [m["elo"]], yerr=[[low], [high]], fmt="o", capsize=6, color=f"C{i}")
        left.annotate(f"{m['score']:.2f} ({m['student_visits']} vs {m['opponent_visits']} visits)",
                      (i, m["elo"]), textcoords="offset points", xytext=(8, 0), fontsize=8)
    left.axhline(0.0, color="grey", lw=0.8)
    left.axhline(elo_difference(TARGET_SCORE), color="red", ls=":", lw=1, label=f"target score {TARGET_SCORE}")
    left.set_xticks(range(len(shown)), [label for label, _ in shown])
    left.set_xlim(-0.5, len(shown) - 0.5 + 0.8)
    left.set_ylabel("student Elo relative to teacher (95% CI)")
    left.set_title("student vs teacher, paired matches")
    left.legend(fontsize=8, loc="lower right")
    quanta = summary["training"]["quanta"]
    steps = [q["end_step"] for q in quanta]
    for key, label in (("loss_total", "total"), ("loss_policy", "policy"), ("loss_value", "value")):
        right.plot(steps, [q[key] for q in quanta], marker="o", label=label)
    right.set_xlabel("student optimizer step")
    right.set_ylabel(f"{summary['distill']['supervision']} loss (mean over each chunk)")
    right.set_title(f"distilling {summary['training']['student_size']} from {summary['training']['teacher_size']}")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(summary: dict[str, Any], out_dir: Path) -> Path:
    """Writes distill.md, distill.png and summary.json into `out_dir`; returns the markdown path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out_dir / "summary.json", summary, sort_keys=False)
    md = out_dir / "distill.md"
    md.write_text(_markdown(summary))
    _figure(summary, out_dir / "distill.png")
    return md
