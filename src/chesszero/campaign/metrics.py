"""MLflow metric keys shared by the campaign (writer) and the reports (reader).

All campaign metrics are logged on the campaign run with ``step =
generation``. One owner for the names keeps writer and reader in agreement.
"""

from __future__ import annotations

EXPERIMENT = "chesszero"
TAG_CAMPAIGN = "chesszero.campaign"
TAG_KIND = "chesszero.kind"
REGISTERED_MODEL_PREFIX = "chesszero"

WALL_S = "time/wall_s"
GENERATION = "time/generation"

TRAIN_LOSS = "train/loss"
TRAIN_LOSS_HEADS = ("policy", "value", "next_policy", "length")
TRAIN_LR = "train/lr"
TRAIN_GRAD_NORM = "train/grad_norm"
TRAIN_SAMPLES_S = "train/samples_per_s"
TRAIN_STEP = "train/optimizer_step"
TRAIN_SAMPLES = "train/samples_total"

SELFPLAY_SEARCHES_S = "selfplay/searches_per_s"
SELFPLAY_SEARCHES_S_OVERLAP = "selfplay/searches_per_s_during_training"
SELFPLAY_GAMES = "selfplay/games"
SELFPLAY_POSITIONS = "selfplay/positions"
SELFPLAY_GAMES_TOTAL = "selfplay/games_total"
SELFPLAY_POSITIONS_TOTAL = "selfplay/positions_total"
NON_DECISIVE = "selfplay/non_decisive_rate"
MATERIAL_ASSIST = "selfplay/material_assist"
TERMINATIONS = (
    "checkmate",
    "stalemate",
    "threefold_repetition",
    "fifty_moves",
    "insufficient_material",
    "ply_cap",
    "resignation",
)

REPLAY_SIZE = "replay/size"
REPLAY_OCCUPANCY = "replay/occupancy"
REPLAY_SAMPLE_AGE = "replay/mean_sample_age"
REPLAY_ADMITTED_TOTAL = "replay/admitted_total"

RESIGN_THRESHOLD = "resign/threshold"
RESIGN_FALSE_UPPER = "resign/false_rate_upper"

FIDELITY = ("agreement", "kl", "wdl_mae", "passed")

EVAL_MODES = ("policy", "searched")


def loss_key(head: str) -> str:
    return f"{TRAIN_LOSS}_{head}"


def termination_key(name: str) -> str:
    return f"selfplay/term_{name}"


def fidelity_key(name: str) -> str:
    return f"publish/{name}"


def elo_key(mode: str, suffix: str = "") -> str:
    """Ladder rating of the model (nearest rung); suffix '' | 'lo' | 'hi'."""
    return f"elo/{mode}" + (f"_{suffix}" if suffix else "")


def score_key(mode: str, rung: str) -> str:
    return f"score/{mode}/{rung}"


def material_key(mode: str, rung: str) -> str:
    """Mean material balance (pawns, model's view) where the match's games ended."""
    return f"material/{mode}/{rung}"


def budget_key(visits: int, suffix: str = "") -> str:
    """Rating at a search budget (0 visits = policy only), for Table 1."""
    return f"budget/{visits}" + (f"_{suffix}" if suffix else "")
