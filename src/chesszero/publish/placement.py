"""Where the self-play actors run: how many, and on which GPU each.

A backend runs on GPUs when it is ``ort-gpu`` or ``tensorrt``, or ``torch``
on a machine where CUDA is visible. Then the campaign runs
``inference.gpus x inference.actors_per_gpu`` actors (``gpus`` 0: every
visible GPU) and actor ``i`` runs on ``cuda:(i mod gpus)``: round robin, so
any prefix of the actors -- the ones that keep playing while a quantum
trains are the first ``overlap_fraction`` of them -- is spread evenly over
the GPUs. Otherwise the actors run on the CPU and there are
``selfplay.actors`` of them. Evaluation and the fidelity gate use device 0.

:func:`resolve_layout` is the pure rule (given the visible GPU count);
:func:`actor_layout` asks this machine. Asking for more GPUs than are
visible is a :class:`~chesszero.publish.backends.BackendError` naming both
numbers (a ``ValueError``: exit status 2 on the command line).
"""

from __future__ import annotations

from dataclasses import dataclass

from chesszero.config import Config
from chesszero.config.schema import Backend, InferenceConfig
from chesszero.publish.backends import BackendError, parse_backend, visible_gpus

__all__ = ["ActorLayout", "actor_device", "actor_layout", "resolve_layout", "runs_on_gpus"]


def actor_device(actor: int, gpus: int) -> int:
    """CUDA ordinal of actor ``actor`` when the actors share ``gpus`` GPUs: ``actor mod gpus``."""
    if actor < 0:
        raise ValueError(f"actor index must be >= 0, got {actor}")
    if gpus < 1:
        raise ValueError(f"actors are placed on at least one GPU, got gpus={gpus}")
    return actor % gpus


def runs_on_gpus(backend: str | Backend, visible: int) -> bool:
    """Whether ``backend`` runs on GPUs on a machine with ``visible`` of them."""
    backend = parse_backend(backend)
    if backend is Backend.ORT_CPU:
        return False
    return backend is not Backend.TORCH or visible > 0


@dataclass(frozen=True)
class ActorLayout:
    """The self-play actors of a campaign: ``actors`` of them, on ``gpus`` GPUs
    with ``actors_per_gpu`` on each (both 0: on the CPU)."""

    actors: int
    gpus: int
    actors_per_gpu: int

    def device(self, actor: int) -> int:
        """CUDA ordinal of actor ``actor`` (0 on the CPU, where backends ignore it)."""
        if not 0 <= actor < self.actors:
            raise ValueError(f"actor {actor} is not one of the {self.actors} actors")
        return actor_device(actor, self.gpus) if self.gpus else 0

    def describe(self) -> str:
        """``'32 actors on the CPU'`` or ``'8 actors: 2 GPUs x 4 per GPU (actor i on cuda:i mod 2)'``."""
        if not self.gpus:
            return f"{self.actors} actors on the CPU"
        return (f"{self.actors} actors: {self.gpus} GPUs x {self.actors_per_gpu} per GPU "
                f"(actor i on cuda:i mod {self.gpus})")


def resolve_layout(inference: InferenceConfig, cpu_actors: int, visible: int) -> ActorLayout:
    """The layout for ``inference`` on a machine with ``visible`` GPUs
    (``cpu_actors``: ``selfplay.actors``, the count when nothing runs on a GPU)."""
    if visible < 0:
        raise ValueError(f"visible GPU count must be >= 0, got {visible}")
    name = inference.backend.value
    if not runs_on_gpus(inference.backend, visible):
        if inference.backend is Backend.TORCH and inference.gpus > 0:
            raise BackendError(f"inference.gpus is {inference.gpus} but no GPU is visible: the {name!r} "
                               "backend would run on the CPU (set inference.gpus: 0 to allow that)")
        return ActorLayout(actors=cpu_actors, gpus=0, actors_per_gpu=0)
    if visible == 0:
        raise BackendError(f"inference backend {name!r} runs on GPUs but no GPU is visible")
    if inference.gpus > visible:
        raise BackendError(f"inference.gpus is {inference.gpus} but only {visible} GPU(s) are visible "
                           f"to the {name!r} backend (set inference.gpus: 0 for every visible GPU)")
    gpus = inference.gpus or visible
    return ActorLayout(actors=gpus * inference.actors_per_gpu, gpus=gpus,
                       actors_per_gpu=inference.actors_per_gpu)


def actor_layout(cfg: Config) -> ActorLayout:
    """The layout of ``cfg``'s actors on this machine (GPUs counted only when
    the backend may use them)."""
    visible = 0 if cfg.inference.backend is Backend.ORT_CPU else visible_gpus()
    return resolve_layout(cfg.inference, cfg.selfplay.actors, visible)
