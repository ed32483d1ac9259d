"""An honest fidelity gate (issue 15): activation ranges and QAT are fitted on
positions the gate never scores, and the artifact records which ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from publish_support import calibration, one_thread, random_games, torch_threads, trained_net  # noqa: F401

from chesszero import core
from chesszero.publish.artifact import load_artifact
from chesszero.publish.calibration import random_play_set, tuning_set_from_replay
from chesszero.publish.pipeline import PublishSettings, publish
from chesszero.publish.quantize import QatSettings
from chesszero.replay import ReplayStore
from chesszero.replay.layout import empty_rows, pack_legal


def replay_of(games: list[core.Game], path: Path) -> Path:
    """A replay store whose rows are the positions of `games` (planes and legal moves real)."""
    rows = empty_rows(len(games))
    rows["planes"] = core.encode_packed_batch(games)
    for i, game in enumerate(games):
        rows["legal"][i] = pack_legal(np.flatnonzero(game.legal_mask()))
        rows["policy_ids"][i, 0] = int(np.flatnonzero(game.legal_mask())[0])
    rows["policy_probs"][:, 0] = 1.0
    rows["wdl"] = np.array([0.4, 0.3, 0.3], dtype=np.float32)
    store = ReplayStore.create(path, capacity=256)
    store.append(rows)
    store.close()
    return path


def test_tuning_rows_come_from_the_replay_store_seeded(tmp_path: Path) -> None:
    games = random_games(40, seed=3)
    store = replay_of(games, tmp_path / "replay.bin")
    tune = tuning_set_from_replay(store, limit=16, seed=5)
    assert len(tune) == 16 and tune.source.startswith("replay replay.bin: 16 rows, seq ")
    assert tune.sha256 == tuning_set_from_replay(store, limit=16, seed=5).sha256
    assert tune.sha256 != tuning_set_from_replay(store, limit=16, seed=6).sha256
    every = core.encode_batch(games)  # each drawn row is one of the stored positions, decoded exactly
    for planes, legal in zip(tune.planes, tune.legal, strict=True):
        match = [i for i in range(len(games)) if np.array_equal(every[i], planes)]
        assert match and np.array_equal(games[match[0]].legal_mask().astype(bool), legal)
    assert len(tuning_set_from_replay(store, limit=500, seed=0)) == 40  # at most every row
    empty = ReplayStore.create(tmp_path / "empty.bin", capacity=8)
    empty.close()
    with pytest.raises(ValueError, match="empty.bin: the replay store has no rows"):
        tuning_set_from_replay(tmp_path / "empty.bin", limit=4, seed=0)
    with pytest.raises(ValueError, match="replay store not found: .*missing.bin"):
        tuning_set_from_replay(tmp_path / "missing.bin", limit=4, seed=0)


def test_random_play_set_is_seeded_and_unfinished() -> None:
    a, b = random_play_set(24, seed=1), random_play_set(24, seed=1)
    assert a.sha256 == b.sha256 and a.sha256 != random_play_set(24, seed=2).sha256
    assert a.legal.any(axis=1).all() and a.source == "random play: 24 positions, seed 1"


def test_the_artifact_names_what_tuned_it_and_it_is_not_the_gate_set(tmp_path: Path) -> None:
    calib = calibration()
    tune = random_play_set(64, seed=9)
    settings = PublishSettings(qat=QatSettings(steps=2, lr=1e-5, batch_size=32))
    with torch_threads(1):
        held_out = publish(trained_net(), tmp_path / "held-out", calib, settings=settings, tune=tune)
        own = publish(trained_net(), tmp_path / "own", calib, settings=settings)
    meta = load_artifact(held_out.int8.path).metadata
    assert meta.tuning_sha256 == tune.sha256 != meta.calibration_sha256 == calib.sha256
    assert meta.tuning_source == "random play: 64 positions, seed 9"
    assert held_out.gate.report is not None  # the gate ran on its own positions
    fallback = load_artifact(own.int8.path).metadata
    assert fallback.tuning_sha256 == calib.sha256 and "not held out" in fallback.tuning_source
