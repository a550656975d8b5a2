"""CA-TRIDE: "Collapse-Aware Triplet Decoupling for Adversarially Robust Image Retrieval" (Tian, Lin,
Zhao, Li, Shen; ICML 2024). In progress (issue 23): the metric-learning core (RobRank's C2F2
embedding, SPC-2 triplet loss, retrieval metrics), the collapseness measure, the ten attacks
behind ERS (CA+, CA-, QA+, QA-, TMA, ES:D, ES:R, LTM, GTM, GTT) and ERS itself are here; the paper's
new metric, the defences ACT, TRIDE and CA-TRIDE, and the benchmark are not built yet; EST (the
embedding-shifted triplet) trains through `MetricTask(adversary=...)`.
"""

from jaxml.papers.catride import experiments  # noqa: F401  (registers the experiments)
from jaxml.papers.catride.attacks import (AttackOutcome, candidate_attack, embedding_shift, greedy_top1_misrank,
                                          ERS_ATTACKS, ers, ers_terms, greedy_top1_translocation, learning_to_misrank, pgd,
                                          query_attack, recall1_without_self, self_locations, targeted_mismatch)
from jaxml.papers.catride.defenses import est_adversary
from jaxml.papers.catride.collapse import collapseness, softmax_pool
from jaxml.papers.catride.metric_learning import (MARGIN, EmbeddingNet, MetricTask, PairSource, flatten_pairs, normalize,
                                                  pairwise_distances, spc2_random_negatives, triplet_distances,
                                                  triplet_loss)
from jaxml.papers.catride.retrieval import kmeans_nmi, mean_average_precision, nmi, recall_at_k

__all__ = ["AttackOutcome", "candidate_attack", "embedding_shift", "greedy_top1_misrank", "greedy_top1_translocation",
           "pgd", "query_attack", "targeted_mismatch", "ERS_ATTACKS", "ers", "ers_terms", "learning_to_misrank",
           "recall1_without_self", "self_locations", "est_adversary", "MARGIN", "EmbeddingNet", "MetricTask", "PairSource", "collapseness", "flatten_pairs", "kmeans_nmi",
           "mean_average_precision", "nmi", "normalize", "pairwise_distances", "recall_at_k", "softmax_pool",
           "spc2_random_negatives", "triplet_distances", "triplet_loss"]
