"""Function-preserving growth (chesszero.model.grow, `chesszero grow`): a grown
network computes the source's policy and WDL (max abs difference below 1e-4),
still trains, refuses to shrink, and the command line round-trips a checkpoint."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
import torch
from publish_support import random_games
from train_support import make_rows, one_thread, reference_table, requires_core

from chesszero import core
from chesszero.cli import main
from chesszero.config import load_config
from chesszero.model import ChessNet, grow
from chesszero.publish.calibration import load_calibration_set
from chesszero.train import (
    ArraySampler,
    SampledBatches,
    Trainer,
    compute_loss,
    load_checkpoint,
    load_model,
    to_train_batch,
)

pytestmark = requires_core
__all__ = ["one_thread"]  # autouse fixture
TABLE = reference_table()
TOLERANCE = 2e-5  # docs/recipe.md: "agree with the source to about 1e-5" (measured up to 1e-5 on next_policy)
CASES = {"depth": ("2x16", "5x16"), "width": ("3x16", "3x28"), "both": ("4x48", "6x64"),
         "squeeze-excite": ("4x48-se4", "6x64-se4")}


def perturbed(size: str, seed: int = 0, *, head_scale: float = 300.0) -> ChessNet:
    """A network whose BatchNorm statistics and affine parameters are far from their
    defaults and whose final head layers are scaled up, so policy and WDL logits are
    of order one (at initialisation they are ~1e-3 and any error would hide below 1e-4)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = ChessNet(size, table=TABLE)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(torch.rand(n, generator=gen) - 0.5)
                m.running_var.copy_(0.5 + 1.5 * torch.rand(n, generator=gen))
                m.weight.copy_(0.5 + torch.rand(n, generator=gen))
                m.bias.copy_(0.6 * torch.rand(n, generator=gen) - 0.3)
        for head in (net.policy_head, net.next_policy_head):
            assert head is not None
            head.query.weight.mul_(300.0)
            head.promotion.weight.mul_(100.0)
        net.value_head.fc2.weight.mul_(300.0)
        for block in net.blocks:  # gates spread over (0, 1), not all near sigmoid(0)
            if block.se is not None:
                block.se.fc2.weight.mul_(20.0)
    return net.eval()


@functools.cache
def random_planes() -> torch.Tensor:
    return torch.from_numpy(np.asarray(core.encode_batch(random_games(48, seed=7))))


@functools.cache
def calibration_planes() -> torch.Tensor:
    return torch.from_numpy(np.array(load_calibration_set(limit=64).planes))


def max_differences(a: torch.nn.Module, b: torch.nn.Module, planes: torch.Tensor) -> dict[str, float]:
    with torch.no_grad():
        oa, ob = a(planes), b(planes)
    return {name: float((x - y).abs().max()) for name, x, y in zip(oa._fields, oa, ob, strict=True)}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("positions", ["random", "calibration"])
def test_growth_preserves_outputs(case: str, positions: str) -> None:
    source_size, target_size = CASES[case]
    source = perturbed(source_size)
    grown = grow(source, target_size, table=TABLE)
    assert grown.size.name == target_size and not grown.training
    planes = random_planes() if positions == "random" else calibration_planes()
    with torch.no_grad():
        out = source(planes)
    assert out.policy.std() > 0.15 and out.wdl.std() > 0.2  # outputs big enough to show an error
    diff = max_differences(source, grown, planes)
    print(f"{case} {source_size} -> {target_size} on {positions}: {diff}; "
          f"std policy {out.policy.std():.2f} wdl {out.wdl.std():.2f}")
    assert max(diff.values()) < TOLERANCE, diff


def test_the_comparison_detects_a_wrong_growth() -> None:
    """Each ingredient matters: undo one and the outputs move far beyond the tolerance."""
    source = perturbed("4x48")
    planes = random_planes()
    grown = grow(source, "6x64", table=TABLE)
    with torch.no_grad():
        grown.blocks[5].bn2.weight.fill_(1.0)  # an appended block that is not an identity
    assert max_differences(source, grown, planes)["policy"] > 1e-2
    grown = grow(source, "6x64", table=TABLE)
    with torch.no_grad():
        grown.blocks[0].bn2.weight.div_((6 / 4) ** 0.5)  # no compensation for the 1/sqrt(B) scale
        grown.blocks[0].bn2.bias.div_((6 / 4) ** 0.5)
    assert max_differences(source, grown, planes)["policy"] > 1e-2
    grown = grow(source, "6x64", table=TABLE)
    with torch.no_grad():
        grown.blocks[1].bn1.running_mean[60] += 0.5  # a copied unit without its statistics
    assert max_differences(source, grown, planes)["wdl"] > 1e-3


def test_growth_is_seeded_and_leaves_the_source_alone() -> None:
    source = perturbed("2x16")
    before = {k: v.clone() for k, v in source.state_dict().items()}
    a = grow(source, "3x24", table=TABLE, seed=1).state_dict()
    b = grow(source, "3x24", table=TABLE, seed=1).state_dict()
    c = grow(source, "3x24", table=TABLE, seed=2).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["stem_conv.weight"], c["stem_conv.weight"])
    assert all(torch.equal(before[k], v) for k, v in source.state_dict().items())
    same = grow(source, "2x16", table=TABLE)  # equal size: a copy
    assert all(torch.equal(before[k], v) for k, v in same.state_dict().items())
    lite = ChessNet("2x16", table=TABLE, aux_heads=False)
    assert not grow(lite, "3x16", table=TABLE).has_aux_heads


@pytest.mark.parametrize(("source_size", "target_size"), [("4x48", "3x64"), ("4x48", "6x32"), ("4x48", "2x16")])
def test_shrinking_is_refused_naming_both_sizes(source_size: str, target_size: str) -> None:
    with pytest.raises(ValueError, match=rf"{source_size} network to {target_size}"):
        grow(ChessNet(source_size, table=TABLE), target_size, table=TABLE)


@pytest.mark.parametrize(("source_size", "target_size"),
                         [("2x16", "3x24-se4"), ("2x16-se4", "3x24"), ("2x16-se4", "3x24-se2")])
def test_squeeze_excitation_must_match(source_size: str, target_size: str) -> None:
    with pytest.raises(ValueError, match=rf"{source_size} network to {target_size}: squeeze-and-excitation"):
        grow(ChessNet(source_size, table=TABLE), target_size, table=TABLE)


def test_a_wrong_gate_growth_is_detected() -> None:
    """Without the depth factor on the gate's first layer the grown gates differ."""
    source = perturbed("4x48-se4")
    grown = grow(source, "6x64-se4", table=TABLE)
    with torch.no_grad():
        grown.blocks[0].se.fc1.weight.mul_((6 / 4) ** 0.5)
    assert max(max_differences(source, grown, random_planes()).values()) > 1e-3


def test_the_grown_network_trains_and_its_copies_diverge() -> None:
    """A few SGD steps on a tiny batch lower the loss; the appended blocks leave the
    identity and copied channels stop being copies (their weight splits differ)."""
    weights = load_config(preset="smoke").train.loss_weights
    batch = to_train_batch(make_rows(16, seed=3))
    net = grow(perturbed("2x16", head_scale=1.0), "4x24", table=TABLE).train()
    stem = net.stem_conv.weight.detach().clone()
    copies = [(j, i) for j in range(16, 24) for i in range(16) if torch.equal(stem[j], stem[i])]
    assert len(copies) == 8
    opt = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.9)
    losses = []
    for _ in range(8):
        opt.zero_grad()
        loss = compute_loss(net(batch.planes), batch, weights).total
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        losses.append(loss.detach().item())
    print(f"losses {losses}")
    assert losses[-1] < 0.8 * losses[0], losses
    assert all(net.blocks[i].bn2.weight.detach().abs().max() > 0 for i in (2, 3))
    assert all(not torch.allclose(net.stem_conv.weight[j], net.stem_conv.weight[i]) for j, i in copies)


# ---------------------------------------------------------------- command line


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2x16 training checkpoint after two steps, with sampler and ledger state."""
    cfg = load_config(preset="smoke", overrides={"train": {"global_batch": 8}}).train
    trainer = Trainer(cfg, "2x16")
    source = SampledBatches(ArraySampler(make_rows(24, seed=5), seed=0), global_batch=8,
                            reflection=cfg.reflection, seed=0)
    trainer.run_quantum(source, steps=2)
    path = trainer.save(tmp_path_factory.mktemp("grow") / "small.pt",
                        extra={"source": source.state_dict(), "ledger": {"credit": 3}, "generation": 4})
    assert path is not None
    return path


def test_cli_grow_round_trip(checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "grown.pt"
    assert main(["grow", "--checkpoint", str(checkpoint), "--size", "3x24", "--out", str(out)]) == 0
    assert '"size": "3x24"' in capsys.readouterr().out
    diff = max_differences(load_model(checkpoint), load_model(out), random_planes())
    print(f"cli 2x16 -> 3x24 on random: {diff}")
    assert max(diff.values()) < TOLERANCE, diff
    small, grown = load_checkpoint(checkpoint), load_checkpoint(out)
    assert small.step == 2 and (grown.model_size, grown.step) == ("3x24", 2)
    assert grown.extra == {**small.extra, "grown_from": {"size": "2x16", "step": 2}}
    assert grown.optimizer["state"] == {}  # momentum restarts; hyperparameters kept
    hyper = {k: v for k, v in small.optimizer["param_groups"][0].items() if k != "params"}
    assert {k: v for k, v in grown.optimizer["param_groups"][0].items() if k != "params"} == hyper
    # The trainer of the new size resumes it and trains on.
    cfg = load_config(preset="smoke", overrides={"train": {"global_batch": 8}}).train
    trainer = Trainer(cfg, "3x24")
    extra = trainer.restore(out)
    assert trainer.step == 2 and extra["ledger"] == {"credit": 3}
    source = SampledBatches(ArraySampler(make_rows(24, seed=5), seed=0), global_batch=8,
                            reflection=cfg.reflection, seed=0)
    source.load_state_dict(extra["source"])
    stats = trainer.run_quantum(source, steps=1)
    assert trainer.step == 3 and np.isfinite(stats.loss_total)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--checkpoint", "/nonexistent/c.pt", "--size", "3x24"], "checkpoint not found: '/nonexistent/c.pt'"),
        (["--size", "3-24"], "model size must look like 'BxC'"),
        (["--size", "2x12"], "cannot grow a 2x16 network to 2x12"),
        (["--size", "1x32"], "cannot grow a 2x16 network to 1x32"),
    ],
)
def test_cli_grow_bad_input_is_one_line(
    args: list[str], says: str, checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["grow", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "o.pt"), *args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("chesszero grow: error: "), err
    assert says in err, err
    assert not (tmp_path / "o.pt").exists()


def test_an_adamw_checkpoint_grows_and_resumes_with_adamw(tmp_path: Path) -> None:
    """Growth keeps the optimizer's kind: Adam's hyperparameters, fresh moments."""
    from chesszero.train.checkpoint import grow_checkpoint

    cfg = load_config(preset="smoke", overrides={"train": {"global_batch": 8, "optimizer": "adamw"}}).train
    trainer = Trainer(cfg, "2x16")
    source = SampledBatches(ArraySampler(make_rows(24, seed=6), seed=0), global_batch=8,
                            reflection=cfg.reflection, seed=0)
    trainer.run_quantum(source, steps=2)
    path = trainer.save(tmp_path / "adamw.pt")
    assert path is not None
    grown = grow_checkpoint(load_checkpoint(path), "3x24")
    assert grown.optimizer["state"] == {} and "betas" in grown.optimizer["param_groups"][0]
    bigger = Trainer(cfg, "3x24")
    bigger.restore(grown)
    stats = bigger.run_quantum(source, steps=2)
    assert bigger.step == 4 and np.isfinite(stats.loss_total)
    assert all("exp_avg" in s for s in bigger.optimizer.state.values())
