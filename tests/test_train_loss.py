"""Loss masking, target arithmetic and file-reflection of training batches."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from train_support import make_rows, one_thread, requires_core

from chesszero.config import LossWeights, Reflection
from chesszero.model import NetOutput
from chesszero.replay.targets import blend_root_value, blur, length_labels, wdl_from_value
from chesszero.train import compute_loss, reflection_flags, to_train_batch

pytestmark = requires_core
__all__ = ["one_thread"]  # autouse fixture
WEIGHTS = LossWeights(policy=1.0, value=1.0, next_policy=0.15, length=0.1)


def _batch(n: int = 12, seed: int = 0):
    return to_train_batch(make_rows(n, seed))


def _outputs(n: int, seed: int = 0, requires_grad: bool = False) -> NetOutput:
    g = torch.Generator().manual_seed(seed)
    tensors = [torch.randn(n, 1880, generator=g), torch.randn(n, 3, generator=g),
               torch.randn(n, 1880, generator=g), torch.randn(n, generator=g)]
    return NetOutput(*(t.requires_grad_(requires_grad) for t in tensors))


def test_loss_matches_dense_reference() -> None:
    batch = _batch()
    out = _outputs(len(batch))
    terms = compute_loss(out, batch, WEIGHTS)
    n = len(batch)
    dense = torch.zeros(n, 1880).scatter_add_(1, batch.policy_ids, batch.policy_probs)
    legal_logits = out.policy.masked_fill(~batch.legal, float("-inf"))
    log_p = torch.log_softmax(legal_logits, 1)
    policy = -(dense * torch.where(batch.legal, log_p, 0.0)).sum(1).mean()
    value = -(batch.wdl * torch.log_softmax(out.wdl, 1)).sum(1).mean()
    dense_next = torch.zeros(n, 1880).scatter_add_(1, batch.next_ids, batch.next_probs)
    next_rows = -(dense_next * torch.log_softmax(out.next_policy, 1)).sum(1)
    next_policy = (next_rows * batch.next_mask).sum() / n
    err = (out.length - batch.length).abs()
    smooth = torch.where(err < 1, 0.5 * err**2, err - 0.5)
    length = (smooth * batch.length_mask).sum() / n
    torch.testing.assert_close(terms.policy, policy)
    torch.testing.assert_close(terms.value, value)
    torch.testing.assert_close(terms.next_policy, next_policy)
    torch.testing.assert_close(terms.length, length)
    torch.testing.assert_close(terms.total, policy + value + 0.15 * next_policy + 0.1 * length)


def test_missing_labels_contribute_nothing() -> None:
    batch = _batch()
    assert 0 < int(batch.next_mask.sum()) < len(batch)
    assert 0 < int(batch.length_mask.sum()) < len(batch)
    out = _outputs(len(batch), requires_grad=True)
    terms = compute_loss(out, batch, WEIGHTS)
    terms.total.backward()
    assert out.next_policy.grad is not None and out.length.grad is not None
    assert torch.count_nonzero(out.next_policy.grad[~batch.next_mask]) == 0
    assert torch.count_nonzero(out.length.grad[~batch.length_mask]) == 0
    assert torch.count_nonzero(out.next_policy.grad[batch.next_mask]) > 0
    # Garbage (even non-finite) predictions on unlabelled rows change nothing.
    wild = NetOutput(
        out.policy.detach(),
        out.wdl.detach(),
        torch.where(batch.next_mask[:, None], out.next_policy.detach(), torch.tensor(1e30)),
        torch.where(batch.length_mask, out.length.detach(), torch.tensor(float("nan"))),
    )
    again = compute_loss(wild, batch, WEIGHTS)
    torch.testing.assert_close(again.total, terms.total.detach())
    # A batch with no auxiliary labels at all has exactly zero auxiliary terms.
    bare = dataclasses.replace(
        batch,
        next_mask=torch.zeros_like(batch.next_mask),
        next_probs=torch.zeros_like(batch.next_probs),
        length_mask=torch.zeros_like(batch.length_mask),
    )
    zero = compute_loss(out, bare, WEIGHTS)
    assert zero.next_policy.item() == 0.0 and zero.length.item() == 0.0
    torch.testing.assert_close(zero.total, zero.policy + zero.value)


def test_illegal_logits_and_padding_do_not_matter() -> None:
    batch = _batch()
    out = _outputs(len(batch))
    base = compute_loss(out, batch, WEIGHTS)
    shifted = out.policy + torch.where(batch.legal, 0.0, 50.0)
    other = compute_loss(out._replace(policy=shifted), batch, WEIGHTS)
    torch.testing.assert_close(other.policy, base.policy)
    assert (batch.policy_probs == 0).any()  # padded slots exist
    moved = torch.where(batch.policy_probs == 0, torch.full_like(batch.policy_ids, 1879), batch.policy_ids)
    repadded = compute_loss(out, dataclasses.replace(batch, policy_ids=moved), WEIGHTS)
    torch.testing.assert_close(repadded.policy, base.policy)


def test_wdl_from_value() -> None:
    """SPEC 5 value -> W/D/L (implemented by the replay materialiser)."""
    np.testing.assert_allclose(wdl_from_value(1.0), [1, 0, 0])
    np.testing.assert_allclose(wdl_from_value(-1.0), [0, 0, 1])
    np.testing.assert_allclose(wdl_from_value(0.0), [1 / 3, 1 / 3, 1 / 3], rtol=1e-6)
    np.testing.assert_allclose(wdl_from_value(-0.4), [0.2, 0.2, 0.6], rtol=1e-6)
    v = np.linspace(-1, 1, 41)
    w = wdl_from_value(v)
    np.testing.assert_allclose(w.sum(1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(w[:, 0] - w[:, 2], v, atol=1e-6)  # W - L recovers v


def test_outcome_blur_blend_and_length_targets() -> None:
    """SPEC 5 target arithmetic, checked against the formulas written out here."""
    win = np.array([1.0, 0.0, 0.0])
    np.testing.assert_allclose(blur(win, 0), win)
    d = 0.998**100
    np.testing.assert_allclose(blur(win, 100), [d + (1 - d) / 3, (1 - d) / 3, (1 - d) / 3], rtol=1e-6)
    far = blur(np.array([[0, 0, 1.0]]), np.array([10**6]))
    np.testing.assert_allclose(far, [[1 / 3] * 3], rtol=1e-5)
    z = blur(win, 50)
    np.testing.assert_allclose(blend_root_value(z, 0.5, 0.0), z)
    np.testing.assert_allclose(blend_root_value(z, -1.0, 0.1), 0.9 * z + 0.1 * np.array([0, 0, 1.0]), rtol=1e-6)
    with pytest.raises(ValueError, match="beta"):
        blend_root_value(z, 0.0, 1.5)
    labels, mask = length_labels(np.array([0, 200, 400]), capped=False)
    np.testing.assert_allclose(labels, [0.0, 0.5, 1.0])
    assert mask.all()
    _, capped = length_labels(np.array([3, 2]), capped=True)
    assert not capped.any()


def test_reflection_modes() -> None:
    from chesszero import core

    rows = make_rows(64, seed=3)
    planes = rows.input_planes()
    castling = planes[:, 12:16].reshape(64, -1).any(1)
    assert castling.any() and (~castling).any()
    coins = np.random.default_rng(0).random(64) < 0.5
    np.testing.assert_array_equal(reflection_flags(planes, coins, Reflection.NO_CASTLING), coins & ~castling)
    np.testing.assert_array_equal(reflection_flags(planes, coins, Reflection.ALL), coins)
    assert not reflection_flags(planes, coins, Reflection.OFF).any()

    plain = to_train_batch(rows)
    ones = np.ones(64, dtype=bool)
    flipped = to_train_batch(rows, mode=Reflection.ALL, coins=ones)
    assert flipped.reflected.all() and not plain.reflected.any()
    np.testing.assert_array_equal(flipped.planes.numpy(), core.mirror_planes(plain.planes.numpy()))
    table = torch.from_numpy(np.asarray(core.mirror_action_table(), dtype=np.int64))
    np.testing.assert_array_equal(flipped.legal.numpy(), plain.legal[:, table].numpy())
    kept = plain.policy_probs > 0
    torch.testing.assert_close(flipped.policy_ids[kept], table[plain.policy_ids[kept]])
    torch.testing.assert_close(flipped.policy_probs, plain.policy_probs)
    has_next = plain.next_probs > 0
    assert has_next.any()
    torch.testing.assert_close(flipped.next_ids[has_next], table[plain.next_ids[has_next]])
    # Every target action stays legal after reflection.
    assert flipped.legal.gather(1, flipped.policy_ids)[flipped.policy_probs > 0].all()
    default = to_train_batch(rows, mode=Reflection.NO_CASTLING, coins=ones)
    np.testing.assert_array_equal(default.reflected.numpy(), ~castling)
    torch.testing.assert_close(default.planes[castling], plain.planes[castling])


def test_ending_rows_weigh_more_in_the_policy_term_only() -> None:
    """``mate_rows`` / ``stalemate_rows`` scale the policy cross-entropy of rows
    whose position has such a move (the larger weight when it has both); the sum
    is still divided by N, the reported policy term stays unweighted, and the
    default weights of 1 give SPEC 5's loss bit for bit."""
    from chesszero.replay.layout import ENDING_MATE, ENDING_STALEMATE, ENDINGS_KNOWN
    from chesszero.train.loss import ending_row_weights, sparse_cross_entropy

    known = ENDINGS_KNOWN
    bits = np.array([known | ENDING_MATE, known | ENDING_STALEMATE, known | ENDING_MATE | ENDING_STALEMATE,
                     known, 0, known], dtype=np.uint8)
    batch = to_train_batch(dataclasses.replace(make_rows(6), endings=bits), mode=Reflection.ALL,
                           coins=np.ones(6, dtype=bool))  # reflection leaves the bits alone
    endings = batch.endings
    assert endings.tolist() == bits.tolist()
    weights = WEIGHTS.model_copy(update={"mate_rows": 4.0, "stalemate_rows": 8.0})
    assert ending_row_weights(endings, weights).tolist() == [4.0, 8.0, 8.0, 1.0, 1.0, 1.0]
    low = WEIGHTS.model_copy(update={"mate_rows": 3.0, "stalemate_rows": 0.5})
    assert ending_row_weights(endings, low).tolist() == [3.0, 0.5, 3.0, 1.0, 1.0, 1.0]

    out = _outputs(len(batch), requires_grad=True)
    plain = compute_loss(out, batch, WEIGHTS)
    assert torch.equal(plain.policy, sparse_cross_entropy(out.policy, batch.policy_ids, batch.policy_probs,
                                                          batch.legal).sum() / 6)
    weighted = compute_loss(out, batch, weights)
    ce = sparse_cross_entropy(out.policy, batch.policy_ids, batch.policy_probs, batch.legal)
    torch.testing.assert_close(weighted.policy, plain.policy)  # reported unweighted
    expected = (ce * torch.tensor([4.0, 8.0, 8.0, 1.0, 1.0, 1.0])).sum() / 6
    torch.testing.assert_close(weighted.total - plain.total, expected - plain.policy)

    # ordinary rows keep exactly their gradient; an ending row's is scaled by its weight
    g_plain = torch.autograd.grad(plain.total, out.policy, retain_graph=True)[0]
    g_weighted = torch.autograd.grad(weighted.total, out.policy)[0]
    torch.testing.assert_close(g_weighted[3:], g_plain[3:])
    torch.testing.assert_close(g_weighted[0], 4.0 * g_plain[0])
    torch.testing.assert_close(g_weighted[1], 8.0 * g_plain[1])


def test_ending_row_weights_are_checked_by_the_recipe() -> None:
    with pytest.raises(ValueError, match="stalemate_rows"):
        LossWeights(policy=1.0, value=1.0, next_policy=0.15, length=0.1, stalemate_rows=-1.0)
    with pytest.raises(ValueError, match="mate_rows"):
        LossWeights(policy=1.0, value=1.0, next_policy=0.15, length=0.1, mate_rows=1000.0)
    assert (WEIGHTS.mate_rows, WEIGHTS.stalemate_rows) == (1.0, 1.0)
