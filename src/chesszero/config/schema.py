"""Typed recipe: pydantic v2 models for every section of ``params.yaml``.

Every model forbids unknown keys and range-checks its fields; values have no
defaults here because ``params.yaml`` is the single source of the recipe
(its ``defaults`` block is the paper recipe, presets override parts of it).
Sections: :class:`ModelConfig`, :class:`SearchConfig`, :class:`SelfplayConfig`,
:class:`ReplayConfig`, :class:`TrainConfig`, :class:`PublishConfig`,
:class:`EvaluateConfig`, :class:`InferenceConfig`, :class:`CampaignConfig`,
gathered in :class:`Config`.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from chesszero.config.distill import DistillConfig
from chesszero.config.nnue import NnueConfig
from chesszero.config.publish import PublishConfig, QatWhen
from chesszero.config.rungs import DEFAULT_RUNGS
from chesszero.config.schedules import LinearSchedule, StepSchedule
from chesszero.config.sizes import ModelSize, parse_size

__all__ = [
    "Backend",
    "CampaignConfig",
    "Config",
    "DistillConfig",
    "EvaluateConfig",
    "InferenceConfig",
    "LossWeights",
    "ModelConfig",
    "NnueConfig",
    "OptimizerKind",
    "CandidateStart",
    "GumbelConfig",
    "RootRule",
    "CutTarget",
    "LateTailConfig",
    "ProgressiveConfig",
    "PublishConfig",
    "QatWhen",
    "Reflection",
    "ReplayConfig",
    "ResignConfig",
    "RestartConfig",
    "SearchConfig",
    "SelfplayConfig",
    "TrainConfig",
]

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
PositiveInt = Annotated[int, Field(ge=1)]
NonNegFloat = Annotated[float, Field(ge=0.0)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OptimizerKind(str, Enum):
    """The trainer's optimizer (SPEC 8 names SGD; AdamW is this project's measured option)."""

    SGD = "sgd"
    """SGD with the recipe's momentum and Nesterov switch (the paper)."""
    ADAMW = "adamw"
    """AdamW (default betas 0.9, 0.999): decoupled weight decay, lr x weight_decay a step."""


class Reflection(str, Enum):
    """File-reflection augmentation mode (SPEC 8)."""

    NO_CASTLING = "no_castling"
    """Reflect only rows where neither side holds a castling right."""
    ALL = "all"
    """Reflect any row (castling planes are swapped king/queen side)."""
    OFF = "off"
    """Never reflect."""


def _plain_size(value: str, key: str) -> str:
    size = parse_size(value)
    if not size.plain:
        raise ValueError(f"{key} {value!r}: give blocks and channels only ('{size.blocks}x{size.channels}'); "
                         "squeeze-and-excitation is model.se_ratio and attack planes model.attack_planes, "
                         "for every size of the campaign")
    return size.name


class ModelConfig(_Section):
    size: str = Field(description="Trunk 'BxC': 14x160 (paper), 6x64 (cpu), any BxC with C % 4 == 0.")
    se_ratio: int = Field(ge=0, description="Squeeze-and-excitation on every block's branch with hidden "
                          "width C / se_ratio (0: off, SPEC 4's blocks; issue 22), for every size of the campaign.")
    attack_planes: bool = Field(description="Two more stem input planes, the squares each side attacks, computed "
                                "inside the network from the piece planes (sizes 'BxC-at'; issue 22, not in "
                                "SPEC 4), for every size of the campaign.")

    @field_validator("size")
    @classmethod
    def _valid_size(cls, value: str) -> str:
        return _plain_size(value, "model.size")

    @model_validator(mode="after")
    def _valid_ratio(self) -> ModelConfig:
        self.shape  # noqa: B018 (raises when the ratio does not fit the channels)
        return self

    @property
    def shape(self) -> ModelSize:
        """Blocks, channels, squeeze-and-excitation and attack planes as a :class:`ModelSize`."""
        return parse_size(self.size).with_se(self.se_ratio).with_attacks(self.attack_planes)


class RootRule(str, Enum):
    """How the root spends its visits (SPEC 6); below the root it is PUCT."""

    PUCT = "puct"
    """PUCT with Dirichlet noise and forced playouts; visit counts are the policy target."""
    GUMBEL = "gumbel"
    """Gumbel top-m sampling and sequential halving (Danihelka et al., ICLR 2022);
    the completed-Q improved policy is the target; no noise, temperature or forced playouts."""


class GumbelConfig(_Section):
    considered: int = Field(ge=1, le=256, description="Root moves considered: m = min(this, visits, legal).")
    c_visit: float = Field(ge=0.0, le=1e6, description="sigma(q) = (c_visit + max N) * c_scale * q.")
    c_scale: float = Field(gt=0.0, le=1e3, description="sigma(q) = (c_visit + max N) * c_scale * q.")


class MovesLeftConfig(_Section):
    """Lc0's moves-left utility (SPEC 6; docs/search.md): the side ahead prefers shorter lines."""

    slope: float = Field(
        ge=0.0, le=1.0,
        description="Utility per ply of difference between a child's and its parent's mean plies left; "
        "0: off. Above 0 the published artifacts keep the length head (a third output, plies left).")
    cap: float = Field(ge=0.0, le=1.0, description="Largest |utility| added to a child's Q.")
    linear: float = Field(ge=-10.0, le=10.0, description="Utility shape: factor of |q|.")
    quadratic: float = Field(ge=-10.0, le=10.0, description="Utility shape: factor of q^2.")

    @property
    def enabled(self) -> bool:
        return self.slope > 0.0


class SearchConfig(_Section):
    c_puct_selfplay: float = Field(gt=0.0, le=20.0, description="PUCT constant in self-play.")
    c_puct_eval: float = Field(gt=0.0, le=20.0, description="PUCT constant in evaluation.")
    fpu_reduction: float = Field(ge=0.0, le=2.0, description="Unvisited child Q = parent Q - this.")
    dirichlet_epsilon: Fraction = Field(description="Root noise weight (self-play only).")
    dirichlet_alpha: float = Field(gt=0.0, le=10.0, description="Root Dirichlet concentration.")
    forced_playout_k: NonNegFloat = Field(le=10.0, description="Forced while N < sqrt(k P N_root).")
    discount: float = Field(gt=0.0, le=1.0, description="Backed-up value factor per ply.")
    subtree_retention: Fraction = Field(description="Share of visit statistics kept on reuse.")
    leaves_per_tree: PositiveInt = Field(le=256, description="In-flight traversals per tree.")
    visit_cap: StepSchedule[PositiveInt] = Field(description="Visits per recorded move, by generation.")
    proven_results: bool = Field(
        description="MCTS-solver: game-ending children recognised at expansion, proven results "
        "propagate up, the root plays the shortest proven win (self-play and evaluation).")
    twofold_draws: bool = Field(
        description="Inside the tree a repetition of the game or path scores a draw (the game "
        "itself ends at threefold; self-play and evaluation).")
    draw_score: float = Field(
        ge=0.0, le=1.0,
        description="Self-play only: a draw is worth -draw_score to the side ahead at the root "
        "(root value > 0) and +draw_score to the other side (0: draws are worth 0).")
    root: RootRule = Field(
        description="Root rule in self-play and evaluation: 'puct' or 'gumbel' (with gumbel, the visit "
        "cap counts each search's own simulations; retained visits are extra).")
    eval_root: RootRule | None = Field(
        default=None,
        description="Root rule of evaluation and promotion matches when it differs from self-play's "
        "(null: `root`); e.g. Gumbel targets in self-play, PUCT's deeper 64-visit trees in play.")
    gumbel: GumbelConfig
    moves_left: MovesLeftConfig


class RestartConfig(_Section):
    min_plies_left: int = Field(ge=0, description="Plies left in the source game to be eligible.")
    max_abs_value: Fraction = Field(description="Eligible only when |root value| <= this.")
    min_leading_actions: PositiveInt = Field(description="Fewest leading actions covering the mass.")
    max_leading_actions: PositiveInt = Field(description="Most leading actions covering the mass.")
    leading_mass: Fraction = Field(description="Visit mass the leading actions must cover.")
    uniform_fraction: Fraction = Field(description="Share of picks made uniformly.")
    max_age_generations: PositiveInt = Field(description="Evict entries older than this.")
    capacity: PositiveInt = Field(description="Archive entries per actor.")

    @model_validator(mode="after")
    def _ordered(self) -> RestartConfig:
        if self.min_leading_actions > self.max_leading_actions:
            raise ValueError("min_leading_actions must be <= max_leading_actions")
        return self


class ResignConfig(_Section):
    enabled: bool = Field(description="Allow resignation at all (continuation games never resign).")
    threshold_min: float = Field(ge=-1.0, le=0.0, description="Strictest candidate threshold.")
    threshold_max: float = Field(ge=-1.0, le=0.0, description="Loosest candidate threshold.")
    threshold_step: float = Field(gt=0.0, le=0.5, description="Grid step and max relax per publication.")
    min_triggers: PositiveInt = Field(description="Observed triggers needed to trust a threshold.")
    window_games: PositiveInt = Field(description="Continuation games in the evidence window.")
    max_false_rate: Fraction = Field(description="Upper bound on false resignations.")
    confidence: float = Field(gt=0.5, lt=1.0, description="One-sided confidence of that bound.")

    @model_validator(mode="after")
    def _ordered(self) -> ResignConfig:
        if self.threshold_min > self.threshold_max:
            raise ValueError("threshold_min must be <= threshold_max")
        return self


class CutTarget(str, Enum):
    """Where a game cut at the ply cap takes its outcome target (paper 4.2.6, 6.1)."""

    DEDICATED = "dedicated"
    """A dedicated full search at the cut position (the retained worker)."""
    PRECEDING = "preceding"
    """The preceding recorded search's root value, sign reversed (the paper's affected run)."""


class LateTailConfig(_Section):
    """The paper's earlier (affected) self-play design, 6.1; off by default.

    From ``from_ply`` on (game ply, prefix included) searches use
    ``visit_cap // visits_divisor`` visits (at least 2) and give no training
    row; they count as ineligible plies. ``cut_target`` picks the cap value.
    """

    from_ply: StepSchedule[Annotated[int, Field(ge=1, le=10000)] | None] = Field(
        description="First cheap, untrained tail ply by generation (null: off); a bare int or null "
        "holds for every generation.")
    visits_divisor: int = Field(ge=1, le=1_000_000, description="Tail searches use visit_cap // this.")
    cut_target: CutTarget = Field(description="dedicated (retained) | preceding (the paper's affected run).")

    @field_validator("from_ply", mode="before")
    @classmethod
    def _constant(cls, value: Any) -> Any:
        return [[0, value]] if value is None or isinstance(value, int) else value

    @property
    def is_off(self) -> bool:
        """True when the setting changes nothing: the retained design throughout."""
        return all(v is None for v in self.from_ply.values) and self.cut_target is CutTarget.DEDICATED


class SelfplayConfig(_Section):
    actors: PositiveInt = Field(
        description="Self-play actors when inference runs on the CPU (on GPUs: inference.gpus x "
        "inference.actors_per_gpu).")
    games_in_flight: PositiveInt = Field(description="Interleaved games per actor.")
    batch_size: PositiveInt = Field(description="Positions per inference batch.")
    temperature: LinearSchedule[NonNegFloat] = Field(description="Move-sampling temperature by ply.")
    greedy_after_ply: int = Field(ge=0, description="Play the most-visited move from this ply on.")
    ply_cap: StepSchedule[PositiveInt] = Field(description="Game length cap by generation.")
    material_assist: LinearSchedule[Fraction] = Field(
        description="Weight of a material evaluation blended into self-play leaf values, by generation "
        "(0: pure AlphaZero; reference 004's lever against the draw cycle).")
    material_scale: float = Field(gt=0.0, description="Pawns per unit of tanh in the material evaluation.")
    random_opening_min_plies: int = Field(ge=0, le=40, description="Fewest random opening plies.")
    random_opening_max_plies: int = Field(ge=0, le=40, description="Most random opening plies.")
    restart_fraction: Fraction = Field(description="Share of games started from the restart archive.")
    odds_fraction: Fraction = Field(
        description="Share of the other games started from a material-odds position: a random opening, then "
        "pieces taken from one side (a curriculum of lopsided, decisive games; not in the paper; 0: off).")
    odds_min_material: int = Field(ge=1, le=39, description="Fewest pawns an odds start takes (P1 N3 B3 R5 Q9).")
    odds_max_material: int = Field(ge=1, le=39, description="Most pawns an odds start takes.")
    random_opponent_fraction: Fraction = Field(
        default=0.0,
        description="Share of the games started neither from the archive nor from odds that are played "
        "against a uniformly random mover: after the random opening the side to move searches, the other "
        "plays random legal moves (no search, no row); lopsided positions where the raw policy must mate. "
        "Not in the paper; 0: off.")
    random_opponent_min_lead: int = Field(
        default=5, ge=0, le=39,
        description="Against the random mover, the searching side's moves are fast searches (no row) "
        "until it leads by this many pawns of material, then full recorded searches (0: every move).")
    random_opponent_policy_fraction: float = Field(
        default=0.0, ge=0.0, lt=1.0,
        description="Against the random mover, the share of the searching side's moves played by the raw "
        "policy (top prior, no search, no row), so the recorded searches start from the positions the raw "
        "policy reaches (DAgger). Not in the paper; 0: off.")
    continuation_fraction: Fraction = Field(description="Share of games that never resign.")
    full_search_fraction: float = Field(
        gt=0.0, le=1.0,
        description="Playout-cap randomisation (KataGo): share of moves given the full search and recorded "
        "as training rows; the others get a fast search (fast_visits, no noise), played, not recorded. 1: off.")
    fast_visits: PositiveInt = Field(le=1_000_000, description="Visits of a fast (unrecorded) search.")
    restart: RestartConfig
    resign: ResignConfig
    late_tail: LateTailConfig

    @model_validator(mode="after")
    def _ordered(self) -> SelfplayConfig:
        if self.random_opening_min_plies > self.random_opening_max_plies:
            raise ValueError("random_opening_min_plies must be <= random_opening_max_plies")
        if self.odds_min_material > self.odds_max_material:
            raise ValueError("odds_min_material must be <= odds_max_material")
        tail = [v for v in self.late_tail.from_ply.values if v is not None]
        if tail and min(tail) <= self.random_opening_max_plies:
            raise ValueError(f"late_tail.from_ply ({min(tail)}) must exceed random_opening_max_plies "
                             f"({self.random_opening_max_plies}): every random opening needs a trained search")
        return self


class ReplayConfig(_Section):
    capacity: PositiveInt = Field(description="Rows preallocated in the memmap ring.")
    logical_capacity: StepSchedule[PositiveInt] = Field(description="Live window by generation.")
    reuse_ratio: float = Field(gt=0.0, le=100.0, description="Presentations funded per admitted row.")
    surprise_fraction: Fraction = Field(description="Share of draws weighted by policy surprise.")
    surprise_cap: float = Field(gt=0.0, description="Cap on KL(pi_search || p_prior) as a weight.")
    outcome_discount: float = Field(gt=0.0, le=1.0, description="Per-remaining-ply outcome blur.")
    value_blend: LinearSchedule[Fraction] = Field(description="Root-value blend beta by generation.")
    length_scale: float = Field(gt=0.0, description="Remaining-length label divisor.")

    @model_validator(mode="after")
    def _fits(self) -> ReplayConfig:
        if max(self.logical_capacity.values) > self.capacity:
            raise ValueError("logical_capacity entries must not exceed capacity")
        return self


class LossWeights(_Section):
    policy: NonNegFloat
    value: NonNegFloat
    next_policy: NonNegFloat
    length: NonNegFloat
    mate_rows: float = Field(
        default=1.0, ge=0.0, le=100.0,
        description="Policy-loss weight of a row whose position has a checkmating move (1: SPEC 5, "
        "every row weighs 1). Beyond the paper (issue 22): teaches the raw policy rare endings.")
    stalemate_rows: float = Field(
        default=1.0, ge=0.0, le=100.0,
        description="Policy-loss weight of a row whose position has a stalemating move (1: SPEC 5). "
        "A row with both takes the larger weight.")


class TrainConfig(_Section):
    steps_per_quantum: PositiveInt = Field(description="Optimizer steps per training quantum.")
    global_batch: PositiveInt = Field(description="Rows per optimizer step over all ranks.")
    world_size: int = Field(
        ge=0, le=1024,
        description="DDP ranks (1 = single process; 0 = one per visible CUDA GPU, 1 without one: "
        "chesszero.train.resolve_world_size).")
    micro_batches: PositiveInt = Field(
        description="Gradient-accumulation chunks per rank and step (BatchNorm sees one chunk)."
    )
    optimizer: OptimizerKind = Field(
        default=OptimizerKind.SGD,
        description="sgd (the paper: momentum, nesterov) or adamw (momentum and nesterov unused; "
        "its lr schedule is on Adam's scale, ~1e-3).")
    momentum: float = Field(ge=0.0, lt=1.0)
    nesterov: bool
    weight_decay: NonNegFloat = Field(le=1.0)
    grad_clip: float = Field(gt=0.0, description="Max global gradient norm.")
    lr: LinearSchedule[Annotated[float, Field(ge=0.0, le=10.0)]] = Field(
        description="Learning rate by optimizer step (warmup then linear decay)."
    )
    bf16: bool = Field(description="bfloat16 autocast for forward and loss.")
    reflection: Reflection
    loss_weights: LossWeights
    seed: int = Field(ge=0)

    @model_validator(mode="after")
    def _divisible(self) -> TrainConfig:
        if self.global_batch % (max(1, self.world_size) * self.micro_batches) != 0:
            raise ValueError(
                f"global_batch {self.global_batch} is not divisible by world_size {self.world_size}"
                f" x micro_batches {self.micro_batches}"
            )
        return self

    @property
    def local_batch(self) -> int:
        """Rows per rank per step (of a resolved world size)."""
        if self.world_size == 0:
            raise ValueError("train.world_size 0 (one rank per GPU) is resolved on the machine that "
                             "trains: chesszero.train.resolve_world_size")
        return self.global_batch // self.world_size


def _ladder_rung_names() -> list[str]:
    """Rung names of the ladder (owned by ``chesszero.config.rungs``)."""
    return [rung.name for rung in DEFAULT_RUNGS]


class EvaluateConfig(_Section):
    openings: PositiveInt = Field(description="Openings per match (each played twice).")
    visits: PositiveInt = Field(description="Visits per move in ladder matches.")
    cadence_generations: PositiveInt = Field(description="Evaluate every this many generations.")
    ply_cap: PositiveInt = Field(description="Match games reaching it score a draw.")
    bootstrap_resamples: PositiveInt
    promotion_score: Fraction = Field(description="Candidate score needed per paired match.")
    promotion_consecutive: PositiveInt = Field(description="Consecutive passing matches needed.")
    rungs: list[str] = Field(
        min_length=1,
        description="Ladder rungs the campaign plays, by name (chesszero.config.rungs.DEFAULT_RUNGS).",
    )
    adaptive_rungs: int = Field(
        ge=0, le=64,
        description="0: every evaluation plays every rung of `rungs`; k > 0: the k rungs of `rungs` nearest a "
        "0.5 score at the previous evaluation's joint rating for the same mode (the weakest k at first; "
        "chesszero.evaluate.rung_choice.nearest_rungs).")
    parallel_matches: int = Field(
        ge=0, le=256,
        description="Ladder matches of one evaluation played side by side, each in its own thread "
        "(0: one per CPU the process may use). A match's games do not depend on it, only its wall time.")

    @field_validator("rungs")
    @classmethod
    def _known_rungs(cls, value: list[str]) -> list[str]:
        known = _ladder_rung_names()
        unknown = [name for name in value if name not in known]
        if unknown:
            raise ValueError(f"unknown ladder rungs {unknown}; known: {known}")
        if len(set(value)) != len(value):
            raise ValueError(f"ladder rungs must be unique, got {value}")
        return value


class Backend(str, Enum):
    """Inference runtime of every stage that runs a published artifact
    (``chesszero.publish.backends`` builds it and says when it cannot run)."""

    ORT_CPU = "ort-cpu"
    """ONNX Runtime, CPU execution provider (INT8 kernels on x86)."""
    TORCH = "torch"
    """PyTorch from the deployment state beside the artifact: CUDA with autocast and
    CUDA graphs when a GPU is visible, float32 on the CPU otherwise."""
    ORT_GPU = "ort-gpu"
    """ONNX Runtime's CUDA (and TensorRT, when listed) execution providers (onnxruntime-gpu)."""
    TENSORRT = "tensorrt"
    """A native TensorRT engine built once and refitted per artifact (tensorrt package, GPU)."""


class InferenceConfig(_Section):
    backend: Backend = Field(
        description="Runtime of self-play, evaluation, the promotion matches and the fidelity "
        "gate: ort-cpu | torch | ort-gpu | tensorrt (checked at campaign start).")
    gpus: int = Field(
        ge=0, le=1024,
        description="GPUs the self-play actors run on when the backend runs on GPUs (ort-gpu, "
        "tensorrt; torch when CUDA is visible): the first this many visible devices, 0 = every "
        "visible GPU. More than are visible is an error at campaign start. "
        "chesszero.publish.placement.ActorLayout.")
    actors_per_gpu: PositiveInt = Field(
        le=64,
        description="Self-play actors sharing each GPU, each with its own session, stream and "
        "batches in flight (the paper: 4). On GPUs the campaign runs gpus x actors_per_gpu "
        "actors in place of selfplay.actors; actor i runs on cuda:(i mod gpus).")


class CampaignConfig(_Section):
    generations: PositiveInt = Field(description="Generations (train quanta) to run.")
    wall_clock_hours: float = Field(gt=0.0, description="Stop after this much wall time.")
    seed: int = Field(ge=0)
    eval_visit_budgets: list[Annotated[int, Field(ge=0)]] = Field(
        min_length=1,
        description="Visits per move of the strength-vs-budget table (0 = raw policy, no search).",
    )
    checkpoint_every: PositiveInt = Field(description="Keep a training checkpoint every this many generations.")
    snapshot_every: PositiveInt = Field(description="Snapshot the replay store (DVC) every this many generations.")
    overlap_fraction: Fraction = Field(description="Share of actors that keep playing while training runs.")
    dask_address: str | None = Field(description="Dask scheduler address (null: actors run as threads of the campaign process).")
    materialize_workers: int = Field(ge=0, le=256, description="Materialisation processes (0: in-process).")
    actor_attempts: int = Field(
        ge=1, le=100,
        description="Attempts per self-play actor job before the campaign stops (a failed attempt, e.g. on a "
        "lost Dask worker, is resubmitted away from the worker it failed on).")
    max_rejected_shard_fraction: float = Field(
        ge=0.0, lt=1.0,
        description="Share of a generation's self-play shards that may fail validation and be quarantined "
        "(kept under runs/<name>/rejected/ with the reason) while the campaign goes on; one more stops it "
        "(0: any bad shard stops it).")
    promotion_matches: bool = Field(
        default=False,
        description="Gate each fidelity-passing artifact on paired matches against the active one "
        "(SPEC 10; the paper gates candidates such as a larger network, not routine updates).",
    )

    @field_validator("eval_visit_budgets")
    @classmethod
    def _increasing(cls, value: list[int]) -> list[int]:
        if any(b <= a for a, b in zip(value, value[1:], strict=False)):
            raise ValueError(f"eval_visit_budgets must be strictly increasing, got {value}")
        return value

    @field_validator("dask_address")
    @classmethod
    def _address(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("dask_address must be null or a non-empty address such as tcp://host:8786")
        return value


class CandidateStart(str, Enum):
    """How a larger candidate network begins (paper 3.9)."""

    GROWN = "grown"
    """Function-preserving growth of the active network (same outputs at the start)."""
    FRESH = "fresh"
    """A new, seeded network that catches up on the same replay."""


class ProgressiveConfig(_Section):
    """Progressive model sizing (paper 3.9, D.3): the campaign starts at
    ``model.size``; a candidate of the next size in ``stages`` trains beside
    the active network on the same replay and replaces it only by winning
    promotion matches (``evaluate.promotion_score`` in
    ``evaluate.promotion_consecutive`` consecutive paired matches)."""

    stages: list[str] = Field(description="Sizes after model.size, in order ([]: one size for the whole campaign).")
    start: CandidateStart = Field(description="grown (function-preserving) or fresh.")
    after_generations: int | None = Field(
        ge=0, description="Start the next stage's candidate this many generations after the current "
        "stage began (campaign start or the last promotion); null: only the plateau trigger.")
    plateau_evaluations: int | None = Field(
        ge=1, description="Or start it when the searched joint Elo at evaluate.visits has not improved "
        "on its best over this many evaluations of the stage; null: only the generation trigger.")
    candidate_quanta: float = Field(
        gt=0.0, le=8.0, description="Candidate training quanta per active quantum, on average (paper: 1.5); "
        "counted as catch-up presentations in the candidate's own credit ledger.")
    match_every: PositiveInt = Field(
        description="Generations between the candidate's promotion matches (1: every generation).")

    @field_validator("stages")
    @classmethod
    def _sizes(cls, value: list[str]) -> list[str]:
        return [_plain_size(v, "progressive.stages") for v in value]

    @model_validator(mode="after")
    def _triggered(self) -> ProgressiveConfig:
        if self.stages and self.after_generations is None and self.plateau_evaluations is None:
            raise ValueError("progressive stages need a trigger: after_generations and/or plateau_evaluations")
        return self


class Config(_Section):
    """The whole recipe for one preset."""

    preset: str
    model: ModelConfig
    search: SearchConfig
    selfplay: SelfplayConfig
    replay: ReplayConfig
    train: TrainConfig
    publish: PublishConfig
    evaluate: EvaluateConfig
    inference: InferenceConfig
    campaign: CampaignConfig
    progressive: ProgressiveConfig
    distill: DistillConfig
    nnue: NnueConfig

    def network_sizes(self) -> list[ModelSize]:
        """The campaign's networks: ``model.size`` then ``progressive.stages``, each
        with ``model.se_ratio`` and ``model.attack_planes``."""
        return [parse_size(s).with_se(self.model.se_ratio).with_attacks(self.model.attack_planes)
                for s in [self.model.size, *self.progressive.stages]]

    @model_validator(mode="after")
    def _growing(self) -> Config:
        sizes = self.network_sizes()
        for a, b in zip(sizes, sizes[1:], strict=False):
            if (b.blocks, b.channels) == (a.blocks, a.channels) or b.blocks < a.blocks or b.channels < a.channels:
                raise ValueError(f"progressive.stages must grow: {b.name} after {a.name} "
                                 "(more blocks and/or channels, neither fewer)")
        return self

    @model_validator(mode="after")
    def _moves_left_runtime(self) -> Config:
        # (The torch backend serves it on the CPU; its CUDA session refuses such an artifact when built.)
        if self.search.moves_left.enabled and self.inference.backend is Backend.TENSORRT:
            raise ValueError("search.moves_left.slope > 0 needs the moves-left output, which the 'tensorrt' "
                             "backend does not serve yet: use ort-cpu, ort-gpu or torch")
        return self
