"""ReplayStore: layout, ring eviction, growth, durability, header errors, readers."""

from __future__ import annotations

import os
import zlib
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from replay_support import assert_untorn, synthetic_rows

from chesszero.replay import (
    ROW_DTYPE,
    ReplayFormatError,
    ReplayLockedError,
    ReplayStore,
    StaleRowsError,
)
from chesszero.replay.header import _CHECKED_BYTES, HEADER_DTYPE, SLOT_BYTES, StoreHeader
from chesszero.replay.layout import (
    ENDING_MATE,
    ENDINGS_KNOWN,
    LAYOUT_VERSION,
    READABLE_LAYOUTS,
    ROW_SIZE,
)


def fill(store: ReplayStore, n: int) -> int:
    start = store.total_appended
    return store.append(synthetic_rows(np.arange(start, start + n)))


def valid_ids(store: ReplayStore) -> list[int]:
    return store.read_valid().seq.tolist()


def test_row_layout_is_fixed() -> None:
    assert ROW_SIZE == ROW_DTYPE.itemsize == 1344
    assert ROW_DTYPE["planes"].shape == (332,)
    assert ROW_DTYPE["legal"].shape == (235,)
    assert ROW_DTYPE["policy_ids"].shape == (60,)
    # 8-byte fields stay aligned in every row
    assert ROW_DTYPE.fields["seq"][1] == 0 and ROW_DTYPE.fields["timestamp"][1] == 8


def test_roundtrip_and_seq_stamps(tmp_path: Path) -> None:
    with ReplayStore.create(tmp_path / "r.bin", capacity=64, logical_capacity=32) as store:
        assert store.append(synthetic_rows(np.arange(10))) == 10
        batch = store.read(np.array([3, 0, 9]))
        assert batch.seq.tolist() == [3, 0, 9]
        assert_untorn(batch.__dict__)
        assert batch.next_mask.dtype == bool and batch.planes.flags.c_contiguous
        np.testing.assert_allclose(batch.policy_probs.sum(axis=1), 1.0)
        assert store.priorities(np.array([3]))[0] == pytest.approx(0.3)


def test_wraparound_evicts_oldest(tmp_path: Path) -> None:
    with ReplayStore.create(tmp_path / "r.bin", capacity=16, logical_capacity=10) as store:
        fill(store, 7)
        fill(store, 7)
        assert store.size == 10 and store.total_appended == 14
        assert valid_ids(store) == list(range(4, 14))
        fill(store, 25)  # larger than the ring: only the last 10 survive
        assert valid_ids(store) == list(range(29, 39))
        with pytest.raises(StaleRowsError):
            store.read(np.array([12]))  # beyond the logical capacity: never valid


def test_growth_keeps_rows_and_fifo_order(tmp_path: Path) -> None:
    with ReplayStore.create(tmp_path / "r.bin", capacity=40, logical_capacity=10) as store:
        fill(store, 13)  # wrapped: head in the middle of the ring
        store.set_logical_capacity(18)
        assert valid_ids(store) == list(range(3, 13))  # growth evicts nothing
        fill(store, 8)  # fills the fresh slots, still no eviction
        assert valid_ids(store) == list(range(3, 21))
        fill(store, 2)
        assert valid_ids(store) == list(range(5, 23))  # then the oldest go first
        with pytest.raises(ValueError, match="only grow"):
            store.set_logical_capacity(12)
        with pytest.raises(ValueError, match="exceeds"):
            store.set_logical_capacity(41)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.tuples(st.just("append"), st.integers(1, 30)),
                          st.tuples(st.just("grow"), st.integers(0, 12))), max_size=25))
def test_ring_matches_fifo_model(tmp_path_factory: pytest.TempPathFactory,
                                 ops: list[tuple[str, int]]) -> None:
    path = tmp_path_factory.mktemp("ring") / "r.bin"
    capacity, logical = 64, 8
    model: deque[int] = deque()
    with ReplayStore.create(path, capacity=capacity, logical_capacity=logical) as store:
        for op, n in ops:
            if op == "append":
                start = store.total_appended
                store.append(synthetic_rows(np.arange(start, start + n)))
                model.extend(range(start, start + n))
                while len(model) > logical:
                    model.popleft()
            else:
                logical = min(capacity, logical + n)
                store.set_logical_capacity(logical)
            assert valid_ids(store) == list(model)
            slots = store.header.valid_slots()
            assert len(set(slots.tolist())) == len(slots) and (slots < logical).all()
        reader = ReplayStore.open(path, readonly=True)
        assert valid_ids(reader) == list(model)
        reader.close()


def test_one_append_is_one_commit_whatever_its_size(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows are written in pieces, but each call commits once (plus one eviction
    header when it overwrites valid rows), so it is all-or-nothing."""
    import chesszero.replay.store as store_module

    monkeypatch.setattr(store_module, "WRITE_CHUNK_ROWS", 3)
    model: deque[int] = deque()
    with ReplayStore.create(tmp_path / "r.bin", capacity=32, logical_capacity=20) as store:
        commits: list[StoreHeader] = []
        real = store._commit
        store._commit = lambda h: (commits.append(h), real(h))[0]  # type: ignore[method-assign]
        for n in (7, 11, 5, 19, 20, 27, 1):
            commits.clear()
            start = store.total_appended
            evicting = store.size + min(n, 20) > 20
            assert store.append(synthetic_rows(np.arange(start, start + n))) == start + n
            model.extend(range(start, start + n))
            while len(model) > 20:
                model.popleft()
            assert len(commits) == 1 + evicting
            if evicting:  # the eviction header drops old rows and admits nothing
                assert commits[0].total_appended == start
            assert valid_ids(store) == list(model)
            assert_untorn(store.read_valid().__dict__)


def test_create_with_a_starting_total(tmp_path: Path) -> None:
    with ReplayStore.create(tmp_path / "r.bin", capacity=16, logical_capacity=8,
                            total_appended=1000) as store:
        assert store.size == 0 and store.total_appended == 1000
        fill(store, 5)
        assert valid_ids(store) == [1000, 1001, 1002, 1003, 1004]
    with pytest.raises(ValueError, match="total_appended"):
        ReplayStore.create(tmp_path / "x.bin", capacity=8, total_appended=-1)


def test_readers_see_rows_only_after_refresh(tmp_path: Path) -> None:
    path = tmp_path / "r.bin"
    with ReplayStore.create(path, capacity=32) as writer:
        fill(writer, 5)
        with ReplayStore.open(path, readonly=True) as reader:
            assert reader.size == 5
            fill(writer, 3)
            assert reader.size == 5 and reader.read_valid().seq.size == 5
            assert reader.refresh() and reader.size == 8
            assert not reader.refresh()
            with pytest.raises(PermissionError):
                reader.append(synthetic_rows(np.arange(1)))
            with pytest.raises(ReplayLockedError, match=str(path)):
                ReplayStore.open(path)


def test_invalid_rows_rejected_without_writing(tmp_path: Path) -> None:
    path = tmp_path / "r.bin"
    with ReplayStore.create(path, capacity=16) as store:
        fill(store, 4)
        before = path.read_bytes()
        bad = synthetic_rows(np.arange(4, 8))
        bad["wdl"][2] = [0.9, 0.9, 0.9]
        with pytest.raises(ValueError, match="wdl not a probability vector.*first bad row 2"):
            store.append(bad)
        bad = synthetic_rows(np.arange(4, 8))
        bad["surprise"][0] = np.nan
        with pytest.raises(ValueError, match="non-finite surprise"):
            store.append(bad)
        for endings, why in ((0x04 | ENDINGS_KNOWN, "endings has unknown bits"),
                             (ENDING_MATE, "endings bits set without the known bit")):
            bad = synthetic_rows(np.arange(4, 8))
            bad["endings"][1] = endings
            with pytest.raises(ValueError, match=f"{why}.*first bad row 1"):
                store.append(bad)
        with pytest.raises(TypeError, match="ROW_DTYPE"):
            store.append(np.zeros(3, dtype=np.float32))
        assert store.total_appended == 4
        assert path.read_bytes() == before


def test_create_refuses_existing_and_bad_sizes(tmp_path: Path) -> None:
    path = tmp_path / "r.bin"
    ReplayStore.create(path, capacity=8).close()
    with pytest.raises(FileExistsError, match=str(path)):
        ReplayStore.create(path, capacity=8)
    with pytest.raises(ValueError, match="logical_capacity"):
        ReplayStore.create(tmp_path / "x.bin", capacity=8, logical_capacity=9)
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())


def _corrupt(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(data)


def test_header_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "r.bin"
    with ReplayStore.create(path, capacity=8) as store:
        fill(store, 3)  # two commits: both header slots hold valid headers
    _corrupt(path, 0, b"NOTMAGIC")
    _corrupt(path, SLOT_BYTES, b"NOTMAGIC")
    with pytest.raises(ReplayFormatError, match=f"{path}.*bad magic"):
        ReplayStore.open(path, readonly=True)

    path2 = tmp_path / "v.bin"
    with ReplayStore.create(path2, capacity=8) as store:
        fill(store, 3)
    for slot in range(2):  # flip a byte of each header slot: checksums no longer match
        _corrupt(path2, slot * SLOT_BYTES + 48, b"\x7f")
    with pytest.raises(ReplayFormatError, match=f"{path2}.*checksum mismatch"):
        ReplayStore.open(path2)

    path3 = tmp_path / "w.bin"
    path3.write_bytes(b"\0" * 100)
    with pytest.raises(ReplayFormatError, match=f"{path3}.*too short"):
        ReplayStore.open(path3)


def test_version_mismatch_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "r.bin"
    ReplayStore.create(path, capacity=8).close()
    header = StoreHeader(capacity=8, logical_capacity=8, head=0, size=0, total_appended=0,
                         sequence=5)
    raw = bytearray(header.encode())
    raw[8:12] = (LAYOUT_VERSION + 1).to_bytes(4, "little")  # a future layout, valid checksum
    raw[_CHECKED_BYTES:_CHECKED_BYTES + 4] = (zlib.crc32(bytes(raw[:_CHECKED_BYTES]))
                                              & 0xFFFFFFFF).to_bytes(4, "little")
    _corrupt(path, 0, bytes(raw))
    _corrupt(path, SLOT_BYTES, bytes(raw))
    with pytest.raises(ReplayFormatError, match=f"{path}.*layout version {LAYOUT_VERSION + 1}"):
        ReplayStore.open(path)


def _stamp_layout(path: Path, header: StoreHeader, version: int, layout_hash: int) -> None:
    """Rewrite both header slots as a store of another layout (valid checksums)."""
    raw = bytearray(header.encode())
    raw[8:12] = version.to_bytes(4, "little")
    raw[16:20] = layout_hash.to_bytes(4, "little")
    raw[_CHECKED_BYTES:_CHECKED_BYTES + 4] = (zlib.crc32(bytes(raw[:_CHECKED_BYTES]))
                                              & 0xFFFFFFFF).to_bytes(4, "little")
    _corrupt(path, 0, bytes(raw))
    _corrupt(path, SLOT_BYTES, bytes(raw))


def test_a_version_1_store_is_read_and_appended_to(tmp_path: Path) -> None:
    """Layout 2 put ``endings`` in a byte version 1 always wrote as zero padding:
    a version-1 store opens, its rows read as "endings not computed", and the
    next append stamps it version 2. A version-1 header with another layout's
    fingerprint is still refused."""
    path = tmp_path / "r.bin"
    with ReplayStore.create(path, capacity=8) as store:
        fill(store, 3)
        header = store.header
    assert READABLE_LAYOUTS[1] == 3681934974  # the fingerprint version-1 code wrote
    _stamp_layout(path, header, 1, READABLE_LAYOUTS[1])
    with ReplayStore.open(path) as store:
        assert valid_ids(store) == [0, 1, 2]
        assert store.read_valid().endings.tolist() == [0, 0, 0]
        rows = synthetic_rows(np.arange(3, 5))
        rows["endings"] = ENDINGS_KNOWN | ENDING_MATE
        store.append(rows)
    with ReplayStore.open(path, readonly=True) as store:
        assert store.read_valid().endings.tolist() == [0, 0, 0, 0x81, 0x81]
    raw = path.read_bytes()
    slots = [np.frombuffer(raw[i * SLOT_BYTES:i * SLOT_BYTES + HEADER_DTYPE.itemsize], HEADER_DTYPE)[0]
             for i in range(2)]
    newest = max(slots, key=lambda rec: int(rec["sequence"]))
    assert (int(newest["version"]), int(newest["layout_hash"])) == (2, READABLE_LAYOUTS[2])

    _stamp_layout(path, header, 1, READABLE_LAYOUTS[2])
    with pytest.raises(ReplayFormatError, match=f"{path}.*layout hash .* for version 1"):
        ReplayStore.open(path)


def test_torn_newest_header_falls_back(tmp_path: Path) -> None:
    path = tmp_path / "r.bin"
    with ReplayStore.create(path, capacity=8) as store:
        fill(store, 2)
        fill(store, 3)
        slot = store._slot  # the slot holding the newest header
    _corrupt(path, slot * SLOT_BYTES + 40, b"\xff\xff")  # tear it
    with ReplayStore.open(path, readonly=True) as reader:
        assert reader.total_appended == 2  # previous commit
        assert valid_ids(reader) == [0, 1]


def test_truncated_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "r.bin"
    ReplayStore.create(path, capacity=8).close()
    os.truncate(path, os.path.getsize(path) - ROW_SIZE)
    with pytest.raises(ReplayFormatError, match=f"{path}.*needs"):
        ReplayStore.open(path)
