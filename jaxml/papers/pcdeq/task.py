"""The pcDEQ classification Task for the one loop: BatchNorm state, W >= 0 projection, and the
forward/backward fixed-point iteration counts as training metrics."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax

from jaxml.core import registry
from jaxml.core.classification import to_float_images
from jaxml.data import fashion_mnist, pipeline
from jaxml.data.pipeline import Source
from jaxml.papers.pcdeq.layers import CONSTRAINED, project_nonnegative
from jaxml.papers.pcdeq.models import DEQNet
from jaxml.papers.pcdeq.solver import Solver


def _mean_leaves(tree) -> jax.Array:
    leaves = [jnp.mean(jnp.asarray(x, jnp.float32)) for x in jax.tree_util.tree_leaves(tree)]
    return jnp.mean(jnp.stack(leaves)) if leaves else jnp.float32(0.0)


def _max_leaves(tree) -> jax.Array:
    leaves = [jnp.max(jnp.asarray(x, jnp.float32)) for x in jax.tree_util.tree_leaves(tree)]
    return jnp.max(jnp.stack(leaves)) if leaves else jnp.float32(0.0)


def _sown(diag, name: str) -> list:
    """The sown diagnostics whose path contains `name` ('iterations' or 'residual'), one per block."""
    return [v for p, v in jax.tree_util.tree_leaves_with_path(diag) if name in jax.tree_util.keystr(p)]


@dataclasses.dataclass(frozen=True, eq=False)
class PcDEQTask:
    """Softmax cross-entropy classification with a `DEQNet`.

    Training metrics (means over the logging window, per DEQ block averaged over blocks, as the
    official `utils.epoch` logs them): `forward_iterations`, `backward_iterations`, and the largest
    final residuals `forward_residual`, `backward_residual`. Evaluation adds `forward_iterations`.
    """

    model: DEQNet
    train_source: Source
    eval_sources: dict[str, Source]

    @property
    def constrained(self) -> bool:
        return self.model.variant in CONSTRAINED

    def _variables(self, rng, batch):
        return self.model.init(rng, to_float_images(batch["image"][:2]), train=False)

    def init(self, rng, batch):
        return self._variables(rng, batch)["params"]

    def init_state(self, rng, batch):
        v = self._variables(rng, batch)
        return {"batch_stats": v["batch_stats"], "probe": v.get("probe", {})}

    def _forward(self, params, probe, batch, model_state):
        variables = {"params": params, "batch_stats": model_state["batch_stats"], "probe": probe}
        logits, updates = self.model.apply(variables, to_float_images(batch["image"]), train=True,
                                           mutable=["batch_stats", "diagnostics"])
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean()
        diag = updates.get("diagnostics", {})
        metrics = {"accuracy": jnp.mean(jnp.argmax(logits, -1) == batch["label"])}
        if diag:
            metrics["forward_iterations"] = _mean_leaves(_sown(diag, "iterations"))
            metrics["forward_residual"] = _max_leaves(_sown(diag, "residual"))
        new_state = {"batch_stats": updates["batch_stats"], "probe": model_state["probe"]}
        return loss, (metrics, new_state)

    def loss(self, params, batch, rng, model_state):
        return self._forward(params, model_state["probe"], batch, model_state)

    def value_and_grad(self, params, batch, rng, model_state):
        """Gradients w.r.t. params, and w.r.t. the probes: the backward solves' diagnostics."""
        (loss, (metrics, new_state)), (grads, probe_grads) = jax.value_and_grad(
            lambda p, pr: self._forward(p, pr, batch, model_state), argnums=(0, 1), has_aux=True,
        )(params, model_state["probe"])
        probes = jax.tree_util.tree_leaves(probe_grads)
        if probes:
            stacked = jnp.stack(probes)            # [blocks, 2]: iterations, residual
            metrics = {**metrics, "backward_iterations": jnp.mean(stacked[:, 0]),
                       "backward_residual": jnp.max(stacked[:, 1])}
        return (loss, (metrics, new_state)), grads

    def project(self, params):
        return project_nonnegative(params) if self.constrained else params

    def logits(self, params, model_state, images):
        variables = {"params": params, "batch_stats": model_state["batch_stats"], "probe": model_state["probe"]}
        logits, diag = self.model.apply(variables, to_float_images(images), train=False, mutable=["diagnostics"])
        return logits, diag.get("diagnostics", {})

    def evaluate(self, params, batch, model_state):
        logits, diag = self.logits(params, model_state, batch["image"])
        ones = jnp.ones(logits.shape[:1], jnp.float32)
        out = {"accuracy": (jnp.argmax(logits, -1) == batch["label"]).astype(jnp.float32),
               "loss": optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"])}
        if diag:
            out["forward_iterations"] = _mean_leaves(_sown(diag, "iterations")) * ones
        return out

    def train_data(self) -> Source:
        return self.train_source

    def eval_data(self) -> dict[str, Source]:
        return self.eval_sources


def model_from_config(config) -> DEQNet:
    m = config.model
    solver = Solver(tol=m.tol, max_iter=m.max_iter, method=m.solver)
    return DEQNet(architecture=m.architecture, variant=m.variant, activation=m.activation,
                  widths=tuple(m.widths), solver=solver, unroll=m.unroll, implementation=m.implementation,
                  output=m.get("output", "z"))


@registry.task("pcdeq/train")
def make_task(config) -> PcDEQTask:
    train = pipeline.first(fashion_mnist.load("train"), config.data.train_examples)
    test = pipeline.first(fashion_mnist.load("test"), config.data.test_examples)
    return PcDEQTask(model=model_from_config(config), train_source=train, eval_sources={"test": test})
