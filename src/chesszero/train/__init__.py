"""Training (SPEC 5, 8): masked multi-head loss, quantum runner, DDP, checkpoints.

Public API::

    from chesszero.train import Trainer, SampledBatches, init_distributed
    ctx = init_distributed()                         # torchrun env, or single process
    trainer = Trainer(cfg.train, cfg.model.shape, ctx=ctx)
    source = SampledBatches(sampler, global_batch=cfg.train.global_batch,
                            rank=ctx.rank, world_size=ctx.world_size,
                            reflection=cfg.train.reflection, seed=cfg.train.seed)
    stats = trainer.run_quantum(source)              # QuantumStats
    trainer.save(path, extra={"source": source.state_dict(), ...})

Data enters only through :func:`to_train_batch` (replay ``RowBatch`` -> :class:`TrainBatch`).
"""

from chesszero.train.batch import CASTLING_PLANES, TrainBatch, reflection_flags, to_train_batch
from chesszero.train.checkpoint import (
    Checkpoint,
    grow_checkpoint,
    load_checkpoint,
    load_model,
    save_checkpoint,
)
from chesszero.train.distributed import (
    DistContext,
    init_distributed,
    resolve_world_size,
    shutdown_distributed,
    spawn_local,
)
from chesszero.train.loss import LossTerms, compute_loss, sparse_cross_entropy
from chesszero.train.sources import (
    ArraySampler,
    BatchSource,
    GlobalSampler,
    SampledBatches,
    take_rows,
)
from chesszero.train.stats import QuantumStats
from chesszero.train.trainer import Trainer, build_optimizer

__all__ = [
    "CASTLING_PLANES",
    "ArraySampler",
    "BatchSource",
    "Checkpoint",
    "DistContext",
    "GlobalSampler",
    "LossTerms",
    "QuantumStats",
    "SampledBatches",
    "TrainBatch",
    "Trainer",
    "build_optimizer",
    "compute_loss",
    "grow_checkpoint",
    "init_distributed",
    "load_checkpoint",
    "load_model",
    "reflection_flags",
    "resolve_world_size",
    "save_checkpoint",
    "shutdown_distributed",
    "spawn_local",
    "sparse_cross_entropy",
    "take_rows",
    "to_train_batch",
]
