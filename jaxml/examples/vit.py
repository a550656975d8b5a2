"""A small Vision Transformer on Fashion-MNIST trained with the one loop (the AttnLRP test bed).

Registered as task and experiment `examples/fashion_mnist_vit`; config in
`configs/fashion_mnist_vit.py` (its docstring is the runbook with the measured numbers). The trained
params load back with

    task = make_task(config)
    params = jaxml.core.train.load_state_params(workdir, task, config)
    logits = task.model.apply({"params": params}, images)
"""

from __future__ import annotations

from jaxml.core import registry
from jaxml.core.classification import ClassificationTask
from jaxml.core.experiment import Result
from jaxml.examples.fashion_mnist import fashion_mnist_sources, train_classifier
from jaxml.models.vit import ViT


def make_model(config) -> ViT:
    """The ViT that `config.model` describes."""
    m = config.model
    return ViT(num_classes=10, patch_size=m.patch_size, hidden=m.hidden, layers=m.layers, heads=m.heads,
               mlp_hidden=m.mlp_hidden, pool=m.pool, dropout=m.dropout)


@registry.task("examples/fashion_mnist_vit")
def make_task(config) -> ClassificationTask:
    train, evals = fashion_mnist_sources(config)
    return ClassificationTask(model=make_model(config), train_source=train, eval_sources=evals)


@registry.experiment("examples/fashion_mnist_vit")
def fashion_mnist_vit(config, workdir) -> Result:
    """Trains the ViT, returns test accuracy and writes the training-curve figure."""
    m = config.model
    return train_classifier(config, workdir, make_task(config), "Fashion-MNIST ViT",
                            f"ViT patch {m.patch_size}, hidden {m.hidden}, {m.layers} layers, {m.heads} heads, "
                            f"MLP {m.mlp_hidden}, pool {m.pool}")
