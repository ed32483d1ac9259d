"""The batch loop between a native tree owner and an evaluator.

A *target* is a native ``Searcher`` or ``Actor``: ``prepare_batch(out) -> n``
writes ``n`` leaf positions into ``out`` (GIL released) and
``submit_results(logits, wdl[, moves_left])`` answers the oldest outstanding
batch (the evaluator's moves-left estimates go with it when it gives them). With
``depth`` > 1 buffers, inference of one batch runs on a worker thread while
the native code prepares the next (ONNX Runtime and torch release the GIL),
so tree work overlaps inference. Python is crossed once per batch.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

import numpy as np

from chesszero import core
from chesszero.search.evaluators import Evaluator, NetworkOutput


class BatchTarget(Protocol):
    def prepare_batch(self, out_planes: np.ndarray) -> int: ...

    def submit_results(self, logits: np.ndarray, wdl: np.ndarray, moves_left: np.ndarray | None = None) -> None: ...


class _Done:
    """An already computed result with the Future interface used here."""

    def __init__(self, value: NetworkOutput) -> None:
        self._value = value

    def result(self) -> NetworkOutput:
        return self._value


class BatchPipeline:
    """Drives ``target`` with ``evaluator`` using ``depth`` planes buffers of ``batch_size``."""

    def __init__(
        self,
        target: BatchTarget,
        evaluator: Evaluator,
        *,
        batch_size: int,
        depth: int = 2,
        threaded: bool | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        self.target = target
        self.evaluator = evaluator
        self.batch_size = batch_size
        self.depth = depth
        shape = (batch_size, int(core.NUM_PLANES), 8, 8)
        self._free = [np.zeros(shape, np.float32) for _ in range(depth)]
        self._pending: deque[tuple[Future[NetworkOutput] | _Done, np.ndarray]] = deque()
        use_thread = depth > 1 if threaded is None else threaded
        self._executor = ThreadPoolExecutor(1, "cz-inference") if use_thread else None
        self.batches = 0
        self.positions = 0

    def close(self) -> None:
        self.flush()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    def __enter__(self) -> BatchPipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def outstanding(self) -> int:
        return len(self._pending)

    def _launch(self) -> int:
        buf = self._free.pop()
        n = self.target.prepare_batch(buf)
        if n == 0:
            self._free.append(buf)
            return 0
        view = buf[:n]
        if self._executor is not None:
            fut: Future[NetworkOutput] | _Done = self._executor.submit(
                self.evaluator.evaluate, view
            )
        else:
            fut = _Done(self.evaluator.evaluate(view))
        self._pending.append((fut, buf))
        self.batches += 1
        self.positions += n
        return n

    def _complete(self) -> None:
        fut, buf = self._pending.popleft()
        self.target.submit_results(*fut.result())
        self._free.append(buf)

    def _round_trip(self) -> bool:
        buf = self._free[0]
        n = self.target.prepare_batch(buf)
        if n == 0:
            return False
        self.target.submit_results(*self.evaluator.evaluate(buf[:n]))
        self.batches += 1
        self.positions += n
        return True

    def step(self, keep_going: Callable[[], bool] = lambda: True) -> bool:
        """Fills the pipeline (while ``keep_going()``), then answers one batch.

        Returns False when nothing was outstanding and nothing could be
        prepared (the target has no work left).
        """
        if self._executor is None and self.depth == 1:  # synchronous: no queue needed
            return keep_going() and self._round_trip()
        while self._free and keep_going():
            if self._launch() == 0:
                break
        if not self._pending:
            return False
        self._complete()
        return True

    def run(self, keep_going: Callable[[], bool] = lambda: True) -> None:
        """Steps until ``keep_going()`` is False or the target runs out of work,
        then answers every outstanding batch."""
        while keep_going() and self.step(keep_going):
            pass
        self.flush()

    def flush(self) -> None:
        """Answers every outstanding batch."""
        while self._pending:
            self._complete()


__all__ = ["BatchPipeline", "BatchTarget"]
