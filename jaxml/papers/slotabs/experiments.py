"""Slot Abstractors experiments so far (issue 24, in progress).

`slotabs/autoencoder`: stage 1. The slot autoencoder is pretrained with the one loop on panels of
one ART task drawn from all 100 shapes, then measured on panels of held-out problems: the
reconstruction error against the mean-image baseline (the error of predicting the training panels'
mean image), with a figure of the reconstructions and the per-slot masks.
"""

from __future__ import annotations

import numpy as np

from jaxml import progress
from jaxml.core import registry
from jaxml.core.experiment import Claim, Result, make_workdir, pyplot, save_figure, verdict
from jaxml.core.train import default_config, train_and_evaluate
from jaxml.data.pipeline import ArraySource
from jaxml.papers.slotabs.slot_attention import SlotAutoencoder
from jaxml.papers.slotabs.tasks import SIZE, make_problems
from jaxml.papers.slotabs.training import AutoencoderTask


def pretrain_autoencoder(config, workdir):
    """Trains (or resumes) the slot autoencoder on `config.task` panels; returns (model, params,
    train panels, test panels, the loop's outcome)."""
    size = SIZE[config.task]
    train = make_problems(config.task, config.train_problems, np.arange(100), seed=config.seed).images[:, 0]
    test = make_problems(config.task, config.test_problems, np.arange(100), seed=config.seed + 1).images[:, 0]
    a = config.autoencoder
    model = SlotAutoencoder(num_slots=a.num_slots, dim=a.dim, resolution=(size, size), iters=a.iters)
    task = AutoencoderTask(model, ArraySource({"image": train}), {"test": ArraySource({"image": test})})
    loop = default_config()
    loop.update(seed=config.seed, num_steps=config.steps, batch_size=config.batch_size, eval_batch_size=16,
                checkpoint_every_steps=max(config.steps // 4, 1), log_every_steps=max(config.steps // 10, 1))
    loop.optimizer.learning_rate = config.learning_rate
    loop.schedule.warmup_steps = config.steps // 10
    outcome = train_and_evaluate(loop, workdir, task=task)
    return model, outcome.state.params, train, test, outcome


def plot_slots(model, params, images: np.ndarray, path) -> str:
    """Each row: an image, its reconstruction and the masks of every slot."""
    import jax

    out = model.apply({"params": params}, images, rngs={"slots": jax.random.PRNGKey(0)})
    k = model.num_slots
    plt = pyplot()
    fig, axes = plt.subplots(len(images), k + 2, figsize=(1.4 * (k + 2), 1.4 * len(images)), squeeze=False)
    for i in range(len(images)):
        panels = [images[i, ..., 0], np.asarray(out["recon"][i, ..., 0])] + \
                 [np.asarray(out["masks"][i, j, ..., 0]) for j in range(k)]
        titles = ["image", "recon"] + [f"slot {j}" for j in range(k)]
        for j, (panel, title) in enumerate(zip(panels, titles)):
            axes[i][j].imshow(panel, cmap="gray", vmin=0, vmax=1)
            axes[i][j].set_axis_off()
            if i == 0:
                axes[i][j].set_title(title, fontsize=8)
    return save_figure(fig, path)


@registry.experiment("slotabs/autoencoder")
def autoencoder(config, workdir) -> Result:
    workdir = make_workdir(workdir)
    model, params, train, test, outcome = pretrain_autoencoder(config, workdir / "autoencoder")
    mean_mse = float(np.mean((train.mean(axis=0, keepdims=True) - test) ** 2))
    metrics = {"mse": outcome.metrics["test/mse"], "mean_image_mse": mean_mse,
               "mse_ratio": outcome.metrics["test/mse"] / mean_mse,
               "train_time_s": outcome.metrics.get("train_time_s", 0.0)}
    progress.log(f"slot autoencoder on {config.task}: test MSE {metrics['mse']:.4f} vs mean image {mean_mse:.4f}")
    figure = plot_slots(model, params, test[:4], workdir / "slots.png")
    claims = [Claim("the pretrained slot autoencoder reconstructs held-out panels better than their mean image",
                    f"MSE {metrics['mse']:.4f} vs {mean_mse:.4f} (ratio {metrics['mse_ratio']:.2f})",
                    "the paper pretrains and freezes a slot autoencoder (no number given)",
                    verdict(metrics["mse"] < mean_mse if config.steps >= 500 else None))]
    return Result(metrics=metrics, headline="mse_ratio", claims=claims, figures=[figure],
                  notes=(f"{config.task} panels ({config.train_problems} train / {config.test_problems} test), "
                         f"{config.autoencoder.num_slots} slots of {config.autoencoder.dim}, {config.steps} steps."))
