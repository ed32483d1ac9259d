"""CreditLedger: reuse-ratio gating of training quanta and its persistence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chesszero.replay import CreditLedger, InsufficientCreditError


def test_paper_quantum_needs_256k_rows() -> None:
    ledger = CreditLedger()  # reuse 4
    assert ledger.rows_needed(500, 2048) == 256_000
    ledger.admit(255_999)
    assert not ledger.can_start(500, 2048)
    assert ledger.rows_needed(500, 2048) == 1
    with pytest.raises(InsufficientCreditError, match="1 more admitted rows"):
        ledger.spend(500, 2048)
    ledger.admit(1)
    assert ledger.can_start(500, 2048)
    ledger.spend(500, 2048)
    # the next quantum waits for another 256,000 new rows
    assert not ledger.can_start(500, 2048)
    assert ledger.rows_needed(500, 2048) == 256_000


def test_surplus_carries_over_and_partial_quanta() -> None:
    ledger = CreditLedger(reuse_ratio=4)
    ledger.admit(300)  # funds 1,200 presentations
    ledger.spend(10, 64)  # 640
    assert ledger.available_presentations == 560
    assert ledger.can_start(8, 64) and not ledger.can_start(9, 64)
    assert ledger.rows_needed(9, 64) == 4  # 576 - 560 = 16 presentations = 4 rows


def test_fractional_reuse_ratio() -> None:
    ledger = CreditLedger(reuse_ratio=6.25)
    assert ledger.rows_needed(500, 2048) == 163_840
    ledger.admit(163_839)
    assert not ledger.can_start(500, 2048)
    ledger.admit(1)
    assert ledger.can_start(500, 2048)


def test_admit_through_is_idempotent() -> None:
    ledger = CreditLedger()
    assert ledger.admit_through(1000) == 1000
    assert ledger.admit_through(1000) == 0
    assert ledger.admit_through(1500) == 500
    assert ledger.admitted_rows == 1500
    with pytest.raises(ValueError, match="behind"):
        ledger.admit_through(10)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="reuse_ratio"):
        CreditLedger(reuse_ratio=0)
    with pytest.raises(ValueError, match="positive"):
        CreditLedger().can_start(0, 10)
    with pytest.raises(ValueError, match="non-negative"):
        CreditLedger().admit(-1)


def test_persistence_roundtrip(tmp_path: Path) -> None:
    ledger = CreditLedger(reuse_ratio=4)
    ledger.admit_through(5000)
    ledger.spend(10, 100)
    assert CreditLedger.from_dict(json.loads(json.dumps(ledger.to_dict()))) == ledger
    path = tmp_path / "credit.json"
    ledger.save(path)
    assert CreditLedger.load(path) == ledger
    assert [p.name for p in tmp_path.iterdir()] == ["credit.json"]


def test_corrupt_state_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "credit.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match=f"{path}: invalid credit ledger"):
        CreditLedger.load(path)
    path.write_text(json.dumps({"version": 1, "reuse_ratio": 4, "admitted_rows": -3,
                                "spent_presentations": 0, "store_total": 0}))
    with pytest.raises(ValueError, match=f"{path}.*admitted_rows"):
        CreditLedger.load(path)
    path.write_text(json.dumps({"version": 1, "reuse_ratio": 4}))
    with pytest.raises(ValueError, match="missing"):
        CreditLedger.load(path)
