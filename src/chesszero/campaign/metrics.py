"""MLflow metric keys shared by the campaign (writer) and the reports (reader).

All campaign metrics are logged on the campaign run with ``step =
generation``, each once per step (a phase rerun after a crash does not log
its metrics again), except the two clocks in ``CLOCKS``, which every phase
logs at its end (the value at a generation's last phase is the generation's).
One owner for the names keeps writer and reader in agreement.
"""

from __future__ import annotations

from chesszero.core import TERMINATION_NAMES, Termination

EXPERIMENT = "chesszero"
TAG_CAMPAIGN = "chesszero.campaign"
TAG_KIND = "chesszero.kind"
REGISTERED_MODEL_PREFIX = "chesszero"

WALL_S = "time/wall_s"
GENERATION = "time/generation"
TAG_UID = "chesszero.campaign_uid"  # the campaign directory's identity (CampaignState.uid)
CLOCKS = (WALL_S, GENERATION)

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
SELFPLAY_CONVERSION = "selfplay/conversion"
"""Share of (game, side) with a lead of 5+ pawns in the searched part that
the side went on to win; not logged in a generation without such a lead."""
SELFPLAY_CONVERSION_CHANCES = "selfplay/conversion_opportunities"
SELFPLAY_ODDS_GAMES = "selfplay/odds_games"
"""Material-odds games of the generation (``selfplay.odds_fraction``); the
terminations, non-decisive rate and conversion above count natural games only."""
SELFPLAY_ODDS_NON_DECISIVE = "selfplay/odds_non_decisive_rate"
SELFPLAY_ODDS_CONVERSION = "selfplay/odds_conversion"
SELFPLAY_RANDOM_OPPONENT_GAMES = "selfplay/random_opponent_games"
"""Games against a uniformly random mover (``selfplay.random_opponent_fraction``),
counted apart like the odds games; their non-decisive rate and conversion below."""
SELFPLAY_RANDOM_OPPONENT_NON_DECISIVE = "selfplay/random_opponent_non_decisive_rate"
SELFPLAY_RANDOM_OPPONENT_CONVERSION = "selfplay/random_opponent_conversion"
SELFPLAY_CONVERSION_WON = "selfplay/conversion_converted"
SELFPLAY_CAPPED_SHARE = "selfplay/capped_share"
"""Late-game target diagnostics (paper 6.1, ``selfplay.cap_diagnostics``): games
stopped at the ply cap, admitted rows inheriting a cut target, plies played
without a training row; each a share, not logged in a generation without games."""
SELFPLAY_CUT_TARGET_SHARE = "selfplay/cut_target_share"
SELFPLAY_INELIGIBLE_SHARE = "selfplay/ineligible_share"
_RULE_COLUMNS = (
    Termination.CHECKMATE,
    Termination.STALEMATE,
    Termination.THREEFOLD_REPETITION,
    Termination.FIFTY_MOVES,
    Termination.INSUFFICIENT_MATERIAL,
)
TERMINATIONS = tuple(TERMINATION_NAMES[t.value] for t in _RULE_COLUMNS) + tuple(
    name for code, name in TERMINATION_NAMES.items() if code not in {t.value for t in Termination}
)
"""Every game ending the core knows (names from chesszero.core) in report column
order: the rule endings, then the self-play adjudications (ply cap, resignation)."""

REPLAY_SIZE = "replay/size"
REPLAY_OCCUPANCY = "replay/occupancy"
REPLAY_SAMPLE_AGE = "replay/mean_sample_age"
REPLAY_ADMITTED_TOTAL = "replay/admitted_total"
REPLAY_SHARDS_REJECTED = "replay/shards_rejected"  # of the generation, quarantined (campaign.quarantine)
REPLAY_SURPRISE_AT_CAP = "replay/surprise_at_cap"  # share of the generation's new rows at replay.surprise_cap
REPLAY_WITH_MATE = "replay/rows_with_mate"  # share of the generation's new rows with a checkmating move
REPLAY_WITH_STALEMATE = "replay/rows_with_stalemate"  # ... with a stalemating move

RESIGN_THRESHOLD = "resign/threshold"
RESIGN_FALSE_UPPER = "resign/false_rate_upper"

FIDELITY = ("agreement", "kl", "wdl_mae", "moves_left_mae", "passed")
PUBLISH_QAT_STEPS = "publish/qat_steps"
"""Fine-tuning steps the generation's publication ran (0: the calibrated artifact was gated)."""

# Progressive sizing: the active stage, the candidate's training and its gate.
PROGRESSIVE_STAGE = "progressive/stage"
"""Index of the active size in [model.size, *progressive.stages]."""
CANDIDATE_STARTED = "candidate/started"
"""1 in the generation a candidate was created (its reason is a run tag)."""
CANDIDATE_LOSS = "candidate/train_loss"
CANDIDATE_QUANTA = "candidate/quanta_total"
CANDIDATE_CATCH_UP = "candidate/catch_up_presentations"
CANDIDATE_FIDELITY = "candidate/fidelity_passed"
PROMOTION_SCORE = "promotion/score"
PROMOTION_ELO = "promotion/elo_diff"
"""Candidate minus active, with _lo/_hi: the 95% bootstrap interval over opening pairs."""
PROMOTION_PASSES = "promotion/passes"
PROMOTION_PROMOTED = "promotion/promoted"

EVAL_MODES = ("policy", "searched")


def loss_key(head: str) -> str:
    return f"{TRAIN_LOSS}_{head}"


def termination_key(name: str) -> str:
    return f"selfplay/term_{name}"


def fidelity_key(name: str) -> str:
    if name not in FIDELITY:
        raise KeyError(f"no fidelity metric {name!r}; known: {FIDELITY}")
    return f"publish/{name}"


def elo_key(mode: str, suffix: str = "") -> str:
    """The paper's nearest-rung rating of the model, the secondary number (the
    headline is ``joint_elo_key``); suffix '' | 'lo' | 'hi' | 'bound', 'bound'
    signed as for the joint rating (+1: the nearest rung was swept, '' is a
    lower bound; -1: every game against it lost; 0: a point estimate)."""
    return f"elo/{mode}" + (f"_{suffix}" if suffix else "")


def joint_elo_key(mode: str, suffix: str = "") -> str:
    """The headline rating (``campaign.headline``): the joint maximum-likelihood
    rating over every rung played; suffix '' | 'lo' |
    'hi' | 'bound'. 'bound' is +1 for a lower bound (every game won: '' is then
    the bound and 'hi' is not logged), -1 for an upper bound (every game lost:
    no 'lo'), 0 for a point estimate."""
    return f"elo_joint/{mode}" + (f"_{suffix}" if suffix else "")


def score_key(mode: str, rung: str) -> str:
    return f"score/{mode}/{rung}"


def material_key(mode: str, rung: str) -> str:
    """Mean material balance (pawns, model's view) where the match's games ended."""
    return f"material/{mode}/{rung}"


def conversion_key(mode: str, rung: str, suffix: str = "") -> str:
    """Games the model led by 5+ pawns at some point ('opportunities') and won
    ('converted'); suffix '' is their ratio, not logged without an opportunity."""
    return f"conversion/{mode}/{rung}" + (f"_{suffix}" if suffix else "")


def budget_key(visits: int, suffix: str = "") -> str:
    """Nearest-rung rating at a search budget (0 visits = policy only), for
    Table 1; suffixes as in ``elo_key``."""
    return f"budget/{visits}" + (f"_{suffix}" if suffix else "")


def budget_joint_key(visits: int, suffix: str = "") -> str:
    """Joint rating at a search budget; suffixes as in ``joint_elo_key``."""
    return f"budget_joint/{visits}" + (f"_{suffix}" if suffix else "")
