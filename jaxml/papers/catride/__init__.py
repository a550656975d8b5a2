"""CA-TRIDE: "Collapse-Aware Triplet Decoupling for Adversarially Robust Image Retrieval" (Tian, Lin,
Zhao, Li, Shen; ICML 2024), on RobRank's deep metric learning setup.

    from jaxml.papers import catride
    task = catride.MetricTask(catride.EmbeddingNet(), catride.PairSource(x, y), {},
                              adversary=catride.make_adversary("catride", eps=77/255, alpha=12/255, steps=8),
                              total_steps=400, miner="gradual_hard", half_term=True)

The metric-learning core (C2F2 embedding, SPC-2 triplet loss, retrieval metrics), collapseness, the
ten attacks behind ERS and ERS itself, ERS-HM (our stand-in for the paper's new metric), and the
defences EST, ACT, TRIDE and CA-TRIDE as adversaries of the one shared training step. Experiments:
`catride/robustness` (the defence benchmark with collapse diagnostics) and `catride/reproduce`.
"""

from jaxml.papers.catride import experiments  # noqa: F401  (registers the experiments)
from jaxml.papers.catride.attacks import (ERS_ATTACKS, AttackOutcome, candidate_attack, embedding_shift, ers, ers_hm,
                                          ers_terms, greedy_top1_misrank, greedy_top1_translocation,
                                          learning_to_misrank, pgd, query_attack, recall1_without_self,
                                          self_locations, targeted_mismatch)
from jaxml.papers.catride.collapse import collapseness, softmax_pool
from jaxml.papers.catride.defenses import DEFENCES, make_adversary, pgd_until
from jaxml.papers.catride.metric_learning import (MARGIN, EmbeddingNet, MetricTask, PairSource, flatten_pairs,
                                                  gradual_hard_negatives, normalize, pair_distance, pairwise_distances,
                                                  spc2_random_negatives, triplet_distances, triplet_loss)
from jaxml.papers.catride.retrieval import kmeans_nmi, mean_average_precision, nmi, recall_at_k

__all__ = ["ERS_ATTACKS", "AttackOutcome", "candidate_attack", "embedding_shift", "ers", "ers_hm", "ers_terms",
           "greedy_top1_misrank", "greedy_top1_translocation", "learning_to_misrank", "pgd", "query_attack",
           "recall1_without_self", "self_locations", "targeted_mismatch", "collapseness", "softmax_pool", "DEFENCES",
           "make_adversary", "pgd_until", "MARGIN", "EmbeddingNet", "MetricTask", "PairSource", "flatten_pairs",
           "gradual_hard_negatives", "normalize", "pair_distance", "pairwise_distances", "spc2_random_negatives",
           "triplet_distances", "triplet_loss", "kmeans_nmi", "mean_average_precision", "nmi", "recall_at_k"]
