"""CPU threads of in-process training beside other work of the same process.

The campaign trains in its own process while the overlapping actors keep
playing in threads of it (``campaign.overlap_fraction``), each busy on one
core. torch's intra-op pool, left at every core, then competes with them: on
the 2-core machine a 64-step ``cpu`` quantum beside one actor took 53.8 s
with two torch threads and 35.5 s with one, and the actor played its 1,275
positions at 35.0 instead of 27.8 a second (docs/campaign.md, "Training
beside the actors"). :func:`trainer_threads` gives the trainer the cores the
actors leave; :func:`torch_threads` sets a count for a block and restores it;
:func:`training_beside` does both for a block that runs beside busy threads.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["threads_beside", "torch_threads", "trainer_threads", "training_beside", "usable_cpus"]


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


def trainer_threads(busy_threads: int, cpus: int | None = None) -> int:
    """torch intra-op threads for a trainer beside `busy_threads` threads that
    each keep one core busy: the cores left, at least one."""
    if busy_threads < 0:
        raise ValueError(f"busy_threads must be >= 0, got {busy_threads}")
    total = usable_cpus() if cpus is None else cpus
    if total < 1:
        raise ValueError(f"cpus must be >= 1, got {total}")
    return max(1, total - busy_threads)


@contextmanager
def torch_threads(threads: int) -> Iterator[int]:
    """torch's intra-op threads set to `threads` inside the block (process-wide),
    the previous count restored after it, also when the block raises."""
    import torch

    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield threads
    finally:
        torch.set_num_threads(previous)


def threads_beside(busy_threads: int) -> int:
    """torch intra-op threads for a block beside `busy_threads` busy threads:
    torch's present count with none, else the cores they leave
    (:func:`trainer_threads`), never more than torch's present count (its
    default is the physical cores)."""
    import torch

    current = torch.get_num_threads()
    return current if busy_threads == 0 else min(current, trainer_threads(busy_threads))


@contextmanager
def training_beside(busy_threads: int) -> Iterator[int]:
    """:func:`torch_threads` at :func:`threads_beside` for the block."""
    with torch_threads(threads_beside(busy_threads)) as threads:
        yield threads
