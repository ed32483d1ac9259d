"""reports/visit_scaling.py: a campaign's artifact (and its untrained control)
rated at several visit budgets with the campaign's own evaluation, and its
refusals, each naming the input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from campaign_support import REPO, make_root

from chesszero.campaign.context import CampaignPaths
from chesszero.campaign.state import CampaignState, StateStore

SCRIPT = REPO / "reports" / "visit_scaling.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600,
                          cwd=REPO)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory, published_on_cpu) -> Path:
    """A smoke campaign `demo` whose active artifact and `initial` are the published tiny network."""
    root = make_root(tmp_path_factory.mktemp("scaling") / "root")
    paths = CampaignPaths(root / "runs" / "demo")
    source = Path(published_on_cpu.int8.path).parent
    for folder in ("gen_0002", "initial"):
        shutil.copytree(source, paths.dir / "artifacts" / folder)
    active = paths.dir / "artifacts" / "gen_0002" / Path(published_on_cpu.int8.path).name
    StateStore(paths.state).save(CampaignState(name="demo", preset="smoke", generation=3,
                                               active_artifact=str(active), active_generation=2))
    return root


def test_each_arm_at_each_budget_is_rated_on_the_named_rungs(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "scaling.json"
    done = run(str(root), "demo", "--visits", "2", "4", "--rungs", "random", "greedy", "--openings", "1",
               "--control", "--json", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if " visits: " in line]
    assert [line.split(":")[0] for line in lines] == [
        "final at 2 visits", "final at 4 visits", "control at 2 visits", "control at 4 visits"]
    result = json.loads(out.read_text())
    assert result["rungs"] == ["random", "greedy"] and result["openings"] == 1
    assert [(r["arm"], r["visits"]) for r in result["results"]] == [
        ("final", 2), ("final", 4), ("control", 2), ("control", 4)]
    for r in result["results"]:
        assert list(r["scores"]) == ["random", "greedy"] and all(0 <= s <= 1 for s in r["scores"].values())
        assert r["joint"]["games"] == 4  # one opening pair per rung, two rungs
    assert result["results"][2]["artifact"].endswith("initial/" + Path(result["results"][0]["artifact"]).name)
    played = root / "runs" / "demo" / "visit_scaling"
    assert sorted(p.name for p in played.glob("*.pgn")) == sorted(
        f"{arm}-v{v}_vs_{rung}.pgn" for arm in ("final", "control") for v in (2, 4) for rung in ("random", "greedy"))


@pytest.mark.parametrize(("args", "message"), [
    (["--visits", "0"], "argument --visits: visits must be at least 1, got 0"),
    (["--openings", "x"], "argument --openings: not an integer: 'x'"),
    (["--rungs", "random", "nope"], "visit_scaling: no rung named 'nope'"),
    (["--search", "c_puct_eval=-1"], "c_puct_eval"),
    (["--search", "c_puct_eval"], "c_puct_eval"),
])
def test_bad_arguments_are_refused_by_name_before_any_game(root: Path, args: list[str], message: str) -> None:
    done = run(str(root), "demo", *args)
    assert done.returncode == 2 and message in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and " visits: " not in done.stdout


def test_a_missing_campaign_or_artifact_is_named(root: Path, tmp_path: Path) -> None:
    missing = run(str(root), "other")
    assert missing.returncode == 2 and "runs/other/state.json does not exist" in missing.stderr
    model = run(str(root), "demo", "--model", str(tmp_path / "none.onnx"))
    assert model.returncode == 2 and f"final artifact {tmp_path / 'none.onnx'} does not exist" in model.stderr


def test_material_assist_arms_play_each_budget_again(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "assist.json"
    done = run(str(root), "demo", "--visits", "4", "--material-assist", "0", "1", "--rungs", "greedy",
               "--openings", "2", "--out", str(tmp_path / "games"), "--json", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line.split(":")[0] for line in done.stdout.splitlines() if " visits" in line]
    assert lines == ["final at 4 visits", "final at 4 visits, material assist 1"]
    result = json.loads(out.read_text())
    assert [(r["visits"], r["material_assist"]) for r in result["results"]] == [(4, 0.0), (4, 1.0)]
    plain, assisted = (tmp_path / "games" / f"final-v4{tag}_vs_greedy.pgn" for tag in ("", "-m1"))
    # the games are deterministic; at weight 1 the leaf values are the material count alone, so they differ
    def moves(pgn: Path) -> list[str]:
        return [line for line in pgn.read_text().splitlines() if line and not line.startswith("[")]

    assert moves(plain) and moves(plain) != moves(assisted)
    bad = run(str(root), "demo", "--material-assist", "1.5")
    assert bad.returncode == 2 and "material assist weight must lie in [0, 1], got 1.5" in bad.stderr


def test_leaf_material_arms_play_each_budget_again(root: Path, tmp_path: Path) -> None:
    games = tmp_path / "games"
    done = run(str(root), "demo", "--visits", "8", "--material-assist", "0", "1", "--leaf-material", "0", "1",
               "--leaf-depth", "0", "--rungs", "greedy", "--openings", "1", "--out", str(games))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line.split(":")[0] for line in done.stdout.splitlines() if " visits" in line]
    assert lines == ["final at 8 visits", "final at 8 visits, leaf material 1 at depth 0",
                     "final at 8 visits, material assist 1",
                     "final at 8 visits, material assist 1, leaf material 1 at depth 0"]

    def moves(tag: str) -> list[str]:
        pgn = games / f"final-v8{tag}_vs_greedy.pgn"
        return [line for line in pgn.read_text().splitlines() if line and not line.startswith("[")]

    assert moves("") and moves("") != moves("-q1d0")
    # at depth 0 the tree's count is the Python assist's material count: the same leaf values, the same games
    assert moves("-q1d0") == moves("-m1")
    bad = run(str(root), "demo", "--leaf-depth", "17")
    assert bad.returncode == 2 and "leaf depth must lie in 0..16, got 17" in bad.stderr


def test_search_changes_apply_to_this_run_only(root: Path, tmp_path: Path) -> None:
    games, out = tmp_path / "games", tmp_path / "changed.json"
    for extra in ([], ["--search", "c_puct_eval=8.0", "--json", str(out)]):
        done = run(str(root), "demo", "--visits", "8", "--rungs", "greedy", "--openings", "1", "--out", str(games),
                   *extra)
        assert done.returncode == 0, done.stderr[-3000:]
    assert "final at 8 visits, c_puct_eval 8.0:" in done.stdout
    assert json.loads(out.read_text())["results"][0]["search_changes"] == {"search.c_puct_eval": 8.0}

    def moves(tag: str) -> list[str]:
        pgn = games / f"final-v8{tag}_vs_greedy.pgn"
        return [line for line in pgn.read_text().splitlines() if line and not line.startswith("[")]

    assert moves("") and moves("") != moves("-c_puct_eval=8.0")
