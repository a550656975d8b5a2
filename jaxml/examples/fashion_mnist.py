"""The baseline: a small CNN on Fashion-MNIST trained with the one loop.

Registered as task and experiment `examples/fashion_mnist_cnn`; config in
`configs/fashion_mnist_cnn.py` (its docstring is the runbook with the measured numbers).
"""

from __future__ import annotations

import pathlib

from jaxml.core import registry
from jaxml.core.classification import ClassificationTask
from jaxml.core.experiment import Result, pyplot, save_figure
from jaxml.core.train import train_and_evaluate
from jaxml.data import fashion_mnist, pipeline
from jaxml.models.cnn import CNN


def fashion_mnist_sources(config):
    """`(train, {"test": test})` Fashion-MNIST sources, cut to `config.data.{train,test}_examples`."""
    train = pipeline.first(fashion_mnist.load("train"), config.data.train_examples)
    test = pipeline.first(fashion_mnist.load("test"), config.data.test_examples)
    return train, {"test": test}


@registry.task("examples/fashion_mnist_cnn")
def make_task(config) -> ClassificationTask:
    model = CNN(num_classes=10, features=tuple(config.model.features), hidden=config.model.hidden,
                dropout=config.model.dropout)
    train, evals = fashion_mnist_sources(config)
    return ClassificationTask(model=model, train_source=train, eval_sources=evals)


def train_classifier(config, workdir, task, title: str, model_notes: str) -> Result:
    """Trains `task` with the loop; test accuracy and loss, loop time and the training-curve figure."""
    outcome = train_and_evaluate(config, workdir, task=task)
    name = config.experiment.split("/")[-1]
    figure = plot_training_curves(workdir, pathlib.Path(workdir) / f"{name}_curves.png", title)
    return Result(
        metrics={"test_accuracy": outcome.metrics["test/accuracy"],
                 "test_loss": outcome.metrics["test/loss"],
                 "train_time_s": outcome.metrics["train_time_s"]},
        headline="test_accuracy",
        figures=[str(figure)],
        notes=(f"{int(outcome.state.step)} steps of batch {config.batch_size} on "
               f"{len(task.train_data())} training images; {model_notes}; training-loop wall time "
               f"{outcome.metrics['train_time_s']:.0f}s."),
    )


@registry.experiment("examples/fashion_mnist_cnn")
def fashion_mnist_cnn(config, workdir) -> Result:
    """Trains the CNN, returns test accuracy and writes the training-curve figure."""
    return train_classifier(config, workdir, make_task(config), "Fashion-MNIST CNN",
                            f"CNN features {tuple(config.model.features)}, hidden {config.model.hidden}")


def plot_training_curves(workdir, out: pathlib.Path, title: str = "Fashion-MNIST CNN") -> pathlib.Path:
    """Train loss against step, and eval accuracy where it was measured, from metrics.jsonl."""
    from jaxml.core.metrics import read_metrics

    plt = pyplot()
    train = read_metrics(workdir, "train")
    evals = [r for r in read_metrics(workdir, "eval") if "test/accuracy" in r]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.2))
    ax1.plot([r["step"] for r in train], [r["loss"] for r in train])
    ax1.set(xlabel="step", ylabel="train loss", title=f"{title}: training loss")
    ax2.plot([r["step"] for r in evals], [r["test/accuracy"] for r in evals], marker="o")
    ax2.set(xlabel="step", ylabel="test accuracy", title="test accuracy")
    return pathlib.Path(save_figure(fig, out))
