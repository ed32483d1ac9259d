"""``publish.qat_when``: fine-tune every publication, or only when the calibrated artifact fails the gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from publish_support import calibration, random_games, torch_threads, trained_net

from chesszero import core
from chesszero.config import ConfigError, QatWhen, load_config
from chesszero.publish.artifact import read_activation
from chesszero.publish.fidelity import FidelityThresholds
from chesszero.publish.pipeline import PublishResult, PublishSettings, publish
from chesszero.publish.quantize import QatSettings
from chesszero.publish.runtime import OrtRuntime

QAT = QatSettings(steps=2, lr=1e-5, batch_size=32)
REPLAY = [core.encode_batch(random_games(32, seed=7))]


def _publish(folder: Path, when: QatWhen, thresholds: FidelityThresholds) -> tuple[PublishResult, int, Path]:
    """Publishes the fitted test network; returns the result, how often QAT asked for batches, the state file."""
    calls = []

    def batches():
        calls.append(1)
        return REPLAY

    settings = PublishSettings(qat=QAT, thresholds=thresholds, qat_when=when)
    state = folder / "active.json"
    with torch_threads(1):
        result = publish(trained_net(), folder / "gen", calibration(), settings=settings,
                         runtime=OrtRuntime(threads=1), state_path=state, batches=batches)
    return result, len(calls), state


def test_a_calibrated_artifact_that_passes_skips_fine_tuning(tmp_path: Path) -> None:
    result, calls, state = _publish(tmp_path, QatWhen.ON_GATE_FAILURE, FidelityThresholds())
    assert result.gate.passed and result.gate.activated
    assert result.qat_steps == 0 and calls == 0
    assert result.calibrated_gate is None and not (result.directory / "fidelity.calibrated.json").exists()
    assert read_activation(state).path.resolve() == result.int8.path.resolve()
    assert result.int8.metadata.fidelity["passed"] is True


def test_a_calibrated_artifact_that_fails_is_fine_tuned_and_gated_again(tmp_path: Path) -> None:
    # A KL limit of zero fails any INT8 artifact: the calibrated one, then the fine-tuned one.
    result, calls, state = _publish(tmp_path, QatWhen.ON_GATE_FAILURE, FidelityThresholds(max_kl=0.0))
    assert calls >= 1 and result.qat_steps == QAT.steps
    first = result.calibrated_gate
    assert first is not None and not first.passed and any("KL" in f for f in first.failures)
    stored = json.loads((result.directory / "fidelity.calibrated.json").read_text())
    assert stored["passed"] is False
    assert not result.gate.passed and not result.gate.activated and read_activation(state) is None
    assert json.loads((result.directory / "fidelity.json").read_text())["passed"] is False


def test_always_fine_tunes_even_when_calibration_would_pass(tmp_path: Path) -> None:
    result, calls, _ = _publish(tmp_path, QatWhen.ALWAYS, FidelityThresholds())
    assert result.gate.passed and result.qat_steps == QAT.steps and calls >= 1
    assert result.calibrated_gate is None


def test_qat_when_is_read_from_the_recipe_and_checked() -> None:
    assert load_config(preset="smoke").publish.qat_when is QatWhen.ALWAYS
    cfg = load_config(preset="smoke", overrides={"publish": {"qat_when": "on_gate_failure"}})
    assert PublishSettings.from_config(cfg.publish).qat_when is QatWhen.ON_GATE_FAILURE
    with pytest.raises(ConfigError, match="qat_when"):
        load_config(preset="smoke", overrides={"publish": {"qat_when": "sometimes"}})
