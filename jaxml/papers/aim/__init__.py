"""AIM: Scalable Pre-training of Large Autoregressive Image Models (El-Nouby et al., ICML 2024).

    from jaxml.papers.aim import AIM, next_patch_loss, patch_targets, AttentiveProbe
    model = AIM(patch_size=4, hidden=64, layers=4, heads=4, head_depth=2)

A ViT trunk (no class token, sine-cosine positions, no biases) trained to regress the next patch's
normalised pixels in raster order under prefix-causal attention, an MLP prediction head, and the
attentive probe on frozen features; `experiments.study` is the loss-accuracy study at toy scale.
"""

from jaxml.papers.aim import experiments  # noqa: F401  (registers the experiments)
from jaxml.papers.aim.metrics import mean_std, pearson, spearman
from jaxml.papers.aim.model import AIM, AIMTrunk, PredictionHead, next_patch_loss, patch_targets, target_weights
from jaxml.papers.aim.probe import AttentiveProbe, LinearProbe, extract_features
from jaxml.papers.aim.task import PretrainTask, ProbeTask, SupervisedTask, SupervisedViT, sample_prefix_lengths

__all__ = ["AIM", "AIMTrunk", "AttentiveProbe", "LinearProbe", "PredictionHead", "PretrainTask", "ProbeTask",
           "SupervisedTask", "SupervisedViT", "extract_features", "mean_std", "next_patch_loss", "patch_targets",
           "pearson", "sample_prefix_lengths", "spearman", "target_weights"]
