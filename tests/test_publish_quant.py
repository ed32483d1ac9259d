"""INT8: calibration, QAT fine-tuning, QDQ export, and ONNX Runtime vs fake-quantised torch."""

from __future__ import annotations

import copy

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper
from publish_support import (  # noqa: F401
    assert_integer_kernels_agree,
    calibration,
    legal_kl,
    one_thread,
    trained_net,
)

from chesszero import core
from chesszero.publish.artifact import Precision
from chesszero.publish.deploy_net import INPUT_ZERO_POINT
from chesszero.publish.export import OPSET, Provenance, export_onnx
from chesszero.publish.fold import fold_network
from chesszero.publish.quant_ops import INT8_MAX, QuantMode, QuantScheme
from chesszero.publish.quantize import (
    QatSettings,
    calibrate,
    calibration_loss,
    distillation_loss,
    finetune,
    quantize_network,
)
from chesszero.publish.runtime import OrtRuntime, TorchRuntime


def _int8(scheme: QuantScheme = QuantScheme.CPU, *, int8_stem: bool = False):
    float_net = fold_network(trained_net(), int8_stem=int8_stem)
    return float_net, quantize_network(float_net, calibration(), scheme=scheme)


def _weight_codes(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Integer codes of every Q(weight initializer) node, by node name."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    codes = {}
    for node in model.graph.node:
        if node.op_type == "QuantizeLinear" and node.input[0] in inits and inits[node.input[0]].ndim == 4:
            w, s = inits[node.input[0]], inits[node.input[1]]
            codes[node.name] = np.round(w / s.reshape(-1, 1, 1, 1))
    return codes


def test_calibration_observes_every_activation_and_keeps_float_outputs() -> None:
    float_net = fold_network(trained_net())
    planes = calibration().planes
    with torch.no_grad():
        before = float_net(torch.from_numpy(planes.copy()))
    net = copy.deepcopy(float_net)
    calibrate(net, planes)
    assert net.quant_mode is QuantMode.FAKE_QUANT
    assert all(q.calibrated for _, q in net.act_quants())
    assert all(float(q.amax) <= 6.0 for _, q in net.act_quants() if q.nonnegative)
    net.set_quant_mode(QuantMode.FLOAT)
    with torch.no_grad():
        after = net(torch.from_numpy(planes.copy()))
    torch.testing.assert_close(after, before)


def test_quantize_network_does_not_modify_the_float_network() -> None:
    float_net, int8 = _int8()
    reference = fold_network(trained_net())
    assert float_net.quant_mode is QuantMode.FLOAT
    for (name, a), (_, b) in zip(float_net.state_dict().items(), reference.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    assert int8.quant_mode is QuantMode.FAKE_QUANT


def test_qat_finetuning_reduces_the_distillation_loss() -> None:
    float_net = fold_network(trained_net())
    calib = calibration()
    student = calibrate(copy.deepcopy(float_net), calib.planes)
    batch = (calib.planes[:64], calib.legal[:64])
    x = torch.from_numpy(calib.planes[:64].copy())
    mask = torch.from_numpy(calib.legal[:64].copy())
    with torch.no_grad():
        teacher_out = float_net(x)
        before = float(distillation_loss(student(x), teacher_out, mask))
    losses = finetune(student, float_net, lambda: [batch], QatSettings(steps=30, lr=1e-5))
    with torch.no_grad():
        after = float(distillation_loss(student(x), teacher_out, mask))
    assert len(losses) == 30
    assert after < 0.9 * before
    assert not any(p.requires_grad for p in student.parameters())


def test_quantize_network_keeps_qat_only_when_it_helps() -> None:
    float_net = fold_network(trained_net())
    calib = calibration()
    plain = quantize_network(float_net, calib)
    harmful = quantize_network(float_net, calib, qat=QatSettings(steps=3, lr=0.5))
    for (name, a), (_, b) in zip(plain.state_dict().items(), harmful.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    assert calibration_loss(harmful, float_net, calib) == calibration_loss(plain, float_net, calib)


@pytest.mark.parametrize("scheme", list(QuantScheme))
def test_input_quantisation_is_exact(scheme: QuantScheme) -> None:
    """Every plane value of real positions (and the extremes SPEC 2 allows) lands on the grid."""
    _, int8 = _int8(scheme, int8_stem=True)
    assert int8.input_q is not None
    planes = torch.from_numpy(calibration().planes.copy())
    extremes = planes[:2].clone()
    extremes[0, core.NUM_BINARY_PLANES :] = -10.0  # material differences at their lowest
    extremes[1, core.NUM_BINARY_PLANES :] = 100.0  # the halfmove clock at its cap
    for x in (planes, extremes):
        scaled = x * int8.input_scale
        assert torch.equal(int8.stem_input(x), scaled)


def test_stem_bias_correction_centres_the_rounding_error() -> None:
    """Calibration stores minus the stem's mean rounding error; the float network is untouched."""
    float_net = fold_network(trained_net(), int8_stem=True)
    planes = torch.from_numpy(calibration().planes.copy())
    int8 = quantize_network(float_net, calibration())
    stem = int8.stem
    weight, _ = stem.quantized_params(int8.input_q)
    with torch.no_grad():
        x = int8.stem_input(planes)
        error = torch.nn.functional.conv2d(x, weight - stem.weight, None, padding=1).mean(dim=(0, 2, 3))
    assert error.abs().max() > 1e-4  # there was something to correct
    torch.testing.assert_close(stem.bias_correction, -error, atol=1e-6, rtol=1e-4)
    assert torch.equal(stem.bias, float_net.stem.bias)
    assert not any(bool(conv.bias_correction.any()) for _, conv, _ in int8.quantized_convs() if conv is not stem)
    plain = quantize_network(fold_network(trained_net()), calibration())  # SPEC 9's float stem
    assert plain.input_q is None and not plain.stem.bias_correction.any()
    assert "stem" not in [name for name, _, _ in plain.quantized_convs()]


@pytest.mark.parametrize("int8_stem", [False, True])
def test_int8_export_has_explicit_per_channel_qdq(tmp_path, int8_stem: bool) -> None:
    _, int8 = _int8(int8_stem=int8_stem)
    calib = calibration()
    artifact = export_onnx(int8, tmp_path / "int8.onnx", Provenance("c", calib.sha256, len(calib)))
    model = onnx.load(str(artifact.path))
    assert max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")) >= OPSET >= 17
    ops = [n.op_type for n in model.graph.node]
    n_convs = sum(1 for _ in int8.quantized_convs())
    assert n_convs == 2 * 2 + int8_stem
    assert ops.count("QuantizeLinear") == n_convs + sum(1 for _ in int8.act_quants())
    codes = _weight_codes(model)
    assert len(codes) == n_convs
    # An INT8 stem keeps 8-bit weights (its input bytes are at most 116: no int16
    # saturation, see deploy_net.INPUT_ZERO_POINT); every other convolution 7-bit.
    stem = [name for name in codes if name.startswith("/stem/")]
    assert len(stem) == int8_stem and all(np.abs(codes[name]).max() == INT8_MAX for name in stem)
    rest = [c for name, c in codes.items() if name not in stem]
    assert all(np.abs(c).max() <= QuantScheme.CPU.weight_qmax for c in rest)
    assert any(np.abs(c).max() == QuantScheme.CPU.weight_qmax for c in rest)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    first = next(n for n in model.graph.node if n.op_type == "QuantizeLinear" and n.input[0] not in inits)
    if int8_stem:  # the input's quantiser: uint8 with its zero point
        assert inits[first.input[2]].dtype == np.uint8 and int(inits[first.input[2]]) == INPUT_ZERO_POINT
    else:  # the first activation quantised is the stem's ReLU6 output
        assert "stem_q" in first.name
    meta = artifact.metadata
    assert meta.precision is Precision.INT8 and meta.quant_scheme == "cpu"
    assert meta.encoding_version == int(core.ENCODING_VERSION) and meta.network_size == "2x16"


@pytest.mark.parametrize("int8_stem", [False, True])
def test_tensorrt_scheme_uses_signed_activations_and_full_range_weights(tmp_path, int8_stem: bool) -> None:
    _, int8 = _int8(QuantScheme.TENSORRT, int8_stem=int8_stem)
    artifact = export_onnx(int8, tmp_path / "trt.onnx", Provenance("c", "d", 1))
    model = onnx.load(str(artifact.path))
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "QuantizeLinear" and len(node.input) > 2 and node.input[2] in inits:
            zero = inits[node.input[2]]
            assert zero.dtype == np.int8 and not zero.any(), node.name
    assert max(np.abs(c).max() for c in _weight_codes(model).values()) == 127
    assert artifact.metadata.quant_scheme == "tensorrt"


@pytest.mark.parametrize("int8_stem", [False, True])
def test_int8_onnx_runtime_matches_fake_quantised_torch(tmp_path, int8_stem: bool) -> None:
    """ONNX Runtime's integer kernels compute what the fake-quantised model simulates.

    With 8-bit weights ONNX Runtime's u8s8 kernels saturate on AVX2 CPUs
    without VNNI (``vpmaddubsw``); the CPU scheme's 7-bit weights avoid it,
    and an INT8 stem's 8-bit weights meet input bytes of at most 116.
    """
    _, int8 = _int8(int8_stem=int8_stem)
    calib = calibration()
    artifact = export_onnx(int8, tmp_path / "int8.onnx", Provenance("c", calib.sha256, len(calib)))
    ort_policy, ort_wdl = OrtRuntime(threads=1).build(artifact).evaluate(calib.planes)
    with torch.no_grad():
        policy, wdl = (t.numpy() for t in int8(torch.from_numpy(calib.planes.copy())))
    masked = np.where(calib.legal, ort_policy, -np.inf).argmax(1)
    assert (masked == np.where(calib.legal, policy, -np.inf).argmax(1)).mean() >= 0.99
    assert_integer_kernels_agree(policy, ort_policy, calib.legal)
    assert np.abs(ort_wdl - wdl).mean() < 1e-4


@pytest.mark.parametrize("int8_stem", [False, True])
@pytest.mark.parametrize("scheme", list(QuantScheme))
def test_quantised_network_stays_close_to_the_source(scheme: QuantScheme, int8_stem: bool) -> None:
    net = trained_net()
    _, int8 = _int8(scheme, int8_stem=int8_stem)
    calib = calibration()
    source_policy, source_wdl = TorchRuntime().session_for(net).evaluate(calib.planes)
    policy, wdl = TorchRuntime().session_for(int8).evaluate(calib.planes)
    agree = (np.where(calib.legal, policy, -np.inf).argmax(1)
             == np.where(calib.legal, source_policy, -np.inf).argmax(1)).mean()
    assert agree >= 0.95
    assert legal_kl(source_policy, policy, calib.legal).mean() < 0.01
    assert np.abs(wdl - source_wdl).mean() < 0.02


def test_trained_net_has_peaked_policies() -> None:
    calib = calibration()
    with torch.no_grad():
        logits = trained_net().inference_view()(torch.from_numpy(calib.planes.copy()))[0].numpy()
    masked = np.sort(np.where(calib.legal, logits, -np.inf), axis=1)
    assert np.median(masked[:, -1] - masked[:, -2]) > 0.3  # clear favourites, not near-ties
