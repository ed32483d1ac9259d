"""Deployment copy: BatchNorm and branch-scale folding, heads dropped, source untouched."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from publish_support import calibration, one_thread, trained_net  # noqa: F401

from chesszero.model import ChessNet
from chesszero.publish.deploy_net import DeployConv
from chesszero.publish.export import Provenance, export_onnx
from chesszero.publish.fold import fold_conv_bn, fold_network
from chesszero.publish.policy_fold import fold_policy_head
from chesszero.publish.quant_ops import QuantMode
from chesszero.publish.runtime import OrtRuntime, TorchRuntime


def _randomise_batchnorm(net: ChessNet, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                n = module.num_features
                module.running_mean.copy_(torch.rand(n, generator=g) - 0.5)
                module.running_var.copy_(torch.rand(n, generator=g) * 2 + 0.2)
                module.weight.copy_(torch.rand(n, generator=g) + 0.5)
                module.bias.copy_(torch.rand(n, generator=g) - 0.5)


def test_fold_conv_bn_matches_conv_then_batchnorm() -> None:
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(5, 7, 3, padding=1, bias=False)
    bn = torch.nn.BatchNorm2d(7).eval()
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.1, 3)
        bn.weight.uniform_(-2, 2)
        bn.bias.uniform_(-1, 1)
    weight, bias = fold_conv_bn(conv, bn, scale=0.25)
    x = torch.randn(4, 5, 8, 8)
    expected = bn(conv(x)) * 0.25
    got = torch.nn.functional.conv2d(x, weight, bias, padding=1)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", ["2x16", "3x8"])
def test_folded_network_matches_training_network(size: str) -> None:
    torch.manual_seed(1)
    net = ChessNet(size).eval()
    _randomise_batchnorm(net, seed=2)
    planes = torch.from_numpy(calibration().planes.copy())
    with torch.no_grad():
        policy, wdl_logits = net.inference_view()(planes)
        folded_policy, folded_wdl = fold_network(net)(planes)
    torch.testing.assert_close(folded_policy, policy, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(folded_wdl, torch.softmax(wdl_logits, dim=1), rtol=1e-5, atol=1e-6)


def test_folding_leaves_the_training_network_untouched() -> None:
    net = trained_net().train()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    deploy = fold_network(net)
    with torch.no_grad():
        for p in deploy.parameters():
            p.add_(1.0)  # the copy shares no storage with the source
    assert net.training
    assert all(module.training for module in net.modules())
    after = net.state_dict()
    assert before.keys() == after.keys()
    for key, value in before.items():
        assert torch.equal(value, after[key]), key


def test_deployment_copy_drops_training_heads_and_batchnorm() -> None:
    deploy = fold_network(trained_net())
    names = [name for name, _ in deploy.named_modules()]
    assert not any("next_policy" in n or "length" in n for n in names)
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in deploy.modules())
    convs = [m for m in deploy.modules() if isinstance(m, DeployConv)]
    assert len(convs) == 1 + 2 * 2 + 1  # stem, two per block, value head
    assert deploy.quant_mode is QuantMode.FLOAT


def test_folded_policy_head_matches_query_key_head() -> None:
    head = trained_net().policy_head
    x = torch.rand(16, head.token.in_features, 8, 8) * 6
    with torch.no_grad():
        expected, got = head(x), fold_policy_head(head)(x)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    promotions = torch.nonzero(head.promo_slot < head.promo_piece.numel()).flatten()
    pieces = promotions[head.from_to[promotions] == head.from_to[promotions[0]]]
    assert len(promotions) == 88 and len(pieces) == 4  # the offsets are really compared:
    assert len(torch.unique(got[0, pieces])) == 4  # one from-to pair, four piece logits


def test_branch_scale_is_folded_into_second_convolution() -> None:
    net = trained_net()
    deploy = fold_network(net)
    block, folded = net.blocks[0], deploy.blocks[0]
    weight, _ = fold_conv_bn(block.conv2, block.bn2)
    torch.testing.assert_close(folded.conv2.weight, weight * block.branch_scale)


def test_fp32_onnx_and_torch_runtimes_agree_with_the_folded_network(tmp_path) -> None:
    net = trained_net()
    deploy = fold_network(net)
    calib = calibration()
    from publish_support import legal_kl

    artifact = export_onnx(deploy, tmp_path / "fp32.onnx", Provenance("c", calib.sha256, len(calib)))
    with torch.no_grad():
        policy, wdl = (t.numpy() for t in deploy(torch.from_numpy(calib.planes.copy())))
    ort_policy, ort_wdl = OrtRuntime(threads=1).build(artifact).evaluate(calib.planes)
    np.testing.assert_allclose(ort_policy, policy, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ort_wdl, wdl, rtol=1e-4, atol=1e-5)
    source_policy, source_wdl = TorchRuntime().session_for(net).evaluate(calib.planes)
    assert legal_kl(source_policy, ort_policy, calib.legal).max() < 1e-8
    np.testing.assert_allclose(ort_wdl, source_wdl, atol=1e-5)
