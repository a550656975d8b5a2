"""Adversarial training defences for deep metric learning: adversaries that the one training step
(`MetricTask.loss`) calls on every SPC-2 batch.

    adversary = make_adversary("catride", eps=77/255, alpha=3/255, steps=16, lam=10.0)
    task = MetricTask(net, pairs, {}, adversary=adversary, total_steps=1000, miner="gradual_hard")

An adversary maps `(embed, images, negatives, key, progress, parity)` to the triplet it trains on:
`(anchors, positives, negatives)` images [B, H, W, C] and a dict of diagnostics. `images` [2B, ...]
is the SPC-2 batch (anchor 2i, positive 2i+1), `negatives` [B] the mined negative of each anchor,
`embed` the model with its current parameters held fixed, `progress` = step / total steps in [0, 1]
and `parity` = step % 2. The step then takes the triplet loss of the returned triplet.

  * EST, embedding-shifted triplet (Zhou et al. 2020; RobRank `defenses/est.py`): every image is
    replaced by its embedding-shift example (PGD maximising ||f(x') - f(x)||).
  * ACT, anti-collapse triplet (Zhou & Patel 2022; RobRank `defenses/pnp.py`, `pncollapse`): the
    positive and the negative are perturbed to collapse onto each other (PGD minimising
    d(f(p'), f(n'))); the anchor stays clean.
  * TRIDE (CA-TRIDE `defenses/pnp.py`): steps alternate between candidate perturbation (CAP:
    positive and negative perturbed, anchor clean) and anchor perturbation (ANP: anchor perturbed,
    candidates clean), with the step size ramped by training progress (alpha * step / total).
    Without CA (our reading of the ablation): CAP minimises mean d_an - mean d_ap for all its steps,
    ANP maximises the anchor's displacement mean ||f(a') - f(a)||.
  * CA-TRIDE: the collapse-aware objectives of the official code, with collapseness's soft-max
    pooled distances d~ = pool(d, lam):
      CAP minimises relu(d~_an - d~_ap) and stops as soon as it is below 1e-5 (collapse reached);
      ANP minimises relu(d~_ap - d~_an) + gamma * relu(mean of the smallest half of d_an -
      mean ||f(a') - f(a)||), gamma = exp(-relu(d~_an - d~_ap)) (a constant, no gradient), and stops
      the same way.
The early stop is per batch, as in the official loop (one `break` for the whole batch).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxml.papers.catride.attacks import check_budget, nudged, shift_away
from jaxml.papers.catride.collapse import softmax_pool
from jaxml.papers.catride.metric_learning import pair_distance

STOP_BELOW = 1e-5       # CA-TRIDE's collapse-aware early stop (the official `if loss < 1e-5: break`)
DEFENCES = ("none", "est", "act", "tride", "catride")


def pgd_until(objective: Callable[[jax.Array], jax.Array], x0: jax.Array, *, eps: float, size, steps: int,
              stop_below: float | None = None) -> tuple[jax.Array, jax.Array]:
    """Signed-gradient descent on `objective` in the L-infinity ball of radius eps around x0 (within
    [0, 1]) with step `size`, for `steps` steps or, with `stop_below`, until the objective at the
    current point is below it (checked before each step, as the official loop does). Returns the
    images and the number of steps taken (int32)."""
    value_and_grad = jax.value_and_grad(objective)

    def step(_, carry):
        x, done, taken = carry
        value, grad = value_and_grad(x)
        if stop_below is not None:
            done = done | (value < stop_below)
        moved = jnp.clip(jnp.clip(x - size * jnp.sign(grad), x0 - eps, x0 + eps), 0.0, 1.0)
        return jnp.where(done, x, moved), done, taken + (~done).astype(jnp.int32)

    x, _, taken = jax.lax.fori_loop(0, steps, step, (x0, jnp.asarray(False), jnp.zeros((), jnp.int32)))
    return x, taken


def _split(images, negatives):
    return images[0::2], images[1::2], images[negatives]


def est(embed, images, negatives, key, progress, parity, *, eps, alpha, steps):
    """EST: every image shifted away from its (`nudged`) clean embedding."""
    del progress, parity
    check_budget(eps, alpha, steps)
    clean = jax.lax.stop_gradient(embed(images))
    adv = jax.lax.stop_gradient(shift_away(embed, images, nudged(clean, key), eps, alpha, steps))
    return (*_split(adv, negatives), {"pgd_steps": jnp.asarray(steps, jnp.float32)})


def act(embed, images, negatives, key, progress, parity, *, eps, alpha, steps):
    """ACT: positives and negatives pulled onto each other, anchors clean."""
    del key, progress, parity
    check_budget(eps, alpha, steps)
    a, p, n = _split(images, negatives)
    b = a.shape[0]

    def objective(pn):
        e = embed(pn)
        return jnp.mean(pair_distance(e[:b], e[b:]))

    pn, taken = pgd_until(objective, jnp.concatenate([p, n]), eps=eps, size=eps if steps == 1 else alpha,
                          steps=steps)
    pn = jax.lax.stop_gradient(pn)
    return a, pn[:b], pn[b:], {"pgd_steps": taken.astype(jnp.float32)}


def _cap_objective(embed, a, b, collapse_aware, lam):
    e_anchor = jax.lax.stop_gradient(embed(a))

    def objective(pn):
        e = embed(pn)
        d_ap, d_an = pair_distance(e[:b], e_anchor), pair_distance(e_anchor, e[b:])
        if collapse_aware:
            return jax.nn.relu(softmax_pool(d_an, lam) - softmax_pool(d_ap, lam))
        return jnp.mean(d_an) - jnp.mean(d_ap)

    return objective


def _anp_objective(embed, a, p, n, collapse_aware, lam):
    e_clean = jax.lax.stop_gradient(embed(a))
    e_p, e_n = jax.lax.stop_gradient(embed(p)), jax.lax.stop_gradient(embed(n))
    half = max(a.shape[0] // 2, 1)

    def objective(x):
        e = embed(x)
        shift = jnp.mean(pair_distance(e, e_clean))
        if not collapse_aware:
            return -shift
        d_ap, d_an = pair_distance(e_p, e), pair_distance(e, e_n)
        pooled_ap, pooled_an = softmax_pool(d_ap, lam), softmax_pool(d_an, lam)
        near_negatives = jnp.mean(-jax.lax.top_k(-d_an, half)[0])        # mean of the smallest half
        gamma = jax.lax.stop_gradient(jnp.exp(-jax.nn.relu(pooled_an - pooled_ap)))
        return jax.nn.relu(pooled_ap - pooled_an) + gamma * jax.nn.relu(near_negatives - shift)

    return objective


def tride(embed, images, negatives, key, progress, parity, *, eps, alpha, steps, collapse_aware: bool = False,
          lam: float = 10.0):
    """TRIDE / CA-TRIDE: CAP on even steps, ANP on odd steps (see the module docstring)."""
    del key
    check_budget(eps, alpha, steps)
    a, p, n = _split(images, negatives)
    b = a.shape[0]
    size = (eps if steps == 1 else alpha) * progress          # the official ramp alpha * epoch / maxepoch
    stop = STOP_BELOW if collapse_aware else None

    def cap(_):
        pn, taken = pgd_until(_cap_objective(embed, a, b, collapse_aware, lam), jnp.concatenate([p, n]),
                              eps=eps, size=size, steps=steps, stop_below=stop)
        return a, pn[:b], pn[b:], taken

    def anp(_):
        adv, taken = pgd_until(_anp_objective(embed, a, p, n, collapse_aware, lam), a, eps=eps, size=size,
                               steps=steps, stop_below=stop)
        return adv, p, n, taken

    xa, xp, xn, taken = jax.lax.cond(parity == 0, cap, anp, None)
    xa, xp, xn = (jax.lax.stop_gradient(v) for v in (xa, xp, xn))
    return xa, xp, xn, {"pgd_steps": taken.astype(jnp.float32), "anp_step": parity.astype(jnp.float32)}


def make_adversary(defence: str, *, eps: float, alpha: float, steps: int, lam: float = 10.0):
    """The adversary of `defence` (one of DEFENCES; "none" gives None) with its PGD budget."""
    if defence not in DEFENCES:
        raise ValueError(f"defence {defence!r}: accepted {DEFENCES}")
    check_budget(eps, alpha, steps)
    budget = dict(eps=eps, alpha=alpha, steps=steps)
    return {"none": None,
            "est": functools.partial(est, **budget),
            "act": functools.partial(act, **budget),
            "tride": functools.partial(tride, **budget, collapse_aware=False),
            "catride": functools.partial(tride, **budget, collapse_aware=True, lam=lam)}[defence]
