"""chesszero network (SPEC 4): sizes, action-table gather, heads and the ChessNet.

Public API::

    from chesszero.model import ChessNet, NetOutput, InferenceNet, parse_size
    net = ChessNet("14x160")                 # training network with auxiliary heads
    out = net(planes)                        # NetOutput(policy, wdl, next_policy, length)
    policy, wdl = net.inference_view()(planes)
    bigger = grow(net, "16x192")             # same outputs in eval mode (Net2Net growth)
"""

from chesszero.config.sizes import NAMED_SIZES, ModelSize, parse_size
from chesszero.model.actions import PROMOTION_PIECES, ActionTable, core_action_table
from chesszero.model.grow import check_growth, grow
from chesszero.model.heads import FromToPolicyHead, LengthHead, WdlHead
from chesszero.model.network import (
    INPUT_PLANES,
    ChessNet,
    GlobalPoolingBlock,
    InferenceNet,
    NetOutput,
    ResidualBlock,
    count_parameters,
)

__all__ = [
    "INPUT_PLANES",
    "NAMED_SIZES",
    "PROMOTION_PIECES",
    "ActionTable",
    "ChessNet",
    "FromToPolicyHead",
    "GlobalPoolingBlock",
    "InferenceNet",
    "LengthHead",
    "ModelSize",
    "NetOutput",
    "ResidualBlock",
    "WdlHead",
    "check_growth",
    "core_action_table",
    "count_parameters",
    "grow",
    "parse_size",
]
