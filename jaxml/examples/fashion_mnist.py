"""The baseline: a small CNN on Fashion-MNIST trained with the one loop.

Registered as task and experiment `examples/fashion_mnist_cnn`; config in
`configs/fashion_mnist_cnn.py` (its docstring is the runbook with the measured numbers).
"""

from __future__ import annotations

import pathlib


from jaxml.core import registry
from jaxml.core.classification import ClassificationTask
from jaxml.core.experiment import Result
from jaxml.core.train import train_and_evaluate
from jaxml.data import fashion_mnist, pipeline
from jaxml.models.cnn import CNN


@registry.task("examples/fashion_mnist_cnn")
def make_task(config) -> ClassificationTask:
    model = CNN(num_classes=10, features=tuple(config.model.features), hidden=config.model.hidden,
                dropout=config.model.dropout)
    train = pipeline.first(fashion_mnist.load("train"), config.data.train_examples)
    test = pipeline.first(fashion_mnist.load("test"), config.data.test_examples)
    return ClassificationTask(model=model, train_source=train, eval_sources={"test": test})


@registry.experiment("examples/fashion_mnist_cnn")
def fashion_mnist_cnn(config, workdir) -> Result:
    """Trains the CNN, returns test accuracy and writes the training-curve figure."""
    task = make_task(config)
    outcome = train_and_evaluate(config, workdir, task=task)
    figure = plot_training_curves(workdir, pathlib.Path(workdir) / "fashion_mnist_cnn_curves.png")
    return Result(
        metrics={"test_accuracy": outcome.metrics["test/accuracy"],
                 "test_loss": outcome.metrics["test/loss"],
                 "train_time_s": outcome.metrics["train_time_s"]},
        headline="test_accuracy",
        figures=[str(figure)],
        notes=(f"{int(outcome.state.step)} steps of batch {config.batch_size} on "
               f"{len(task.train_data())} training images; CNN features "
               f"{tuple(config.model.features)}, hidden {config.model.hidden}; training-loop wall time "
               f"{outcome.metrics['train_time_s']:.0f}s."),
    )


def plot_training_curves(workdir, out: pathlib.Path, title: str = "Fashion-MNIST CNN") -> pathlib.Path:
    """Train loss against step, and eval accuracy where it was measured, from metrics.jsonl."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxml.core.metrics import read_metrics

    train = read_metrics(workdir, "train")
    evals = [r for r in read_metrics(workdir, "eval") if "test/accuracy" in r]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.2))
    ax1.plot([r["step"] for r in train], [r["loss"] for r in train])
    ax1.set(xlabel="step", ylabel="train loss", title=f"{title}: training loss")
    ax2.plot([r["step"] for r in evals], [r["test/accuracy"] for r in evals], marker="o")
    ax2.set(xlabel="step", ylabel="test accuracy", title="test accuracy")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
