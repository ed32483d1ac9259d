"""A network fitted in blocks to a fixed teacher: successive checkpoints for publication studies.

A fresh network predicts an almost flat policy, so publishing it says little
about drift. :class:`TeacherFit` fits a network (Adam, batches of 32) to a
fixed, position-dependent move preference (a random score per action, the
best legal one is the target) and a material-sign WDL on a set of positions
(random play, never the gate's 516), so its policies are peaked and its
BatchNorm statistics real; each :meth:`TeacherFit.fit` call continues from
where the last stopped, so the snapshots between calls are successive
checkpoints whose weights and quantisation ranges move like a training run's.
The publication tests use the same fit (``tests/publish_support.py``).
"""

from __future__ import annotations

import copy

import torch
from torch.nn import functional as F

from chesszero import core
from chesszero.model import ChessNet
from chesszero.publish.calibration import CalibrationSet

__all__ = ["TeacherFit"]


class TeacherFit:
    """Fits ``ChessNet(size)`` to the teacher on ``positions``; seeded, deterministic."""

    def __init__(self, size: str, positions: CalibrationSet, *, seed: int = 0, lr: float = 3e-3) -> None:
        torch.manual_seed(seed)
        self.net = ChessNet(size).train()
        self.planes = torch.from_numpy(positions.planes.copy())
        self.legal = torch.from_numpy(positions.legal.copy())
        self.generator = torch.Generator().manual_seed(seed)
        preference = torch.randn(core.NUM_ACTIONS, generator=self.generator)
        self.policy_target = torch.where(self.legal, preference, torch.tensor(-1e9)).argmax(dim=1)
        ahead = self.planes[:, 40:46, 0, 0].sum(dim=1)
        self.wdl_target = torch.where(ahead > 0, 0, torch.where(ahead < 0, 2, 1))
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=lr)
        self.steps = 0

    def fit(self, steps: int) -> ChessNet:
        """``steps`` more optimizer steps; returns an eval-mode copy of the network."""
        self.net.train()
        for _ in range(steps):
            index = torch.randint(0, len(self.planes), (32,), generator=self.generator)
            out = self.net(self.planes[index])
            logits = out.policy.masked_fill(~self.legal[index], -1e9)
            loss = F.cross_entropy(logits, self.policy_target[index]) + F.cross_entropy(
                out.wdl, self.wdl_target[index])
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        self.steps += steps
        return copy.deepcopy(self.net).eval()
