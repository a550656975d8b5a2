"""A small Vision Transformer on Fashion-MNIST trained with the one loop (the AttnLRP test bed).

Registered as task and experiment `examples/fashion_mnist_vit`; config in
`configs/fashion_mnist_vit.py` (its docstring is the runbook with the measured numbers). The trained
params load back with

    task = make_task(config)
    params = jaxml.core.train.load_state_params(workdir, task, config)
    logits = task.model.apply({"params": params}, images)
"""

from __future__ import annotations

import pathlib

from jaxml.core import registry
from jaxml.core.classification import ClassificationTask
from jaxml.examples.fashion_mnist import plot_training_curves
from jaxml.core.experiment import Result
from jaxml.core.train import train_and_evaluate
from jaxml.data import fashion_mnist, pipeline
from jaxml.models.vit import ViT


def make_model(config) -> ViT:
    """The ViT that `config.model` describes."""
    m = config.model
    return ViT(num_classes=10, patch_size=m.patch_size, hidden=m.hidden, layers=m.layers, heads=m.heads,
               mlp_hidden=m.mlp_hidden, pool=m.pool, dropout=m.dropout)


@registry.task("examples/fashion_mnist_vit")
def make_task(config) -> ClassificationTask:
    train = pipeline.first(fashion_mnist.load("train"), config.data.train_examples)
    test = pipeline.first(fashion_mnist.load("test"), config.data.test_examples)
    return ClassificationTask(model=make_model(config), train_source=train, eval_sources={"test": test})


@registry.experiment("examples/fashion_mnist_vit")
def fashion_mnist_vit(config, workdir) -> Result:
    """Trains the ViT, returns test accuracy and writes the training-curve figure."""
    task = make_task(config)
    outcome = train_and_evaluate(config, workdir, task=task)
    figure = plot_training_curves(workdir, pathlib.Path(workdir) / "fashion_mnist_vit_curves.png",
                                  "Fashion-MNIST ViT")
    m = config.model
    return Result(
        metrics={"test_accuracy": outcome.metrics["test/accuracy"],
                 "test_loss": outcome.metrics["test/loss"],
                 "train_time_s": outcome.metrics["train_time_s"]},
        headline="test_accuracy",
        figures=[str(figure)],
        notes=(f"{int(outcome.state.step)} steps of batch {config.batch_size} on "
               f"{len(task.train_data())} training images; ViT patch {m.patch_size}, hidden {m.hidden}, "
               f"{m.layers} layers, {m.heads} heads, MLP {m.mlp_hidden}, pool {m.pool}; training-loop "
               f"wall time {outcome.metrics['train_time_s']:.0f}s."),
    )
