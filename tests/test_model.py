"""Tests of the SPEC 4 network: sizes, parameter counts, heads and block structure."""

from __future__ import annotations

import math

import pytest
import torch
from train_support import reference_action_triples, reference_table, requires_core

from chesszero.model import (
    NAMED_SIZES,
    ActionTable,
    ChessNet,
    GlobalPoolingBlock,
    InferenceNet,
    ModelSize,
    ResidualBlock,
    count_parameters,
    parse_size,
)

TABLE = reference_table()


def expected_parameters(blocks: int, channels: int, aux: bool = True) -> int:
    """Parameter count written out term by term from SPEC 4."""
    c, q = channels, channels // 4
    stem = 52 * c * 9 + 2 * c
    plain = 2 * (c * c * 9) + 2 * (2 * c)
    pool = c * c * 9 + 2 * c + (2 * q * (c - q) + (c - q)) + (c - q) * c * 9 + 2 * c
    n_pool = blocks // 2
    trunk = stem + (blocks - n_pool) * plain + n_pool * pool
    policy = (c * 128 + 128) + 2 * (128 * 128 + 128) + 128 * 4
    value = c * 2 + 2 * 2 + (128 * 48 + 48) + (48 * 3 + 3)
    length = c * 1 + 2 + (64 + 1)
    return trunk + policy + value + (policy + length if aux else 0)


def test_paper_network_parameter_count_is_6_32_million() -> None:
    net = ChessNet("14x160", table=TABLE)
    n = count_parameters(net)
    assert n == 6_315_378
    assert n == expected_parameters(14, 160)
    assert round(n / 1e6, 2) == 6.32


def test_from_to_head_on_128_channels_matches_paper_50048() -> None:
    net = ChessNet("12x128", table=TABLE)
    assert count_parameters(net.policy_head) == 50_048


@pytest.mark.parametrize("size", ["6x64", "8x96", "2x16", "3x20"])
def test_parameter_count_formula_across_sizes(size: str) -> None:
    s = parse_size(size)
    assert count_parameters(ChessNet(s, table=TABLE)) == expected_parameters(s.blocks, s.channels)
    lite = ChessNet(s, table=TABLE, aux_heads=False)
    assert count_parameters(lite) == expected_parameters(s.blocks, s.channels, aux=False)


def test_size_parsing() -> None:
    assert set(NAMED_SIZES) == {"6x64", "8x96", "12x128", "14x160", "19x176"}
    assert parse_size("14x160") == ModelSize(14, 160)
    assert parse_size(" 3X20 ") == ModelSize(3, 20)
    assert parse_size(ModelSize(2, 16)).name == "2x16"
    for bad in ("14-160", "x160", "14x", ""):
        with pytest.raises(ValueError, match="BxC"):
            parse_size(bad)
    with pytest.raises(ValueError, match="multiple of 4"):
        parse_size("4x30")
    with pytest.raises(ValueError, match="at least one block"):
        parse_size("0x16")


def test_block_layout_and_branch_scale() -> None:
    net = ChessNet("5x16", table=TABLE)
    kinds = [type(b) for b in net.blocks]
    assert kinds == [ResidualBlock, GlobalPoolingBlock] * 2 + [ResidualBlock]
    assert all(b.branch_scale == pytest.approx(1 / math.sqrt(5)) for b in net.blocks)
    convs = [m for m in net.modules() if isinstance(m, torch.nn.Conv2d)]
    assert all(m.bias is None for m in convs)
    pool = net.blocks[1]
    assert pool.pool_fc.in_features == 8 and pool.pool_fc.out_features == 12
    assert pool.conv2.in_channels == 12 and pool.conv2.out_channels == 16


def test_outputs_shapes_and_trunk_is_capped_at_six() -> None:
    torch.manual_seed(0)
    net = ChessNet("2x16", table=TABLE).eval()
    planes = torch.rand(4, 52, 8, 8) * 50.0
    features = net.trunk(planes)
    assert features.shape == (4, 16, 8, 8)
    assert features.min() >= 0.0 and features.max() <= 6.0
    out = net(planes)
    assert out.policy.shape == (4, 1880) and out.next_policy is not None
    assert out.next_policy.shape == (4, 1880)
    assert out.wdl.shape == (4, 3) and out.length is not None and out.length.shape == (4,)


def test_inference_view_shares_weights_and_skips_training_heads() -> None:
    torch.manual_seed(1)
    net = ChessNet("2x16", table=TABLE).eval()
    view = net.inference_view()
    assert isinstance(view, InferenceNet)
    planes = torch.rand(3, 52, 8, 8)
    policy, wdl = view(planes)
    full = net(planes)
    torch.testing.assert_close(policy, full.policy)
    torch.testing.assert_close(wdl, full.wdl)
    calls: list[str] = []
    assert net.next_policy_head is not None and net.length_head is not None
    net.next_policy_head.register_forward_hook(lambda *_: calls.append("next"))
    net.length_head.register_forward_hook(lambda *_: calls.append("length"))
    view(planes)
    assert calls == []
    with torch.no_grad():
        net.value_head.fc2.bias.add_(1.0)
    torch.testing.assert_close(view(planes)[1], wdl + 1.0)


def test_policy_logits_are_gathered_query_key_scores_with_promotion_offsets() -> None:
    torch.manual_seed(2)
    net = ChessNet("2x16", table=TABLE).eval()
    head = net.policy_head
    for p in head.parameters():  # make the offsets non-negligible
        torch.nn.init.normal_(p, std=0.5)
    x = torch.randn(2, 16, 8, 8)
    logits = head(x)
    tokens = torch.nn.functional.gelu(head.token(x.flatten(2).transpose(1, 2)))
    q, k = head.query(tokens), head.key(tokens)
    scores = q @ k.transpose(1, 2) / math.sqrt(128)
    u = k @ head.promotion.weight.T  # [N, 64, 4] over (q, r, b, n)
    piece = {"q": 0, "r": 1, "b": 2, "n": 3}
    triples = reference_action_triples()
    for a in range(0, 1880, 7):
        frm, to, promo = triples[a]
        want = scores[:, frm, to].clone()
        if promo is not None:
            want += u[:, to, piece[promo]] - u[:, to, 3]
        torch.testing.assert_close(logits[:, a], want, rtol=1e-4, atol=1e-4)
    promo_actions = [a for a, t in enumerate(triples) if t[2] is not None]
    knights = [a for a in promo_actions if triples[a][2] == "n"]
    for a in knights:
        frm, to, _ = triples[a]
        torch.testing.assert_close(logits[:, a], scores[:, frm, to], rtol=1e-4, atol=1e-4)
    queen = [a for a in promo_actions if triples[a][2] == "q"][0]
    assert not torch.allclose(logits[:, queen], logits[:, queen + 3])


def test_final_layers_start_small() -> None:
    torch.manual_seed(3)
    net = ChessNet("6x64", table=TABLE)
    for layer in (net.policy_head.query, net.value_head.fc2):
        assert layer.weight.std().item() == pytest.approx(0.01, rel=0.25)
        assert torch.count_nonzero(layer.bias) == 0
    assert net.policy_head.promotion.weight.std().item() == pytest.approx(0.01, rel=0.25)
    out = net(torch.rand(8, 52, 8, 8))
    assert out.policy.abs().max() < 0.5  # near-uniform policy at start
    assert out.wdl.abs().max() < 0.1


def test_global_pooling_gives_board_wide_context() -> None:
    """One pooling block lets square a1 influence h8; two plain 3x3 convs cannot."""
    torch.manual_seed(4)
    pool = GlobalPoolingBlock(16, 1.0).eval()
    plain = ResidualBlock(16, 1.0).eval()
    x = torch.rand(1, 16, 8, 8)
    y = x.clone()
    y[0, :, 0, 0] += 3.0
    assert not torch.allclose(pool(x)[0, :, 7, 7], pool(y)[0, :, 7, 7])
    torch.testing.assert_close(plain(x)[0, :, 7, 7], plain(y)[0, :, 7, 7])


def test_bfloat16_autocast_forward() -> None:
    net = ChessNet("2x16", table=TABLE)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = net(torch.rand(2, 52, 8, 8))
    assert out.policy.shape == (2, 1880)
    assert torch.isfinite(out.policy.float()).all()


def test_action_table_validation() -> None:
    triples = reference_action_triples()
    table = ActionTable.from_triples(triples)
    assert len(table) == 1880 and table.num_promotions == 88
    piece, knight, slot = table.promotion_gather()
    assert len(piece) == len(knight) == 88
    assert (slot < 88).sum() == 88 and (slot == 88).sum() == 1880 - 88
    with pytest.raises(ValueError, match="0..63"):
        ActionTable.from_triples([(0, 64, None)])


def test_reference_enumeration_counts() -> None:
    triples = reference_action_triples()
    assert len(triples) == 1880
    assert sum(1 for t in triples if t[2] is not None) == 88


@requires_core
def test_core_action_table_matches_reference() -> None:
    from chesszero import core

    assert core.NUM_ACTIONS == 1880
    assert [tuple(core.action_info(a)) for a in range(1880)] == reference_action_triples()
