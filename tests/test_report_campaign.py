"""Which campaign `dvc repro figures tables` draws, and with which Python
(issue 24): the campaign named by `reports.figures_campaign` in params.yaml, never the
most recent run; and every stage runs `scripts/python`, so the stages find
the project's environment when dvc is started as `.venv/bin/dvc` with the
venv not activated (a bare `python` was the system's, without matplotlib)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from chesszero.campaign import metrics as M

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
SYSTEM_PATH = "/usr/bin:/bin"  # no .venv/bin: what a user typing `.venv/bin/dvc ...` has
sys.path.insert(0, str(REPO / "reports"))


def make_store(root: Path) -> str:
    """An MLflow store with two campaigns: `long-run` (started first, the one to
    draw) and `smoke-later` (started after it: the most recent)."""
    from mlflow.tracking import MlflowClient

    (root / "mlruns").mkdir(parents=True)
    uri = f"sqlite:///{root / 'mlruns' / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment(M.EXPERIMENT, artifact_location=str(root / "mlruns" / "artifacts"))
    for start, name, preset, generations in ((1_000_000, "long-run", "cpu", 3), (2_000_000, "smoke-later", "smoke", 1)):
        run = client.create_run(exp, start_time=start, run_name=name,
                                tags={M.TAG_KIND: "campaign", M.TAG_CAMPAIGN: name})
        client.log_param(run.info.run_id, "preset", preset)
        for g in range(generations):
            client.log_metric(run.info.run_id, M.GENERATION, g, step=g)
            client.log_metric(run.info.run_id, M.TRAIN_LOSS, 3.0 - g, step=g)
            client.log_metric(run.info.run_id, M.WALL_S, 600.0 * (g + 1), step=g)
        client.set_terminated(run.info.run_id)
    return uri


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reports")
    make_store(root)
    return root


def test_draw_loads_the_named_campaign_not_the_newest(store: Path) -> None:
    import draw

    uri = f"sqlite:///{store / 'mlruns' / 'mlflow.db'}"
    c = draw.load_campaign(uri, "long-run")
    assert c.name == "long-run" and c.params["preset"] == "cpu"
    assert c.get(M.TRAIN_LOSS) == {0: 3.0, 1: 2.0, 2: 1.0}
    assert draw.load_campaign(uri, "smoke-later").params["preset"] == "smoke"
    with pytest.raises(SystemExit) as err:
        draw.load_campaign(uri, "cpu-main")
    message = str(err.value)
    assert "'cpu-main'" in message and "long-run, smoke-later" in message and "figures_campaign" in message


def test_dvc_yaml_names_the_campaign_and_runs_the_projects_python() -> None:
    spec = yaml.safe_load((REPO / "dvc.yaml").read_text())
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    assert params["reports"]["figures_campaign"] == "cpu-main"  # `make run`'s campaign: <preset>-main
    for stage in ("figures", "tables"):
        assert "--campaign ${reports.figures_campaign}" in spec["stages"][stage]["cmd"], stage
        assert "reports.figures_campaign" in spec["stages"][stage]["params"], stage  # a change redraws
    for name, stage in spec["stages"].items():
        for command in " ".join(str(stage["cmd"]).split()).split("&&"):
            assert command.strip().startswith("scripts/python "), f"{name}: {command.strip()}"
    assert os.access(REPO / "scripts" / "python", os.X_OK)


def run_wrapper(root: Path, env: dict[str, str]) -> str:
    out = subprocess.run([str(root / "scripts" / "python"), "-c", "import sys; print(sys.executable)"],
                         env=env, capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.strip()


def test_the_stage_python_prefers_the_checkouts_venv(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "python", tmp_path / "scripts" / "python")
    base = {"HOME": os.environ.get("HOME", str(tmp_path))}
    # no .venv in the checkout: python3 on PATH (an activated environment)
    assert run_wrapper(tmp_path, base | {"PATH": f"{VENV_BIN}:{SYSTEM_PATH}"}) == str(VENV_BIN / "python3")
    # a .venv in the checkout: used although PATH has only the system directories
    (tmp_path / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    assert run_wrapper(tmp_path, base | {"PATH": SYSTEM_PATH}) == str(tmp_path / ".venv" / "bin" / "python")
    # CHESSZERO_PYTHON wins over both
    chosen = base | {"PATH": SYSTEM_PATH, "CHESSZERO_PYTHON": str(VENV_BIN / "python3")}
    assert run_wrapper(tmp_path, chosen) == str(VENV_BIN / "python3")


@pytest.mark.timeout(300)
def test_dvc_repro_draws_the_named_campaign_without_an_activated_venv(store: Path) -> None:
    """`.venv/bin/dvc repro tables` (figures first) with PATH holding only the
    system directories draws `figures_campaign`, not the newer smoke run."""
    root = store
    for rel in ("scripts/python", "reports/draw.py", "reports/rating_plot.py",
                "src/chesszero/campaign/metrics.py", "src/chesszero/campaign/headline.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, root / rel)
    shutil.copy(REPO / "dvc.yaml", root / "dvc.yaml")
    text = (REPO / "params.yaml").read_text()
    assert "figures_campaign: cpu-main" in text
    (root / "params.yaml").write_text(text.replace("figures_campaign: cpu-main", "figures_campaign: long-run"))
    (root / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)  # the checkout's environment
    env = {"PATH": SYSTEM_PATH, "HOME": os.environ.get("HOME", str(root)), "DVC_NO_ANALYTICS": "1"}
    dvc = str(VENV_BIN / "dvc")
    subprocess.run([dvc, "init", "--no-scm", "-q"], cwd=root, env=env, check=True, timeout=120)
    out = subprocess.run([dvc, "repro", "tables"], cwd=root, env=env, capture_output=True, text=True, timeout=280)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "campaign `long-run`" in (root / "reports" / "index.md").read_text()
    volume = (root / "reports" / "tables" / "training_volume.md").read_text()
    assert "(long-run)" in volume and "| generations completed | 3 |" in volume and "smoke" not in volume
    assert (root / "reports" / "figures" / "losses.png").read_bytes().startswith(b"\x89PNG")
