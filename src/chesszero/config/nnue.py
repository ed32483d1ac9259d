"""The ``nnue`` section of the recipe: the NNUE student distilled from a
teacher campaign (``chesszero nnue build``, docs/nnue.md section 8).

Positions come from the teacher's game records and, optionally, from games
of the alpha-beta search (``search_games``); labels from the teacher's value
head (and its searched root value on a subset) and from the alpha-beta
search's score (``search_label_weight``); the trainer fits
``sigmoid(eval / 400)`` to ``lambda * result + (1 - lambda) * p_label`` with
``p_label = w * p_search + (1 - w) * p_teacher``.
No defaults here: ``params.yaml`` is the single source of the recipe.
"""

from __future__ import annotations

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
    field_validator,
    model_validator,
)

__all__ = ["MAX_HIDDEN", "NnueConfig"]

MAX_HIDDEN = 256
"""The loader refuses larger networks (docs/nnue.md section 3: the int64 output sum is exact up to 256)."""


class NnueConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    # --- network and target
    hidden: int = Field(description="Accumulator width N per perspective: 16..256, a multiple of 16.")
    lambda_: float = Field(alias="lambda", ge=0.0, le=1.0,
                           description="Weight of the game result in the target (1 - lambda: the teacher).")
    # --- positions
    max_games: PositiveInt | None = Field(
        description="Newest teacher games read (null: every admitted game record).")
    max_positions: PositiveInt | None = Field(
        description="Positions kept after filtering and deduplication (a key-hash subset; null: all).")
    holdout_fraction: float = Field(gt=0.0, le=0.5, description="Share held out by key hash (5%).")
    # --- teacher labels
    label_batch: PositiveInt = Field(description="Positions per teacher value-head call.")
    teacher_search_fraction: float = Field(
        ge=0.0, le=1.0, description="Share of positions (by key hash) labelled by the teacher's searched root value.")
    teacher_search_visits: PositiveInt = Field(description="Visits of each teacher search on that subset.")
    min_value_std: float = Field(ge=0.0, description="Warn when the teacher's values vary less (std of W - L).")
    min_material_corr: float = Field(
        ge=-1.0, le=1.0, description="Warn when the teacher's values correlate less with the material balance.")
    # --- games of the alpha-beta search (the second source; 0: off)
    search_games: NonNegativeInt = Field(description="Alpha-beta games from random openings (0: none).")
    search_net: str = Field(description="'latest' (newest student under runs/nnue/, else control), "
                                        "'control', or a path to an .nnue file.")
    search_depth: NonNegativeInt = Field(description="Depth limit of each alpha-beta move (0: none).")
    search_nodes: NonNegativeInt = Field(description="Node limit of each alpha-beta move (0: none).")
    search_random_plies: NonNegativeInt = Field(description="Random plies opening each search game.")
    search_max_plies: PositiveInt = Field(description="Plies after which a search game stops (result unknown).")
    search_threads: PositiveInt = Field(description="Search games played at once (the search releases the GIL).")
    # --- labels of the alpha-beta search (the same network and limits as its games)
    search_label_weight: float = Field(
        ge=0.0, le=1.0, description="Weight w of the alpha-beta search's score in the label (1 - w: the teacher's); "
                                    "0: the teacher alone.")
    rounds: PositiveInt = Field(
        description="Bootstrap rounds: round k's alpha-beta (games and labels) searches with round k-1's student; "
                    "round 1 with search_net.")
    # --- training
    epochs: PositiveInt
    batch_size: PositiveInt
    lr: float = Field(gt=0.0, le=1.0, description="AdamW learning rate at the start of the cosine schedule.")
    lr_final: float = Field(ge=0.0, le=1.0, description="Learning rate at the end of the cosine schedule.")
    weight_decay: float = Field(ge=0.0, le=1.0)
    checkpoint_every: PositiveInt = Field(description="Optimizer steps between resumable checkpoints.")
    threads: PositiveInt = Field(description="CPU threads of the trainer and of the teacher's runtime.")
    seed: NonNegativeInt

    @field_validator("hidden")
    @classmethod
    def _hidden(cls, value: int) -> int:
        if not 16 <= value <= MAX_HIDDEN or value % 16:
            raise ValueError(f"hidden must be a multiple of 16 in 16..{MAX_HIDDEN}, got {value}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> NnueConfig:
        if self.lr_final > self.lr:
            raise ValueError(f"lr_final ({self.lr_final}) must not exceed lr ({self.lr})")
        if self.search_games and not (self.search_depth or self.search_nodes):
            raise ValueError("search games need a limit per move: search_depth and/or search_nodes > 0")
        if self.search_label_weight and not (self.search_depth or self.search_nodes):
            raise ValueError("search labels need a limit per search: search_depth and/or search_nodes > 0")
        return self
