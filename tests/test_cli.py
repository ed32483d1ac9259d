"""The `chesszero` subcommands: argument errors are one line and exit 2; `train`
runs a quantum from a replay store, `publish` gates its checkpoint, `selfplay`
plays with the artifact; `uci`, `ladder` and `bench` reach their packages.
(`demo` and `perft` are covered by test_cli_demo.py.)"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from train_support import make_raw_rows, one_thread, requires_core

from chesszero.cli import build_parser, main

pytestmark = requires_core
__all__ = ["one_thread"]  # autouse fixture

SMALL = ["--preset", "smoke", "--set", "train.global_batch=16", "--set", "train.steps_per_quantum=2"]


def one_error_line(capsys: pytest.CaptureFixture[str], prog: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"{prog}: error: "), err
    return err


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small replay store of real rows (40 rows fund 2 quanta of 2 x 16 at reuse 4)."""
    from chesszero.replay import ReplayStore

    path = tmp_path_factory.mktemp("cli") / "replay.bin"
    with ReplayStore.create(path, capacity=256) as store:
        store.append(make_raw_rows(40, seed=41))
    return path


@pytest.fixture(scope="module")
def checkpoint(replay: Path) -> Path:
    ckpt = replay.with_name("train.pt")
    assert main(["train", *SMALL, "--replay", str(replay), "--checkpoint", str(ckpt)]) == 0
    return ckpt


@pytest.mark.parametrize(
    ("argv", "prog", "says"),
    [
        (["train", "--preset", "smoke"], "chesszero train", "required: --replay, --checkpoint"),
        (["train", "--replay", "r", "--checkpoint", "c", "--steps", "many"], "chesszero train",
         "argument --steps: invalid int value: 'many'"),
        (["train", "--replay", "/nonexistent/replay.bin", "--checkpoint", "c"], "chesszero train",
         "replay store not found: '/nonexistent/replay.bin'"),
        (["publish", "--checkpoint", "c.pt"], "chesszero publish", "required: --out"),
        (["publish", "--checkpoint", "c.pt", "--out", "o", "--precision", "int4"],
         "chesszero publish", "argument --precision: invalid choice: 'int4'"),
        (["publish", "--checkpoint", "/nonexistent.pt", "--out", "o", "--preset", "smoke"],
         "chesszero publish", "checkpoint not found: '/nonexistent.pt'"),
        (["uci", "--visits", "lots"], "chesszero uci", "argument --visits: invalid int value"),
        (["ladder", "show", "/nonexistent/ladder.json"], "chesszero ladder show",
         "ladder table not found: /nonexistent/ladder.json"),
        (["bench", "--only", "nope"], "chesszero bench", "unknown benchmarks ['nope']"),
        (["bench", "--timeout", "soon"], "chesszero bench", "argument --timeout: invalid float"),
        (["frobnicate"], "chesszero", "invalid choice: 'frobnicate'"),
    ],
)
def test_argument_errors_are_one_line_and_exit_2(argv, prog, says, capsys) -> None:
    assert main(argv) == 2
    assert says in one_error_line(capsys, prog)


def test_train_recipe_errors_are_one_line(replay: Path, tmp_path: Path, capsys) -> None:
    base = ["train", "--replay", str(replay), "--checkpoint", str(tmp_path / "c.pt")]
    assert main([*base, "--preset", "huge"]) == 2
    assert "unknown preset 'huge'" in one_error_line(capsys, "chesszero train")
    assert main([*base, "--preset", "smoke", "--set", "train.momentum=1.5", "--set", "train.lr_x=1"]) == 2
    err = one_error_line(capsys, "chesszero train")
    assert "train.momentum: " in err and "train.lr_x: Extra inputs" in err
    assert main([*base, "--set", "train.seed"]) == 2
    assert "KEY=VALUE" in one_error_line(capsys, "chesszero train")
    assert main([*base, "--preset", "smoke", "--steps", "0"]) == 2
    assert "--steps must be at least 1" in one_error_line(capsys, "chesszero train")
    assert not (tmp_path / "c.pt").exists()


def test_train_writes_a_checkpoint_that_reloads(replay: Path, checkpoint: Path, tmp_path, capsys) -> None:
    from chesszero.model import ChessNet
    from chesszero.train import load_checkpoint, load_model
    from chesszero.train.run import EXIT_UNFUNDED

    first = load_checkpoint(checkpoint)
    assert first.step == 2 and first.model_size == "2x16"
    assert first.extra["ledger"]["spent_presentations"] == 32
    assert isinstance(load_model(checkpoint), ChessNet)

    resumed = tmp_path / "resumed.pt"
    resumed.write_bytes(checkpoint.read_bytes())
    stats = tmp_path / "q.json"
    argv = ["train", *SMALL, "--replay", str(replay), "--checkpoint", str(resumed), "--stats-out", str(stats)]
    capsys.readouterr()
    assert main([*argv, "--generation", "1"]) == 0  # resumes at step 2
    printed = json.loads(capsys.readouterr().out)
    assert printed["start_step"] == 2 and printed["end_step"] == 4
    assert json.loads(stats.read_text()) == printed
    assert load_checkpoint(resumed).step == 4
    assert load_checkpoint(resumed).extra["generation"] == 1  # campaign bookkeeping
    for _ in range(3):  # 40 rows x reuse 4 = 160 presentations = 5 quanta of 32
        assert main(argv) == 0
    assert main(argv) == EXIT_UNFUNDED
    assert "not enough admitted replay rows" in capsys.readouterr().err
    assert load_checkpoint(resumed).step == 10


def test_train_with_world_size_2_launches_torchrun(replay: Path, tmp_path, monkeypatch) -> None:
    from chesszero.train import run

    launched: list[list[str]] = []

    def fake_run(command, check):
        launched.append(command)
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(run.subprocess, "run", fake_run)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    ckpt = tmp_path / "ddp.pt"
    argv = ["train", *SMALL, "--set", "train.world_size=2", "--replay", str(replay),
            "--checkpoint", str(ckpt), "--generation", "3", "--steps", "1"]
    assert main(argv) == 0
    (command,) = launched
    assert command[1:6] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m"]
    assert command[6] == "chesszero"
    asked, ranks = build_parser().parse_args(argv), build_parser().parse_args(command[7:])
    assert vars(ranks) == vars(asked)  # the ranks parse exactly what was asked
    assert ranks.set == ["train.global_batch=16", "train.steps_per_quantum=2", "train.world_size=2"]
    unfunded = [*argv[:-1], "1000"]
    assert main(unfunded) == run.EXIT_UNFUNDED  # checked before any rank starts
    assert len(launched) == 1


@pytest.mark.slow
def test_train_with_world_size_2_runs_two_gloo_ranks_through_torchrun(replay: Path, tmp_path: Path) -> None:
    """The real launcher (no mock): `chesszero train` with train.world_size=2 on
    CPU starts torchrun, two gloo ranks train one quantum, rank 0 writes the
    checkpoint and prints the statistics once."""
    import time

    from chesszero.train import load_checkpoint

    ckpt, stats = tmp_path / "ddp.pt", tmp_path / "ddp.json"
    argv = [sys.executable, "-m", "chesszero", "train", *SMALL, "--set", "train.world_size=2",
            "--replay", str(replay), "--checkpoint", str(ckpt), "--stats-out", str(stats), "--generation", "2"]
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    env["OMP_NUM_THREADS"] = "1"
    began = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)
    seconds = time.monotonic() - began
    assert done.returncode == 0, done.stderr[-3000:]
    printed = json.loads(done.stdout[done.stdout.index("{"):])  # rank 0 only: one JSON object
    assert printed["start_step"] == 0 and printed["end_step"] == 2
    assert json.loads(stats.read_text()) == printed
    saved = load_checkpoint(ckpt)
    assert saved.step == 2 and saved.extra["generation"] == 2
    assert saved.extra["ledger"]["spent_presentations"] == 2 * 16  # the global batch, split over the ranks
    print(f"one quantum through torchrun with 2 ranks: {seconds:.1f} s wall (launch, imports, rendezvous, 2 steps)")


@pytest.fixture(scope="module")
def published(checkpoint: Path) -> dict:
    out = checkpoint.with_name("gen-0001")
    argv = ["publish", "--preset", "smoke", "--checkpoint", str(checkpoint), "--out", str(out),
            "--state", str(out.with_name("active.json")), "--precision", "fp32"]
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert main(argv) == 0
    return json.loads(stdout.getvalue())


def test_publish_fp32_passes_the_gate(checkpoint: Path, published: dict) -> None:
    out = checkpoint.with_name("gen-0001")
    assert published["activated"] and published["fidelity"]["passed"] and published["error"] is None
    assert Path(published["artifact"]) == out / "fp32.onnx"
    assert (out / "fidelity.json").exists() and (out / "int8.onnx").exists()
    assert out.with_name("active.json").exists()


@pytest.mark.parametrize("with_model", [False, True], ids=["uniform", "published"])
def test_selfplay_writes_a_shard_of_finished_games(with_model, request, tmp_path, capsys) -> None:
    from chesszero.selfplay.records import read_records

    argv = ["selfplay", "--preset", "smoke", "--games", "2", "--out", str(tmp_path), "--visits", "4"]
    if with_model:
        argv += ["--model", request.getfixturevalue("published")["artifact"]]
    capsys.readouterr()
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["games"] >= 2 and report["positions"] > 0
    records = read_records(report["shard"])  # schema-checked
    assert len(records) == report["games"]
    assert sum(len(r.plies) for r in records) == report["positions"]
    from chesszero.selfplay.logs import conversion_counts

    counts = conversion_counts(records)
    assert report["conversion"] == {"opportunities": counts.opportunities, "converted": counts.converted,
                                    "rate": counts.rate}


def test_selfplay_argument_errors(tmp_path: Path, capsys) -> None:
    assert main(["selfplay", "--out", str(tmp_path)]) == 2
    assert "required: --games" in one_error_line(capsys, "chesszero selfplay")
    base = ["selfplay", "--preset", "smoke", "--out", str(tmp_path)]
    assert main([*base, "--games", "1", "--model", "/nonexistent/net.onnx"]) == 2
    assert "model file not found" in one_error_line(capsys, "chesszero selfplay")
    assert main([*base, "--games", "0"]) == 2
    assert "quotas must be >= 1" in one_error_line(capsys, "chesszero selfplay")
    assert not list(tmp_path.glob("*.parquet"))


def test_uci_session_on_stdio(monkeypatch, capsys) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("uci\nisready\nposition startpos\ngo nodes 8\nquit\n"))
    assert main(["uci", "--visits", "8"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "uciok" in out and "readyok" in out
    assert any(line.startswith("bestmove ") for line in out)


def test_uci_missing_model_is_one_line(capsys) -> None:
    assert main(["uci", "--model", "/nonexistent/net.onnx"]) == 2
    assert "model file not found" in one_error_line(capsys, "chesszero uci")


def test_bench_lists_the_benchmark_scripts(capsys) -> None:
    assert main(["bench", "--list"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert {"core", "train"} <= set(names)


def test_help_lists_every_subcommand(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for command in ("demo", "perft", "selfplay", "train", "publish", "uci", "ladder", "bench"):
        assert command in out


FAKE_BENCH = '''
import argparse, json, sys
from pathlib import Path
p = argparse.ArgumentParser()
p.add_argument("--json", type=Path)
p.add_argument("--quick", action="store_true")
a = p.parse_args()
if "{fail}" == "yes":
    sys.exit(4)
rows = [{{"name": "ours", "rate": 200.0, "unit": "ops/s", "reference": "", "ratio": None, "extra": {{}}}},
        {{"name": "theirs", "rate": 50.0, "unit": "ops/s", "reference": "ours / theirs",
          "ratio": 4.0, "extra": {{}}}}]
a.json.write_text(json.dumps({{"title": "fake {fail}", "machine": {{}}, "rows": rows,
                               "quick": a.quick}}))
'''


def test_bench_runner_collects_json_and_writes_markdown(tmp_path: Path) -> None:
    import runpy

    from chesszero.config import REPO_ROOT

    run_all = runpy.run_path(str(REPO_ROOT / "benchmarks" / "run_all.py"))
    folder, out = tmp_path / "benchmarks", tmp_path / "reports"
    folder.mkdir()
    out.mkdir()
    (folder / "bench_good.py").write_text(FAKE_BENCH.format(fail="no"))
    (folder / "bench_bad.py").write_text(FAKE_BENCH.format(fail="yes"))
    (folder / "bench_old.py").write_text("import argparse\nargparse.ArgumentParser().add_argument('--out')\n")
    (out / "bad.json").write_text("{}")  # stale: must not survive a failed run
    scripts = {s.name: s for s in run_all["discover"](folder)}
    assert sorted(scripts) == ["bad", "good", "old"]
    assert scripts["old"].skip_reason(quick=True) == "lacks --json and --quick"
    assert scripts["good"].skip_reason(quick=True) is None

    good = run_all["run_script"](scripts["good"], out, quick=True, timeout=60)
    bad = run_all["run_script"](scripts["bad"], out, quick=True, timeout=60)
    assert good.status == "ok" and bad.status.startswith("failed (exit 4")
    stored = json.loads((out / "good.json").read_text())
    assert stored["quick"] is True and stored["run"]["quick"] is True
    assert not (out / "bad.json").exists() and (out / "bad.log").exists()

    old = run_all["Outcome"](scripts["old"], "skipped: bench_old.py lacks --json and --quick")
    md = run_all["markdown"]([bad, good, old], {"cpu": "test cpu", "cpus": 2}, quick=True)
    assert "Machine: cpu test cpu, cpus 2" in md
    assert "## good: fake no" in md and "| theirs | 50.00 | ops/s | ours / theirs | 4.00x |" in md
    assert "Not measured: failed (exit 4" in md and "lacks --json and --quick" in md
