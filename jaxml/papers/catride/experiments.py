"""CA-TRIDE's robustness evaluation so far (experiment `catride/robustness`): train the embedding
with the one loop on Fashion-MNIST classes 0-4 under each defence in `config.defences` ("none",
"est"), then on the unseen classes 5-9 measure retrieval (R@1/2/4/8, mAP, NMI) and the ten
RobRank attacks, and combine them into ERS. TRIDE, CA-TRIDE and ACT are not built yet (issue 23).
"""

from __future__ import annotations

import functools
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

from jaxml import progress
from jaxml.core import registry
from jaxml.core.experiment import Claim, Result, make_workdir, verdict
from jaxml.core.train import default_config, train_and_evaluate
from jaxml.papers.catride import attacks as at
from jaxml.papers.catride import retrieval as rt
from jaxml.papers.catride.data import fashion_class_split
from jaxml.papers.catride.defenses import est_adversary
from jaxml.papers.catride.metric_learning import EmbeddingNet, MetricTask, PairSource


def train(config, defence: str, xtr, ytr, workdir: pathlib.Path):
    """Trains (or resumes) the embedding under `defence`; returns the jitted embedding function."""
    adversary = None
    if defence == "est":
        adversary = functools.partial(est_adversary, eps=config.train_attack.eps, alpha=config.train_attack.alpha,
                                      steps=config.train_attack.steps)
    elif defence != "none":
        raise ValueError(f"defence {defence!r}: accepted 'none', 'est' (TRIDE and CA-TRIDE are not built yet)")
    m = config.model
    task = MetricTask(EmbeddingNet(dim=m.dim, features=tuple(m.features), hidden=m.hidden), PairSource(xtr, ytr),
                      {}, adversary=adversary)
    loop = default_config()
    loop.update(seed=config.seed, num_steps=config.steps, batch_size=config.batch_size,
                checkpoint_every_steps=config.steps, log_every_steps=max(config.steps // 5, 1))
    loop.optimizer.learning_rate = config.learning_rate
    params = train_and_evaluate(loop, workdir / defence, task=task).state.params
    return jax.jit(lambda x: task.model.apply({"params": params}, x))


def attack_outcomes(config, embed, queries, query_labels, gallery, gallery_labels) -> dict[str, float]:
    """The after-attack outcome of each of ERS's ten attacks (the units `at.ers_terms` expects)."""
    a = config.attack
    budget = dict(eps=a.eps, alpha=a.alpha, steps=a.steps)
    out = {"CA+": at.candidate_attack(embed, queries, gallery, 0, plus=True, queries=a.w, **budget).after,
           "CA-": at.candidate_attack(embed, queries, gallery, 0, plus=False, queries=a.w, **budget).after,
           "QA+": at.query_attack(embed, queries, gallery, 0, plus=True, candidates=a.m, **budget).after,
           "QA-": at.query_attack(embed, queries, gallery, 0, plus=False, candidates=a.m, **budget).after,
           "TMA": at.targeted_mismatch(embed, queries, gallery, 0, **budget).after / 100.0}
    es = at.embedding_shift(embed, queries, 0, **budget)
    loc = at.self_locations(embed, queries, gallery)
    out["ES:D"] = es.after
    out["ES:R"] = at.recall1_without_self(embed, es.images, query_labels, gallery, gallery_labels, loc)
    out["LTM"] = at.learning_to_misrank(embed, queries, query_labels, gallery, gallery_labels, **budget).after
    out["GTM"] = at.greedy_top1_misrank(embed, queries, query_labels, gallery, gallery_labels, **budget).after
    out["GTT"] = at.greedy_top1_translocation(embed, queries, gallery, **budget).after
    return out


@registry.experiment("catride/robustness")
def robustness(config, workdir) -> Result:
    workdir = make_workdir(workdir)
    xtr, ytr, xte, yte = fashion_class_split(train_per_class=config.data.train_per_class,
                                             test_per_class=config.data.test_per_class, seed=config.seed)
    images = xte.astype(np.float32) / 255.0
    q = config.attack.queries
    metrics: dict[str, float] = {}
    for defence in config.defences:
        embed = train(config, defence, xtr, ytr, workdir)
        gallery = np.asarray(embed(jnp.asarray(images)))
        for k, v in rt.recall_at_k(gallery, yte).items():
            metrics[f"{defence}/R@{k}"] = v
        metrics[f"{defence}/mAP"] = rt.mean_average_precision(gallery, yte)
        metrics[f"{defence}/NMI"] = rt.kmeans_nmi(gallery, yte, seed=config.seed)
        outcomes = attack_outcomes(config, embed, images[:q], yte[:q], gallery, yte)
        metrics.update({f"{defence}/{k}": float(v) for k, v in outcomes.items()})
        metrics[f"{defence}/ERS"] = at.ers(outcomes)
        progress.log(f"{defence}: R@1 {metrics[f'{defence}/R@1']:.3f}, mAP {metrics[f'{defence}/mAP']:.3f}, "
                     f"ERS {metrics[f'{defence}/ERS']:.1f}")
    claims = []
    if "est" in config.defences:
        claims.append(Claim("EST raises the empirical robustness score over no defence (RobRank: 3.8 -> 5.3 on CUB)",
                            f"ERS {metrics['none/ERS']:.1f} -> {metrics['est/ERS']:.1f}; R@1 "
                            f"{metrics['none/R@1']:.3f} -> {metrics['est/R@1']:.3f}", "CUB: 3.8 -> 5.3 (RobRank)",
                            verdict(metrics["est/ERS"] > metrics["none/ERS"] if config.steps >= 100 else None)))
    metrics["ERS"] = metrics[f"{config.defences[-1]}/ERS"]
    return Result(metrics=metrics, headline="ERS", claims=claims,
                  notes=(f"Fashion-MNIST, trained on classes 0-4 ({len(ytr)} images), retrieval on classes 5-9 "
                         f"({len(yte)} images); attacks on {q} queries, eps {config.attack.eps:.3f}, "
                         f"{config.attack.steps} steps; defences {tuple(config.defences)}."))
