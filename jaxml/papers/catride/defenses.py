"""Adversarial training defences for deep metric learning, as adversaries the training step calls.

    task = MetricTask(net, pairs, {}, adversary=functools.partial(est_adversary, eps=77/255, alpha=3/255, steps=32))

An adversary maps `(embed, images, key)` to perturbed images inside the step: `embed` is the model
with its current parameters held fixed (no gradient flows into the attack), and the step then
trains on the adversary's images.

  * EST, the embedding-shifted triplet (Zhou et al., ECCV 2020; RobRank `defenses/est.py`): every
    image of the SPC-2 batch is replaced by its embedding-shift adversarial example (PGD maximising
    ||f(x') - f(x)||), and the triplet loss is computed on those.
"""

from __future__ import annotations

import jax

from jaxml.papers.catride.attacks import check_budget, shift_away


def est_adversary(embed, images: jax.Array, key: jax.Array, *, eps: float, alpha: float, steps: int) -> jax.Array:
    """The EST perturbation of `images` [n, H, W, C] in [0, 1]: ES with RobRank's 1e-7 nudge of the
    clean target (its first gradient would otherwise be that of a norm at 0)."""
    check_budget(eps, alpha, steps)
    clean = jax.lax.stop_gradient(embed(images))
    nudge = 1e-7 * jax.random.randint(key, clean.shape, -1, 2).astype(clean.dtype)
    return jax.lax.stop_gradient(shift_away(embed, images, clean + nudge, eps, alpha, steps))
