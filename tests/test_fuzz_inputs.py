"""Property tests for entry points that take outside data (issue 15): every
malformed input gets a ValueError (the command line's exit status 2) whose
message names the input, never another exception or a crash; valid data is
never changed by a failed read. FEN and move strings are fuzzed in
test_core_errors.py."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replay_support import synthetic_rows

from chesszero.config import ConfigError, load_config
from chesszero.replay import ReplayStore, convert_shard
from chesszero.replay.header import HEADER_BYTES

REPO = Path(__file__).resolve().parents[1]
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def store_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("fuzz") / "replay.bin"
    with ReplayStore.create(path, capacity=64) as store:
        store.append(synthetic_rows(np.arange(20)))
    return path.read_bytes()


@FUZZ
@given(cut=st.integers(0, HEADER_BYTES - 1), flips=st.lists(st.tuples(st.integers(0, HEADER_BYTES - 1),
                                                                          st.integers(1, 255)), max_size=6))
def test_damaged_replay_stores_are_refused_by_name(store_bytes: bytes, tmp_path: Path, cut: int,
                                                   flips: list[tuple[int, int]]) -> None:
    path = tmp_path / "damaged.bin"
    path.write_bytes(store_bytes[:cut])
    with pytest.raises(ValueError, match="damaged.bin"):
        ReplayStore.open(path, readonly=True)
    raw = bytearray(store_bytes)
    for at, xor in flips:
        raw[at] ^= xor
    path.write_bytes(bytes(raw))
    try:
        with ReplayStore.open(path, readonly=True) as store:
            store.read_valid()  # a flip the checksums tolerate (the other header copy) must read back
    except ValueError as error:
        assert "damaged.bin" in str(error)
    assert path.read_bytes() == bytes(raw)  # a failed read writes nothing


@FUZZ
@given(body=st.binary(max_size=400), framed=st.booleans())
def test_garbage_shards_are_refused_by_name(tmp_path: Path, body: bytes, framed: bool) -> None:
    path = tmp_path / "junk.parquet"
    path.write_bytes(b"PAR1" + body + b"PAR1" if framed else body)
    with pytest.raises(ValueError, match="junk.parquet"):
        convert_shard(path)


@FUZZ
@given(body=st.binary(max_size=300))
def test_garbage_model_files_are_refused_by_name(tmp_path: Path, body: bytes) -> None:
    from chesszero.publish.loading import load_evaluator
    from chesszero.uci.model import check_onnx_signature

    path = tmp_path / "junk.onnx"
    path.write_bytes(body)
    with pytest.raises(ValueError, match="junk.onnx"):
        check_onnx_signature(path)
    with pytest.raises(ValueError, match="junk.onnx"):
        load_evaluator(path)


KEYS = ["train.lr_peak", "train.global_batch", "search.visit_cap", "search.c_puct", "selfplay.ply_cap",
        "evaluate.rungs", "model.size", "replay.capacity", "campaign.dask_address", "publish.qat_steps",
        "train.bogus", "nonsense", "search.draw_score"]
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True),
                   st.text(max_size=12), st.lists(st.integers(-5, 500), max_size=3),
                   st.lists(st.lists(st.integers(-5, 500), max_size=3), max_size=3))


@FUZZ
@given(key=st.sampled_from(KEYS), value=VALUES)
def test_recipe_overrides_are_accepted_or_refused_naming_the_key(key: str, value: object) -> None:
    try:
        load_config(REPO / "params.yaml", preset="smoke", overrides={key: value})
    except ConfigError as error:
        assert key.split(".")[0] in str(error), str(error)


UCI_WORDS = ["uci", "isready", "position", "startpos", "fen", "moves", "go", "nodes", "movetime", "wtime",
             "btime", "winc", "infinite", "stop", "ucinewgame", "setoption", "name", "value", "Visits", "Threads",
             "e2e4", "e7e5", "e9e4", "0000", "-1", "99999999999", "debug", "on", "ponderhit", "register"]


@FUZZ
@given(lines=st.lists(st.one_of(st.lists(st.sampled_from(UCI_WORDS), max_size=8).map(" ".join),
                                st.text(max_size=30)), max_size=12))
def test_uci_lines_never_break_the_engine(lines: list[str]) -> None:
    from chesszero.search.evaluators import UniformEvaluator
    from chesszero.uci.engine import EngineSettings, UciEngine
    from chesszero.uci.model import source_from_evaluator

    out = io.StringIO()
    engine = UciEngine(source_from_evaluator(UniformEvaluator()), out, settings=EngineSettings(visits=8))
    for line in lines:
        if line.strip().split()[:1] == ["quit"]:
            continue
        assert engine.handle(line.replace("\n", " ").replace("\r", " ")) is True
    engine.handle("stop")
    engine.handle("isready")
    assert out.getvalue().splitlines()[-1] == "readyok"
    assert not any(line.startswith("info string error internal") for line in out.getvalue().splitlines())


def test_the_fuzzed_store_fixture_is_valid(store_bytes: bytes, tmp_path: Path) -> None:
    path = tmp_path / "ok.bin"
    path.write_bytes(store_bytes)
    with ReplayStore.open(path, readonly=True) as store:
        assert len(store.read_valid()) == 20
    assert os.path.getsize(path) == len(store_bytes)
