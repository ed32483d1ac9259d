"""The campaign's MLflow tracker across kills (real sqlite store): a phase rerun
logs no metric twice at a step, an artifact is registered once, and a
campaign whose run id was never saved finds its run again by its uid."""

from __future__ import annotations

from pathlib import Path

import pytest

from chesszero.campaign import metrics as M


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tracking")


def test_a_rerun_logs_no_metric_twice_at_a_step_but_the_clocks(root: Path) -> None:
    from chesszero.campaign.tracking import Tracker

    t = Tracker(root, "camp")
    t.log_metrics({M.TRAIN_LOSS: 1.0, M.WALL_S: 10.0}, step=0)
    t.log_metrics({M.TRAIN_LOSS: 1.5, M.WALL_S: 12.0}, step=0)  # the same phase again after a kill
    t.log_metrics({M.TRAIN_LOSS: 0.5, M.WALL_S: 20.0}, step=1)
    loss = [(m.step, m.value) for m in t.client.get_metric_history(t.run_id, M.TRAIN_LOSS)]
    assert sorted(loss) == [(0, 1.0), (1, 0.5)]
    wall = sorted((m.step, m.value) for m in t.client.get_metric_history(t.run_id, M.WALL_S))
    assert wall == [(0, 10.0), (0, 12.0), (1, 20.0)]  # the clocks: every phase's end


def test_a_campaign_finds_its_run_by_uid(root: Path) -> None:
    from chesszero.campaign.tracking import Tracker

    first = Tracker(root, "uid-camp", uid="abc123")
    again = Tracker(root, "uid-camp", uid="abc123")  # killed before the run id was saved
    other = Tracker(root, "uid-camp", uid="def456")  # same name, another campaign directory
    assert again.run_id == first.run_id != other.run_id


def test_an_artifact_is_registered_once(root: Path) -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from chesszero.campaign.tracking import Tracker

    graph = helper.make_graph([helper.make_node("Add", ["x", "c"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
                              [numpy_helper.from_array(np.ones(1, np.float32), "c")])
    path = root / "tiny.onnx"
    onnx.save(helper.make_model(graph), str(path))
    t = Tracker(root, "reg")
    v1 = t.register_active(path, "gen0000")
    assert t.register_active(path, "gen0000") == v1  # rerun after a kill before the state save
    v2 = t.register_active(path, "gen0001")
    versions = t.client.search_model_versions(f"name = '{t.model_name}'")
    assert sorted(v.tags["artifact"] for v in versions) == ["gen0000", "gen0001"]
    assert str(t.client.get_model_version_by_alias(t.model_name, "active").version) == v2


def test_a_new_store_appears_fully_migrated_and_an_existing_one_is_kept(tmp_path: Path) -> None:
    """The store is migrated under a temporary name and linked into place, so a
    kill during MLflow's migrations never leaves a half-built mlflow.db."""
    from chesszero.campaign.tracking import Tracker, ensure_store

    db = ensure_store(tmp_path)
    assert db.is_file() and not list(db.parent.glob("mlflow.db.init-*"))
    tracker = Tracker(tmp_path, "kept")
    assert ensure_store(tmp_path) == db  # an existing store is never replaced
    assert Tracker(tmp_path, "kept", run_id=tracker.run_id).run_id == tracker.run_id
