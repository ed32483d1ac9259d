"""Evaluators: PyTorch and ONNX Runtime agree on a real (small) ChessNet and drive search."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest

from chesszero import core
from chesszero.search import (
    Evaluator,
    OnnxEvaluator,
    ScriptedEvaluator,
    TorchEvaluator,
    UniformEvaluator,
    analyse,
)

torch = pytest.importorskip("torch")
model = pytest.importorskip("chesszero.model")


class _Deployable(torch.nn.Module):
    """ChessNet inference view with softmaxed WDL, as published artifacts are."""

    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        policy, wdl = self.net(planes)
        return policy, torch.softmax(wdl, dim=-1)


@pytest.fixture(scope="module")
def net() -> torch.nn.Module:
    torch.manual_seed(0)
    return model.ChessNet("2x16", aux_heads=False).eval()


@pytest.fixture(scope="module")
def onnx_path(net, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("onnx") / "net.onnx"
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the legacy exporter announces its deprecation
        torch.onnx.export(
            _Deployable(net.inference_view()),
            (torch.zeros(2, 52, 8, 8),),
            str(path),
            input_names=["planes"],
            output_names=["policy_logits", "wdl"],
            dynamic_axes={"planes": {0: "n"}, "policy_logits": {0: "n"}, "wdl": {0: "n"}},
            opset_version=17,
            dynamo=False,
        )
    return str(path)


def _planes() -> np.ndarray:
    games = [
        core.Game(),
        core.Game("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"),
    ]
    return core.encode_batch(games)


def test_every_evaluator_satisfies_the_protocol(net, onnx_path) -> None:
    for ev in (
        UniformEvaluator(),
        ScriptedEvaluator(),
        TorchEvaluator(net, threads=1),
        OnnxEvaluator(onnx_path),
    ):
        assert isinstance(ev, Evaluator)
        logits, wdl = ev.evaluate(_planes())
        assert logits.shape == (2, 1880) and logits.dtype == np.float32
        assert wdl.shape == (2, 3) and wdl.dtype == np.float32
        np.testing.assert_allclose(wdl.sum(axis=1), 1.0, atol=1e-5)


def test_onnx_runtime_matches_torch(net, onnx_path) -> None:
    planes = _planes()
    t_logits, t_wdl = TorchEvaluator(net.inference_view(), threads=1).evaluate(planes)
    o_logits, o_wdl = OnnxEvaluator(onnx_path, threads=1).evaluate(planes)
    np.testing.assert_allclose(o_logits, t_logits, atol=1e-4)
    np.testing.assert_allclose(o_wdl, t_wdl, atol=1e-5)
    r_torch = analyse(core.Game(), TorchEvaluator(net, threads=1), visits=64)
    r_onnx = analyse(core.Game(), OnnxEvaluator(onnx_path), visits=64)
    assert r_torch.best_move == r_onnx.best_move
    assert r_torch.visit_counts == r_onnx.visit_counts


def test_onnx_file_with_another_encoding_version_is_refused(onnx_path, tmp_path) -> None:
    proto = onnx.load(onnx_path)
    proto.metadata_props.add(key="chesszero.encoding_version", value=str(core.ENCODING_VERSION + 1))
    bad = tmp_path / "other_encoding.onnx"
    onnx.save(proto, str(bad))
    with pytest.raises(ValueError, match="encoding version"):
        OnnxEvaluator(bad)
    with pytest.raises(ValueError):
        OnnxEvaluator(tmp_path / "missing.onnx")
    with pytest.raises(ValueError):
        OnnxEvaluator(onnx_path, threads=0)


def test_evaluators_refuse_bad_planes(net) -> None:
    for ev in (UniformEvaluator(), TorchEvaluator(net, threads=1)):
        with pytest.raises(ValueError):
            ev.evaluate(np.zeros((2, 52, 8, 8), np.float64))
        with pytest.raises(ValueError):
            ev.evaluate(np.zeros((2, 51, 8, 8), np.float32))


def test_torch_evaluator_gives_the_length_heads_plies_on_request(net) -> None:
    """moves_left=True adds the remaining-length head's output in plies
    (SPEC 5's 1/400 scale undone), and search backs it up; a network without
    the head is refused at construction."""
    torch.manual_seed(1)
    full = model.ChessNet("2x16", aux_heads=True).eval()
    planes = _planes()
    plain = TorchEvaluator(full, threads=1).evaluate(planes)
    logits, wdl, plies = TorchEvaluator(full, threads=1, moves_left=True).evaluate(planes)
    assert len(plain) == 2
    np.testing.assert_array_equal(logits, plain[0])
    np.testing.assert_array_equal(wdl, plain[1])
    with torch.no_grad():
        expected = full(torch.from_numpy(planes)).length.numpy() * 400.0
    assert plies.shape == (2,) and plies.dtype == np.float32
    np.testing.assert_allclose(plies, expected, rtol=1e-6)
    with pytest.raises(ValueError, match="remaining-length head"):
        TorchEvaluator(net, moves_left=True)

    from chesszero import _core
    from chesszero.search import SearchOptions
    from chesszero.search.pipeline import BatchPipeline

    options = SearchOptions.evaluation()
    options.moves_left_slope = 0.01
    searcher = _core.Searcher(1, options, 0, 1)
    searcher.start(0, core.Game(), 1)
    with BatchPipeline(searcher, TorchEvaluator(full, moves_left=True), batch_size=4, depth=1) as pipe:
        pipe.run()
    root = TorchEvaluator(full, moves_left=True).evaluate(core.encode_batch([core.Game()]))[2][0]
    assert searcher.result(0)["moves_left"] == pytest.approx(max(0.0, float(root)), rel=1e-5, abs=1e-4)
