"""Publishing the remaining-length head for the search's moves-left utility:
fold, export (a third ONNX output in plies), runtimes, QAT and the gate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from publish_support import calibration, one_thread, random_games, torch_threads, trained_net  # noqa: F401

from chesszero import _core, core
from chesszero.model import ChessNet
from chesszero.publish.artifact import ArtifactError, Precision, load_artifact
from chesszero.publish.export import load_deploy_state
from chesszero.publish.fidelity import FidelityThresholds, measure_fidelity
from chesszero.publish.fold import fold_network
from chesszero.publish.pipeline import PublishResult, PublishSettings, gate_and_activate, publish
from chesszero.publish.quantize import QatSettings
from chesszero.publish.runtime import OrtRuntime, TorchRuntime
from chesszero.search import SearchOptions
from chesszero.search.pipeline import BatchPipeline


def _with_length(net: ChessNet) -> ChessNet:
    """``net`` with a length head whose output varies by tens of plies (a
    briefly trained network's head still sits near its small initial output)."""
    torch.manual_seed(5)
    with torch.no_grad():
        net.length_head.fc.weight.normal_(0.0, 0.05)
        net.length_head.fc.bias.fill_(0.15)  # about 60 plies
    return net.eval()


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> tuple[PublishResult, ChessNet]:
    root = tmp_path_factory.mktemp("publish-moves-left")
    net = _with_length(trained_net())
    replay = [core.encode_batch(random_games(32, seed=7))]
    settings = PublishSettings(qat=QatSettings(steps=2, lr=1e-5, batch_size=32), moves_left=True)
    with torch_threads(1):
        result = publish(net, root / "gen", calibration(), settings=settings, runtime=OrtRuntime(threads=1),
                         batches=lambda: replay)
    return result, net


def _plies(net: ChessNet, planes: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return net(torch.from_numpy(planes.copy())).length.numpy() * core.LENGTH_SCALE


def test_the_folded_length_head_gives_the_training_heads_plies() -> None:
    net = _with_length(trained_net())
    planes = calibration().planes[:64]
    deploy = fold_network(net, moves_left=True)
    with torch.no_grad():
        policy, wdl, plies = deploy(torch.from_numpy(planes.copy()))
        plain = fold_network(net)(torch.from_numpy(planes.copy()))
    expected = _plies(net, planes)
    assert expected.std() > 5.0  # the outputs vary: a constant would pass any comparison
    np.testing.assert_allclose(plies.numpy(), expected, rtol=1e-4, atol=1e-3)
    assert len(plain) == 2
    torch.testing.assert_close(policy, plain[0])
    with pytest.raises(ValueError, match="remaining-length head"):
        fold_network(ChessNet("2x16", aux_heads=False), moves_left=True)


def test_artifacts_carry_the_output_and_the_gate_checks_it(published) -> None:
    result, net = published
    assert result.gate.passed, result.gate.report.failures if result.gate.report else result.gate.error
    report = result.gate.report
    assert report is not None and report.moves_left_mae is not None
    assert report.moves_left_mae <= FidelityThresholds().max_moves_left_mae
    assert load_artifact(result.int8.path).metadata.fidelity["moves_left_mae"] == pytest.approx(
        report.moves_left_mae, rel=1e-5)
    planes = calibration().planes[:32]
    expected = _plies(net, planes)
    for artifact in (result.fp32, result.int8):
        assert artifact.moves_left
        names = [o.name for o in onnx.load(str(artifact.path)).graph.output]
        assert names == ["policy_logits", "wdl", "moves_left"]
        out = OrtRuntime(threads=1).build(artifact).evaluate(planes)
        assert len(out) == 3 and out[2].shape == (32,)
        tolerance = 1e-2 if artifact.metadata.precision is Precision.FP32 else FidelityThresholds().max_moves_left_mae
        assert np.abs(out[2] - expected).mean() <= tolerance
        # The torch runtime rebuilds the same network from the deployment state.
        state = load_deploy_state(artifact.path.parent / artifact.metadata.torch_state,
                                  precision=artifact.metadata.precision)
        assert state.moves_left
        torch_out = TorchRuntime().build(artifact).evaluate(planes)
        np.testing.assert_allclose(torch_out[2], out[2], atol=0.05 if artifact.metadata.precision is Precision.FP32
                                   else 2.0)


def test_the_gate_refuses_plies_that_drift_and_a_reference_without_them(published) -> None:
    result, net = published

    class Shifted:
        def __init__(self, inner, shift: float) -> None:
            self.inner, self.shift = inner, shift

        def evaluate(self, planes):
            policy, wdl, plies = self.inner.evaluate(planes)
            return policy, wdl, plies + self.shift

    candidate = OrtRuntime(threads=1).build(result.int8)
    reference = TorchRuntime().session_for(net, moves_left=True)
    limit = FidelityThresholds().max_moves_left_mae
    report = measure_fidelity(reference, Shifted(candidate, 2 * limit), calibration())
    assert any("moves-left MAE" in f for f in report.failures)
    assert report.agreement >= 0.95  # only the plies moved
    with pytest.raises(ValueError, match="3 outputs and the reference 2"):
        measure_fidelity(TorchRuntime().session_for(net), candidate, calibration())
    # Through the gate a mismatch is a rejection, never a crash.
    outcome = gate_and_activate(result.int8, TorchRuntime().session_for(net), calibration(),
                                runtime=OrtRuntime(threads=1), thresholds=FidelityThresholds(),
                                report_path=result.directory / "mismatch.json")
    assert not outcome.activated and "reference 2" in (outcome.error or "")


def test_an_artifact_with_an_unknown_extra_output_is_refused(published, tmp_path: Path) -> None:
    result, _ = published
    model = onnx.load(str(result.int8.path))
    model.graph.output[2].name = "plies"
    for node in model.graph.node:
        node.output[:] = ["plies" if o == "moves_left" else o for o in node.output]
    path = tmp_path / "int8.onnx"
    onnx.save(model, str(path))
    with pytest.raises(ArtifactError, match="optionally followed by 'moves_left'"):
        load_artifact(path)


def test_search_uses_the_artifacts_plies(published) -> None:
    """A searcher with the utility on runs on the artifact's three outputs,
    and its root's plies-left is the artifact's estimate for the root."""
    result, _ = published
    session = OrtRuntime(threads=1).build(result.int8)
    options = SearchOptions.evaluation()
    options.moves_left_slope = 0.005
    searcher = _core.Searcher(1, options, 0, 1)
    searcher.start(0, core.Game(), 1)
    with BatchPipeline(searcher, session, batch_size=4, depth=1) as pipe:
        pipe.run()
    root = session.evaluate(core.encode_batch([core.Game()]))[2][0]
    assert searcher.result(0)["moves_left"] == pytest.approx(max(0.0, float(root)), rel=1e-5)
