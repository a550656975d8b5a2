"""AutoActivator: "Harnessing Neural Unit Dynamics for Effective and Scalable Class-Incremental
Learning" (Li, Wang, Chen, Dai, Zeng; ICML 2024).

    from jaxml.papers.autoactivator import GrowthConfig, learn_stream, fashion_mnist_stream
    net, logs = learn_stream(fashion_mnist_stream(), jax.random.PRNGKey(0), GrowthConfig())
    labels = net.predict(x)            # task-agnostic: reactivation picks the units

Random hidden units recruited per session under the stochastic-configuration supervisory
inequality, output weights in closed form (block Cholesky ridge), and reactivation of the units of
the session an input belongs to by activation-statistics thresholds; the gradient-trained
baselines (fine-tuning, EWC, replay, joint) run on the one loop. There is no official code: the
README lists which details follow the paper and which are our reading.
"""

from jaxml.papers.autoactivator import experiments  # noqa: F401  (registers the experiments)
from jaxml.papers.autoactivator.metrics import (average_incremental_accuracy, final_accuracy, forgetting,
                                                step_accuracies)
from jaxml.papers.autoactivator.model import (AutoActivator, CholeskyRidge, GrowthConfig, SessionLog, UnitGroup,
                                              candidate_projections, learn_session, learn_stream, select_candidate,
                                              supervisory_xi)
from jaxml.papers.autoactivator.stream import Session, digits_stream, fashion_mnist_stream, split_by_class

__all__ = ["AutoActivator", "CholeskyRidge", "GrowthConfig", "Session", "SessionLog", "UnitGroup",
           "average_incremental_accuracy", "candidate_projections", "digits_stream", "fashion_mnist_stream",
           "final_accuracy", "forgetting", "learn_session", "learn_stream", "select_candidate", "split_by_class",
           "step_accuracies", "supervisory_xi"]
