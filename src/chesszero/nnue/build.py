"""``chesszero nnue build``: a teacher campaign -> ``runs/nnue/<name>/student.nnue``.

Stages, each writing its files atomically into the work folder and skipped
on a rerun whose inputs match (``nnue.stages``), so a killed build resumes:

1. ``positions``: quiet positions of the teacher's game records
   (``nnue.positions``) and of alpha-beta games (``nnue.searchgames``; only
   when the core has ``AlphaBeta``, otherwise skipped with a remark),
   deduplicated by Zobrist key, with the 5% key-hash held-out mask.
2. ``labels``: the teacher's value head on every position and its searched
   root value on a key-hash subset (``nnue.labels``), with the flatness
   check (a loud warning when the teacher's values do not vary or track
   material).
3. ``features``: the engine's feature indices of every position
   (``nnue.native``; the one featurizer).
4. ``train``: the student (``nnue.train``, itself resumable from
   ``train.pt``), keeping the epoch with the best held-out loss.
5. ``export``: quantise and write ``student.nnue``, read it back with the
   numpy reader and check the integer reference against the float network on
   the held-out positions; when the core can load networks, its evaluation
   must equal the integer reference exactly.

``nnue.report`` then writes ``summary.json`` and ``nnue.md`` and records the
MLflow run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from rich import progress as rp
from rich.console import Console

from chesszero.config import Config
from chesszero.fsio import file_sha256
from chesszero.nnue import native
from chesszero.nnue.paths import latest_student, nnue_root
from chesszero.nnue.positions import (
    CP_CLIP,
    SEARCH_SUBSET,
    SOURCE_SEARCH,
    SOURCE_TEACHER,
    TeacherCampaign,
    key_fraction,
)
from chesszero.nnue.stages import Stage, input_key
from chesszero.search.evaluators import Evaluator

__all__ = ["BuildRequest", "round_request", "run_build", "search_net"]

POSITIONS_FORMAT = 2
"""Format of ``positions.npz`` in its stage key: 2 added ``search_cp`` (a format-1 stage is rebuilt)."""


@dataclass(frozen=True)
class BuildRequest:
    """One build: recipe, teacher, names, and (for tests) an evaluator standing in for the teacher."""

    root: Path
    name: str
    cfg: Config
    teacher: TeacherCampaign
    report_dir: Path
    evaluator: Callable[[], Evaluator] | None = None  # None: the teacher's published artifact (ONNX Runtime)
    evaluator_id: str = ""  # names the stand-in in the labels' key
    track: bool = True  # record an MLflow run
    earlier: tuple[Path, ...] = ()  # work folders of earlier bootstrap rounds: their rows join the training

    @property
    def work(self) -> Path:
        return nnue_root(self.root) / self.name


def _progress(console: Console, enabled: bool) -> rp.Progress:
    return rp.Progress(rp.TextColumn("{task.description}"), rp.BarColumn(), rp.MofNCompleteColumn(),
                       rp.TimeElapsedColumn(), rp.TimeRemainingColumn(), console=console, disable=not enabled)


def search_net(root: Path, spec: str, *, build: str | None = None) -> Path | None:
    """The network of the search games: ``control`` -> None, ``latest`` -> the newest student of
    another build than ``build`` (None when there is none: a finished build's own student would change
    its inputs, so a rerun would start over), else the named file."""
    if spec == "control":
        return None
    if spec == "latest":
        return latest_student(root, exclude=build)
    path = Path(spec)
    if not path.is_file():
        raise ValueError(f"nnue.search_net: no such file {spec!r} (use 'latest', 'control' or a path)")
    return path


def _search(req: BuildRequest) -> tuple[Any, dict[str, Any]]:
    """The alpha-beta of the search games and the search labels: ``(SearchGameSettings, identity)``."""
    from chesszero.nnue.searchgames import SearchGameSettings

    c = req.cfg.nnue
    # 'latest' never means this build's own student (any round's): a rerun would change its inputs.
    net = search_net(req.root, c.search_net, build=req.name.split("/", 1)[0])
    settings = SearchGameSettings(games=c.search_games, net=net, depth=c.search_depth, nodes=c.search_nodes,
                                  random_plies=c.search_random_plies, max_plies=c.search_max_plies,
                                  threads=c.search_threads, seed=c.seed)
    return settings, {"net": file_sha256(net) if net else "control", "depth": c.search_depth,
                      "nodes": c.search_nodes}


def _positions(req: BuildRequest, bars: rp.Progress, console: Console) -> tuple[str, dict[str, Any]]:
    from chesszero.nnue.positions import PositionRows, finish, read_teacher_games
    from chesszero.nnue.searchgames import play_search_games

    c = req.cfg.nnue
    search: dict[str, Any] = {"games": 0}
    settings = None
    if c.search_games:
        if not native.has(native.ALPHABETA):
            console.print(f"[yellow]nnue: skipping the {c.search_games} alpha-beta games: this core has no "
                          "_core.AlphaBeta yet (rebuild it with the NNUE engine); teacher games only[/]")
            search = {"games": 0, "skipped": "no _core.AlphaBeta"}
        else:
            settings, identity = _search(req)
            search = {"games": c.search_games, **identity, "random_plies": c.search_random_plies,
                      "max_plies": c.search_max_plies, "seed": c.seed}
    shards = [[str(p.relative_to(req.teacher.folder)), p.stat().st_size] for p in req.teacher.shards]
    key = input_key({"shards": shards, "max_games": c.max_games, "max_positions": c.max_positions,
                     "holdout": c.holdout_fraction, "search": search, "format": POSITIONS_FORMAT})
    stage = Stage(req.work, "positions")
    if (done := stage.done(key)) is not None:
        console.print(f"nnue: positions: reusing {done['positions']} positions ({stage.arrays_path})")
        return key, done
    started = time.perf_counter()
    rows = PositionRows()
    task = bars.add_task("teacher games", total=len(req.teacher.shards))
    games = read_teacher_games(req.teacher.shards, rows, max_games=c.max_games,
                               on_shard=lambda k: bars.advance(task, k))
    teacher_quiet = len(rows)
    played = 0
    if settings is not None:
        task = bars.add_task(f"alpha-beta games ({'student' if settings.net else 'control'})", total=c.search_games)
        played = play_search_games(settings, rows, on_game=lambda k: bars.advance(task, k))
    arrays = finish(rows.arrays(), holdout_fraction=c.holdout_fraction, max_positions=c.max_positions)
    n = len(arrays["key"])
    if n < 2 or arrays["holdout"].all() or not arrays["holdout"].any():
        raise ValueError(f"teacher campaign {req.teacher.name!r} gave {n} quiet positions "
                         f"({int(arrays['holdout'].sum())} held out): too few to train on")
    summary = {"teacher_games": games, "search_games": played, "offered": rows.seen, "quiet": len(rows),
               "teacher_quiet": teacher_quiet, "positions": n, "holdout": int(arrays["holdout"].sum()),
               "from_teacher": int((arrays["source"] == SOURCE_TEACHER).sum()),
               "from_search": int((arrays["source"] == SOURCE_SEARCH).sum()),
               "unknown_results": int(np.isnan(arrays["result"]).sum()), "search": search,
               "seconds": round(time.perf_counter() - started, 2)}
    stage.save(key, arrays, summary)
    return key, summary


def _teacher(req: BuildRequest) -> tuple[Callable[[], Evaluator], str]:
    if req.evaluator is not None:
        return req.evaluator, f"stand-in:{req.evaluator_id}"
    artifact = req.teacher.artifact
    if artifact is None or not artifact.is_file():
        raise ValueError(f"teacher campaign {req.teacher.name!r} has no published artifact to label with "
                         f"({artifact or 'no active_artifact in state.json'}); pass --teacher-artifact")

    def load() -> Evaluator:
        from chesszero.publish.loading import load_evaluator

        return load_evaluator(artifact, plain_onnx=False, threads=req.cfg.nnue.threads)

    return load, file_sha256(artifact)


def _labels(req: BuildRequest, teacher: tuple[Callable[[], Evaluator], str], positions_key: str,
            positions: dict[str, Any], bars: rp.Progress, console: Console) -> tuple[str, dict]:
    from chesszero.campaign.search_settings import evaluation_search
    from chesszero.nnue.labels import check_values, p_search, p_teacher, searched_values, value_head
    from chesszero.nnue.searchgames import search_scores

    c = req.cfg.nnue
    make, teacher_id = teacher
    search_settings, search_id = _search_labeller(req)
    key = input_key({"positions": positions_key, "teacher": teacher_id, "fraction": c.teacher_search_fraction,
                     "visits": c.teacher_search_visits, "search": req.cfg.search.model_dump(mode="json"),
                     "search_labels": search_id})
    stage = Stage(req.work, "labels")
    done = stage.done(key)
    if done is not None:
        console.print(f"nnue: labels: reusing the teacher's labels ({stage.arrays_path})")
    else:
        started = time.perf_counter()
        pos = Stage(req.work, "positions").load()
        evaluator = make()
        task = bars.add_task("teacher value head", total=len(pos["key"]))
        values, material = value_head(evaluator, pos["planes"], batch=c.label_batch,
                                      on_batch=lambda k: bars.advance(task, k))
        subset = np.flatnonzero(key_fraction(pos["key"], SEARCH_SUBSET) < c.teacher_search_fraction)
        searched = np.full(len(values), np.nan, np.float32)
        if len(subset):
            task = bars.add_task(f"teacher searches ({c.teacher_search_visits} visits)", total=len(subset))
            searched[subset] = searched_values(evaluator, [str(f) for f in pos["fen"][subset]],
                                               visits=c.teacher_search_visits, options=evaluation_search(req.cfg),
                                               on_batch=lambda k: bars.advance(task, k))
        check = check_values(values, material, min_std=c.min_value_std, min_corr=c.min_material_corr)
        agree = (float(np.corrcoef(values[subset], searched[subset])[0, 1])
                 if len(subset) > 2 and values[subset].std() > 0 and searched[subset].std() > 0 else None)
        arrays = {"value": values, "material": material, "searched": searched,
                  "p_teacher": p_teacher(values, searched)}
        done = {"check": check.to_dict(), "message": check.message(), "searched": int(len(subset)),
                "searched_corr_with_value_head": agree, "teacher": teacher_id, "search_labels": None}
        if search_settings is not None:
            # The games' own scores where the games' search is the labeller; every other position searched.
            cp = np.full(len(values), np.nan, np.float32)
            if pos["search_cp"].size and search_id == _games_search_id(positions):
                cp = pos["search_cp"].astype(np.float32).copy()
            todo = np.flatnonzero(np.isnan(cp))
            task = bars.add_task(f"alpha-beta labels ({search_id['nodes'] or search_id['depth']} "
                                 f"{'nodes' if search_id['nodes'] else 'plies'})", total=len(todo))
            cp[todo] = search_scores(search_settings, [str(f) for f in pos["fen"][todo]],
                                     on_batch=lambda k: bars.advance(task, k))
            arrays |= {"search_cp": cp, "p_search": p_search(cp)}
            known = ~np.isnan(cp)
            done["search_labels"] = {**search_id, "from_games": int(len(values) - len(todo)),
                                     "searched": int(len(todo)), "unknown": int((~known).sum()),
                                     "corr_with_teacher": (float(np.corrcoef(values[known], cp[known])[0, 1])
                                                           if known.sum() > 2 and values[known].std() > 0
                                                           and cp[known].std() > 0 else None)}
        done["seconds"] = round(time.perf_counter() - started, 2)
        stage.save(key, arrays, done)
    if done["check"]["flat"]:
        console.print(f"[bold red]nnue: WARNING: {done['message']}[/]")
    else:
        console.print(f"nnue: {done['message']}")
    return key, done


def _search_labeller(req: BuildRequest) -> tuple[Any, dict[str, Any] | None]:
    """The alpha-beta that labels (``nnue.search_label_weight`` > 0), or ``(None, None)``."""
    if not req.cfg.nnue.search_label_weight:
        return None, None
    if not native.has(native.ALPHABETA):
        raise ValueError("nnue.search_label_weight > 0 needs the alpha-beta search, and this core has no "
                         "_core.AlphaBeta (rebuild it: make build), or set nnue.search_label_weight=0")
    return _search(req)


def _games_search_id(positions: dict[str, Any]) -> dict[str, Any] | None:
    """The identity of the search that played the search games (None when none were played)."""
    search = positions.get("search") or {}
    if not search.get("games"):
        return None
    return {"net": search["net"], "depth": search["depth"], "nodes": search["nodes"]}


def _features(req: BuildRequest, positions_key: str, bars: rp.Progress, console: Console) -> str:
    stage = Stage(req.work, "features")
    key = input_key({"positions": positions_key})
    if stage.done(key) is not None:
        console.print(f"nnue: features: reusing {stage.arrays_path}")
    else:
        fens = [str(f) for f in Stage(req.work, "positions").load()["fen"]]
        task = bars.add_task("features (core)", total=len(fens))
        stm, nstm = native.features_batch(fens)
        bars.update(task, completed=len(fens))
        stage.save(key, {"stm": stm, "nstm": nstm}, {"positions": len(fens)})
    return key


def _train(req: BuildRequest, labels_key: str, features_key: str, bars: rp.Progress,
           console: Console) -> tuple[str, dict]:
    import torch

    from chesszero.nnue.quant import FloatNet
    from chesszero.nnue.train import Samples, TrainSettings, train_student

    c = req.cfg.nnue
    settings = TrainSettings.from_config(c)
    earlier = [_stage_key(folder, "labels") + _stage_key(folder, "features") for folder in req.earlier]
    key = input_key({"labels": labels_key, "features": features_key, "lambda": c.lambda_,
                     "search_label_weight": c.search_label_weight, "settings": asdict(settings),
                     **({"earlier_rounds": earlier} if earlier else {})})
    stage = Stage(req.work, "train")
    done = stage.done(key)
    if done is not None:
        console.print(f"nnue: train: reusing the trained student ({stage.arrays_path})")
        return key, done
    parts = [_samples(folder, c.search_label_weight, c.lambda_) for folder in (*req.earlier, req.work)]
    stm, nstm, target, held = (np.concatenate([part[i] for part in parts]) for i in range(4))
    train = Samples(stm[~held], nstm[~held], target[~held])
    holdout = Samples(stm[held], nstm[held], target[held])
    task = bars.add_task(f"training {c.hidden}x2 ({len(train)} positions)", total=None)
    threads = torch.get_num_threads()
    torch.set_num_threads(c.threads)
    try:
        outcome = train_student(train, holdout, settings, checkpoint=req.work / "train.pt", identity=key,
                                on_step=lambda k, total: bars.update(task, completed=k, total=total))
    finally:
        torch.set_num_threads(threads)
    net: FloatNet = outcome.net
    done = outcome.to_dict() | {"train_positions": len(train), "holdout_positions": len(holdout),
                                "rounds_pooled": len(parts)}
    stage.save(key, {"w1": net.w1, "b1": net.b1, "w2": net.w2, "b2": np.array(net.b2)}, done)
    return key, done


def _stage_key(folder: Path, name: str) -> str:
    """The input key a finished stage in ``folder`` was saved with."""
    stage = Stage(folder, name)
    if not stage.meta_path.is_file():
        raise ValueError(f"{folder}: the {name} stage of an earlier round is missing (rerun the build)")
    return str(json.loads(stage.meta_path.read_text())["key"])


def _samples(folder: Path, weight: float, lam: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(stm, nstm, target, held)`` of a round's positions (its own labels, this recipe's target)."""
    from chesszero.nnue.labels import p_label
    from chesszero.nnue.train import target_of

    pos, lab, feat = (Stage(folder, s).load() for s in ("positions", "labels", "features"))
    return feat["stm"], feat["nstm"], target_of(pos["result"], p_label(lab, weight), lam), pos["holdout"]


def _export(req: BuildRequest, train_key: str) -> dict[str, Any]:
    from chesszero.nnue.fileformat import read_nnue, write_nnue
    from chesszero.nnue.labels import p_label
    from chesszero.nnue.quant import FloatNet, evaluate_float, evaluate_int, quantise
    from chesszero.nnue.train import target_of

    stage = Stage(req.work, "export")
    student = req.work / "student.nnue"
    done = stage.done(train_key)
    if done is not None and student.is_file() and file_sha256(student) == done["sha256"]:
        return done
    w = Stage(req.work, "train").load()
    qnet = quantise(FloatNet(w["w1"], w["b1"], w["w2"], float(w["b2"])))
    write_nnue(student, qnet)
    back = read_nnue(student)
    for name in ("w1", "b1", "w2"):
        if not np.array_equal(getattr(back, name), getattr(qnet, name)):
            raise RuntimeError(f"{student}: {name} read back differs from what was written")
    pos, lab, feat = (Stage(req.work, s).load() for s in ("positions", "labels", "features"))
    held = pos["holdout"]
    stm, nstm = feat["stm"][held], feat["nstm"][held]
    float_cp = evaluate_float(FloatNet(w["w1"], w["b1"], w["w2"], float(w["b2"])), stm, nstm)
    int_cp = evaluate_int(back, stm, nstm).astype(np.float64)
    trained_cp = _trained_cp(FloatNet(w["w1"], w["b1"], w["w2"], float(w["b2"])), stm, nstm)
    p = lab["p_teacher"][held].astype(np.float64)
    teacher_cp = np.clip(400.0 * np.log(np.clip(p, 1e-9, 1 - 1e-9) / np.clip(1 - p, 1e-9, 1)), -CP_CLIP, CP_CLIP)
    target = target_of(pos["result"], p_label(lab, req.cfg.nnue.search_label_weight),
                       req.cfg.nnue.lambda_)[held].astype(np.float64)

    def mse(cp: np.ndarray) -> float:
        return float(np.mean((1.0 / (1.0 + np.exp(-cp / 400.0)) - target) ** 2))

    done = {"path": str(student), "bytes": student.stat().st_size, "sha256": file_sha256(student),
            "hidden": back.hidden, "holdout_positions": int(held.sum()),
            "holdout_loss_float": mse(float_cp), "holdout_loss_quantised": mse(int_cp),
            "mae_cp_vs_teacher_float": float(np.mean(np.abs(np.clip(float_cp, -CP_CLIP, CP_CLIP) - teacher_cp))),
            "mae_cp_vs_teacher_quantised": float(np.mean(np.abs(np.clip(int_cp, -CP_CLIP, CP_CLIP) - teacher_cp))),
            "mae_cp_vs_search_quantised": (
                float(np.nanmean(np.abs(np.clip(int_cp, -CP_CLIP, CP_CLIP) - lab["search_cp"][held])))
                if "search_cp" in lab and np.isfinite(lab["search_cp"][held]).any() else None),
            "max_abs_quantised_minus_float_cp": float(np.max(np.abs(int_cp - float_cp))),
            # The trained network's own forward pass (quantisation-aware) against the engine's integers.
            "mae_quantised_vs_trained_cp": float(np.mean(np.abs(int_cp - trained_cp))),
            "max_abs_quantised_vs_trained_cp": float(np.max(np.abs(int_cp - trained_cp))),
            "native_check": _native_check(student, [str(f) for f in pos["fen"][held]], int_cp)}
    stage.save(train_key, {"holdout_int_cp": int_cp.astype(np.int64)}, done)
    return done


def _trained_cp(net: Any, stm: np.ndarray, nstm: np.ndarray) -> np.ndarray:
    """Centipawns of the PyTorch student as trained (its quantisation-aware forward pass)."""
    import torch

    from chesszero.nnue.model import NnueModel

    model = NnueModel.from_float_net(net)
    with torch.no_grad():
        y = model(torch.from_numpy(np.asarray(stm, np.int64)), torch.from_numpy(np.asarray(nstm, np.int64)))
    return 400.0 * y.double().numpy()


def _native_check(student: Path, fens: list[str], int_cp: np.ndarray) -> dict[str, Any]:
    """The core's evaluation of the exported file against the numpy integer reference (must be equal)."""
    if not native.has(native.NET):
        return {"checked": False, "reason": "no _core.NnueNet in this core"}
    got = native.NativeNet(student).evaluate_batch(fens).astype(np.int64)
    diff = np.abs(got - int_cp.astype(np.int64))
    if diff.max(initial=0):
        i = int(np.argmax(diff))
        raise RuntimeError(f"{student}: the core evaluates {fens[i]!r} as {int(got[i])} cp, the contract's "
                           f"integer reference as {int(int_cp[i])} cp ({int((diff > 0).sum())} of {len(fens)} "
                           "held-out positions differ)")
    return {"checked": True, "positions": len(fens), "max_abs_diff": 0}


def _stages(req: BuildRequest, teacher: tuple[Callable[[], Evaluator], str], console: Console,
            progress: bool) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """One round's stages in ``req.work``: ``(positions, labels, training, export)`` summaries."""
    req.work.mkdir(parents=True, exist_ok=True)
    with _progress(console, progress) as bars:
        positions_key, positions = _positions(req, bars, console)
        labels_key, labels = _labels(req, teacher, positions_key, positions, bars, console)
        features_key = _features(req, positions_key, bars, console)
        train_key, training = _train(req, labels_key, features_key, bars, console)
        export = _export(req, train_key)
    return positions, labels, training, export


def round_request(req: BuildRequest, number: int, searcher: Path | None) -> BuildRequest:
    """Round ``number`` of ``req`` (``nnue.rounds``): its alpha-beta searches with ``searcher`` (the previous
    round's student; None: the recipe's ``search_net``) and trains on the positions of every round so far
    (each labelled by its own round's search); the last round is ``req`` itself, earlier ones work in
    ``runs/nnue/<name>/round-<k>/`` with no report or MLflow run of their own."""
    cfg = req.cfg
    if searcher is not None:
        cfg = cfg.model_copy(update={"nnue": cfg.nnue.model_copy(update={"search_net": str(searcher)})})
    earlier = tuple(nnue_root(req.root) / f"{req.name}/round-{k}" for k in range(1, number))
    if number == cfg.nnue.rounds:
        return replace(req, cfg=cfg, earlier=earlier)
    name = f"{req.name}/round-{number}"
    return replace(req, name=name, cfg=cfg, report_dir=nnue_root(req.root) / name / "report", track=False,
                   earlier=earlier)


def _shown(spec: str, root: Path) -> str:
    """``spec`` with a path under ``root`` written relative to it (reports read the same on every machine)."""
    path = Path(spec)
    if path.is_absolute() and path.is_relative_to(root.resolve()):
        return str(path.relative_to(root.resolve()))
    return spec


def run_build(req: BuildRequest, *, console: Console | None = None, progress: bool = True) -> dict[str, Any]:
    """Runs (or resumes) every round's stages and writes the report; returns the summary."""
    from chesszero.nnue.report import write_report

    console = console or Console(stderr=True)
    teacher = _teacher(req)  # a campaign without a published network fails before any work
    rounds: list[dict[str, Any]] = []
    searcher: Path | None = None
    total = req.cfg.nnue.rounds
    for number in range(1, total + 1):
        this = round_request(req, number, searcher)
        if total > 1:
            console.print(f"nnue: round {number} of {total}: alpha-beta over "
                          f"{this.cfg.nnue.search_net if number == 1 else searcher}")
        positions, labels, training, export = _stages(this, teacher, console, progress)
        searcher = Path(export["path"])
        rounds.append({"round": number, "search_net": _shown(this.cfg.nnue.search_net, req.root),
                       "student": export["path"],
                       "positions": positions["positions"], "search_games": positions["search_games"],
                       "search_labels": labels.get("search_labels"),
                       "holdout_loss": export["holdout_loss_quantised"],
                       "mae_cp_vs_search": export.get("mae_cp_vs_search_quantised")})
    return write_report(this, positions=positions, labels=labels, training=training, export=export, rounds=rounds)
