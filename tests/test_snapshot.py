"""Replay snapshots: round trip, restore, corruption errors, and real DVC tracking."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from replay_support import assert_untorn, synthetic_rows

from chesszero.replay import ReplayStore, RowBatch
from chesszero.replay.layout import LAYOUT_VERSION, ROW_DTYPE
from chesszero.replay.snapshot import (
    ROWS_FILE,
    DvcError,
    SnapshotError,
    dvc_track,
    read_snapshot,
    read_snapshot_info,
    restore_store,
    write_snapshot,
)


def wrapped_store(path: Path) -> ReplayStore:
    """A store that wrapped, then grew while wrapped (three ring segments)."""
    store = ReplayStore.create(path, capacity=128, logical_capacity=40)
    store.append(synthetic_rows(np.arange(30)))
    store.append(synthetic_rows(np.arange(30, 55)))   # wraps: head mid-ring
    store.set_logical_capacity(60)
    store.append(synthetic_rows(np.arange(55, 100)))  # fills the fresh slots, evicts
    assert len(store.header.segments) > 1
    return store


def test_a_version_1_snapshot_reads_and_restores_with_endings_not_computed(tmp_path: Path) -> None:
    """A snapshot written before layout 2 (rows.npy in version 1's dtype, meta
    version 1) reads as version-2 rows whose ``endings`` byte is 0."""
    import hashlib

    from chesszero.replay.layout import _V1_DTYPE, READABLE_LAYOUTS

    with wrapped_store(tmp_path / "r.bin") as store:
        info = write_snapshot(store, tmp_path / "snaps" / "old")
    rows_path = info.path / ROWS_FILE
    np.save(rows_path, np.load(rows_path).view(_V1_DTYPE), allow_pickle=False)
    data = rows_path.read_bytes()
    meta = json.loads((info.path / "meta.json").read_text())
    meta.update(layout_version=1, layout_hash=READABLE_LAYOUTS[1], rows_bytes=len(data),
                sha256=hashlib.sha256(data).hexdigest())
    (info.path / "meta.json").write_text(json.dumps(meta))
    assert np.load(rows_path).dtype == _V1_DTYPE
    rows = read_snapshot(info.path)
    assert rows.dtype == ROW_DTYPE and (rows["endings"] == 0).all()
    assert rows["seq"].tolist() == list(range(40, 100))
    with restore_store(info.path, tmp_path / "restored.bin") as restored:
        assert restored.read_valid().seq.tolist() == list(range(40, 100))


def test_round_trip_and_restore(tmp_path: Path) -> None:
    with wrapped_store(tmp_path / "r.bin") as store:
        info = write_snapshot(store, tmp_path / "snaps" / "camp" / "gen_0003")
        valid = store.read_valid()
        header = store.header
    assert sorted(p.name for p in info.path.iterdir()) == ["meta.json", "rows.npy"]
    assert (info.rows, info.first_seq, info.total_appended) == (60, 40, 100)
    assert info.header == header
    meta = json.loads((info.path / "meta.json").read_text())
    assert meta["rows"] == 60 and meta["last_seq"] == 99 and meta["layout_version"] == LAYOUT_VERSION
    assert read_snapshot_info(info.path).sha256 == info.sha256

    rows = read_snapshot(info.path)
    assert rows["seq"].tolist() == list(range(40, 100))  # oldest first, seq kept
    batch = RowBatch.from_rows(rows, np.arange(len(rows)))
    assert_untorn(batch.__dict__)
    np.testing.assert_array_equal(batch.planes, valid.planes)
    assert np.load(info.path / ROWS_FILE, allow_pickle=False).dtype == rows.dtype  # plain .npy

    with restore_store(info.path, tmp_path / "restored.bin") as restored:
        assert (restored.size, restored.total_appended, restored.logical_capacity,
                restored.capacity) == (60, 100, 60, 128)
        again = restored.read_valid()
        assert again.seq.tolist() == valid.seq.tolist()
        np.testing.assert_array_equal(again.policy_probs, valid.policy_probs)
        np.testing.assert_array_equal(restored.priorities(again.slots), valid.surprise)
        restored.append(synthetic_rows(np.arange(100, 110)))  # continues the seq stamps
        assert restored.read_valid().seq.tolist() == list(range(50, 110))
        # the same store state gives a byte-identical snapshot
    with ReplayStore.open(tmp_path / "r.bin", readonly=True) as reader:
        twin = write_snapshot(reader, tmp_path / "twin")
    for name in ("rows.npy", "meta.json"):
        assert (twin.path / name).read_bytes() == (info.path / name).read_bytes()
    with pytest.raises(FileExistsError, match="restored.bin"):
        restore_store(info.path, tmp_path / "restored.bin")
    with pytest.raises(FileExistsError, match="gen_0003"):
        write_snapshot(ReplayStore.open(tmp_path / "r.bin", readonly=True), info.path)
    leftovers = [p for p in tmp_path.rglob("*") if p.name.startswith(".")]
    assert leftovers == []


def test_empty_store(tmp_path: Path) -> None:
    with ReplayStore.create(tmp_path / "r.bin", capacity=8) as store:
        info = write_snapshot(store, tmp_path / "s")
    assert info.rows == 0 and len(read_snapshot(info.path)) == 0
    with restore_store(info.path, tmp_path / "x.bin") as restored:
        assert restored.size == 0 and restored.total_appended == 0


def test_a_killed_writers_temp_folder_is_removed(tmp_path: Path) -> None:
    """A writer killed mid-copy leaves `.gen_0001.<pid>.tmp`; the next write of
    that snapshot removes it (else one replay-sized copy per kill, forever)."""
    (tmp_path / ".gen_0001.4242.tmp").mkdir()
    (tmp_path / ".gen_0001.4242.tmp" / ROWS_FILE).write_bytes(b"partial")
    (tmp_path / ".gen_0002.4242.tmp").mkdir()  # another snapshot's: not ours to remove
    with ReplayStore.create(tmp_path / "r.bin", capacity=8) as store:
        store.append(synthetic_rows(np.arange(5)))
        write_snapshot(store, tmp_path / "gen_0001")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".gen_0002.4242.tmp", "gen_0001", "r.bin"]
    assert len(read_snapshot(tmp_path / "gen_0001")) == 5


def test_corrupt_snapshots_name_the_file(tmp_path: Path) -> None:
    with wrapped_store(tmp_path / "r.bin") as store:
        good = write_snapshot(store, tmp_path / "good").path

    def copy(name: str) -> Path:
        out = tmp_path / name
        shutil.copytree(good, out)
        return out

    flipped = copy("flipped")
    raw = bytearray((flipped / "rows.npy").read_bytes())
    raw[-100] ^= 0xFF
    (flipped / "rows.npy").write_bytes(bytes(raw))
    with pytest.raises(SnapshotError, match=rf"{flipped / 'rows.npy'}: checksum mismatch"):
        read_snapshot(flipped)
    with pytest.raises(SnapshotError, match="checksum mismatch"):
        restore_store(flipped, tmp_path / "never.bin")
    assert not (tmp_path / "never.bin").exists()

    short = copy("short")
    (short / "rows.npy").write_bytes((good / "rows.npy").read_bytes()[:-1344])
    with pytest.raises(SnapshotError, match=rf"{short / 'rows.npy'}: checksum mismatch"):
        read_snapshot(short)

    for name, change, why in (("version", {"snapshot_version": 99}, "format version 99"),
                              ("layout", {"layout_version": 3}, "layout version 3"),
                              ("v1hash", {"layout_version": 1}, "layout version 1 .*hash"),
                              ("format", {"format": "other"}, "not a chesszero replay snapshot"),
                              ("count", {"rows": 59}, "disagree")):
        bad = copy(name)
        meta = json.loads((bad / "meta.json").read_text())
        (bad / "meta.json").write_text(json.dumps({**meta, **change}))
        with pytest.raises(SnapshotError, match=rf"{bad / 'meta.json'}: .*{why}"):
            read_snapshot(bad)

    garbled = copy("garbled")
    (garbled / "meta.json").write_text("{not json")
    with pytest.raises(SnapshotError, match=rf"{garbled / 'meta.json'}: unreadable"):
        read_snapshot(garbled)
    with pytest.raises(SnapshotError, match="missing"):
        read_snapshot(tmp_path / "nowhere")


def _git_dvc_repo(root: Path) -> None:
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([sys.executable, "-m", "dvc", "init", "-q"], cwd=root, check=True)


def _dvc(repo: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "dvc", *args], cwd=repo, check=True, capture_output=True)


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.mark.timeout(240)  # several dvc commands; slow on a loaded machine
@needs_git
def test_dvc_track_push_and_pull_restore_byte_identical(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _git_dvc_repo(repo)
    remote = tmp_path / "dvc-remote"
    remote.mkdir()
    _dvc(repo, "remote", "add", "-d", "store", str(remote))
    with wrapped_store(tmp_path / "r.bin") as store:
        snap = write_snapshot(store, repo / "data/replay/snapshots/camp/gen_0003")

    result = dvc_track("data/replay/snapshots/camp/gen_0003", repo)  # relative to the repo
    assert result.pushed and result.remote == "store"
    assert result.dvc_file == repo / "data/replay/snapshots/camp/gen_0003.dvc"
    assert "gen_0003" in (result.dvc_file.parent / ".gitignore").read_text()
    assert any(remote.rglob("*"))
    original = {name: (snap.path / name).read_bytes() for name in ("rows.npy", "meta.json")}

    # lose the snapshot and the local cache, then fetch it back from the remote
    shutil.rmtree(snap.path)
    shutil.rmtree(repo / ".dvc" / "cache")
    _dvc(repo, "pull", "-q", str(result.dvc_file.relative_to(repo)))
    assert {name: (snap.path / name).read_bytes() for name in original} == original
    assert read_snapshot(snap.path)["seq"].tolist() == list(range(40, 100))


@pytest.mark.timeout(240)  # several dvc commands; slow on a loaded machine
@needs_git
def test_dvc_track_without_remote_and_errors(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _git_dvc_repo(repo)
    with wrapped_store(tmp_path / "r.bin") as store:
        first = write_snapshot(store, repo / "snaps/gen_0001")
        second = write_snapshot(store, repo / "snaps/gen_0002")

    local = dvc_track(first.path, repo)  # no default remote: tracked, not pushed
    assert not local.pushed and local.remote is None and local.dvc_file.is_file()

    with pytest.raises(ValueError, match="outside the DVC project"):
        dvc_track(tmp_path / "r.bin", repo)
    with pytest.raises(FileNotFoundError, match="not a DVC project"):
        dvc_track(tmp_path / "r.bin", tmp_path)
    with pytest.raises(FileNotFoundError, match="nothing to track"):
        dvc_track(repo / "missing", repo)
    # a default remote that cannot take the push: the error names command and folder
    (tmp_path / "not-a-folder").write_text("a file where the remote folder should be")
    _dvc(repo, "remote", "add", "-d", "broken", str(tmp_path / "not-a-folder"))
    with pytest.raises(DvcError, match=r"`dvc push .*gen_0002.dvc` in .*repo failed"):
        dvc_track(second.path, repo)
