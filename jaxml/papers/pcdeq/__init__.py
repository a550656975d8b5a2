"""pcDEQ: Positive Concave Deep Equilibrium Models (Gabor, Piotrowski, Cavalcante, ICML 2024).

    from jaxml.papers.pcdeq import DEQNet, Solver, deq_solve
    model = DEQNet(architecture="linear", variant="pcdeq1", activation="tanh", widths=(80,))

Fixed points z* = act(W z* + x) with W >= 0 (projection after each step) and a concave,
nondecreasing act, which makes the map a positive concave map with a unique fixed point reached
geometrically by plain iteration; implicit gradients; the Pallas op `kernels.fixed_point`.
"""

from jaxml.papers.pcdeq import experiments, task  # noqa: F401  (registers the task and experiments)
from jaxml.papers.pcdeq.layers import DEQLayer, conv3x3, project_nonnegative, weight_norm
from jaxml.papers.pcdeq.models import ARCHITECTURES, DEFAULT_WIDTHS, DEQNet
from jaxml.papers.pcdeq.solver import DEQStats, Solver, anderson, deq_solve, find_fixed_point, geometric_rate
from jaxml.papers.pcdeq.task import PcDEQTask

__all__ = ["ARCHITECTURES", "DEFAULT_WIDTHS", "DEQLayer", "DEQNet", "DEQStats", "PcDEQTask", "Solver", "anderson",
           "conv3x3", "deq_solve", "find_fixed_point", "geometric_rate", "project_nonnegative", "weight_norm"]
