"""Mixtures of PCMs by spectral EM (the paper's Section on mixtures; official `SpectralEM`).

    fit = spectral_em(X, n_components=2, seed=0)                    # mode="quadrature" (ours, default)
    fit = spectral_em(X, n_components=2, seed=0, mode="official")   # the release's E-step and location step
    fit.thresholds   # [C, m, L]; fit.weights [C]; fit.responsibilities [n, C]; fit.abilities [n, C] (official)

Both modes share the initialisation, the spectral M-step and the stopping rule:

* Initialisation: k-means on per-user embeddings of pairwise response differences X_ui - X_uj
  (i < j; missing entries contribute 0; at most the 100 highest-variance items), as the official code.
* M-step: the spectral estimator on q_c-weighted counts (`pairwise_counts(weights=...)`), then the
  component's location (the spectral estimate fixes only level-1 mean 0) by maximising a marginal
  likelihood over shifts of the thresholds.
* Stop when sum_c ||beta_c_new - beta_c||^2 < tol (official: 1e-4) or after max_iters; given validation
  users, stop when their mean log-likelihood drops and return the previous iterate.

`mode="quadrature"` (ours, the default):
* E-step: q_uc proportional to pi_c * int P(x_u | theta, beta_c) N(theta; 0, sigma^2) dtheta, by
  Gauss-Hermite quadrature (`n_points` nodes); pi_c = mean_u q_uc is estimated.
* Start: the k-means labels softened to 0.98 / 0.02 (no component starts empty).
* M-step weights q_uc; location: the shift s maximising sum_u q_uc log int P(x_u | theta, beta_c + s)
  N(theta; 0, sigma^2) dtheta (the q-weighted marginal likelihood of whole response vectors), on a grid
  over +-4 sigma and a 20x finer grid around its best point.

`mode="official"`: what the release (`irt/algorithms/mixtures_poly_rasch.py` of dnguyen1196/spectral-rasch,
class `SpectralEM`) does, read there and restated:
* E-step (`SpectralEM.E_step`): q_uc proportional to prod_i P(x_ui | theta_hat_uc, beta_c) * N(theta_hat_uc; 0, sigma^2),
  with theta_hat_uc the plug-in ability MLE of user u under component c (bounded on [-6, 6], the release's
  `estimate_abilities_given_difficulties`, here `mle_abilities`), and no mixing weights (equal weights;
  `fit.weights` is 1/C). With one component q = 1.
* Start: the hard k-means labels (q in {0, 1}).
* M-step (`M_step`, `weighted_spectral_estimate`): the counts weighted by q_uc^2 (the release multiplies
  both indicator matrices by q before their product). Location (`estimate_shift_mmle`): the shift s
  maximising sum_u [n_u log q_uc + sum_{i answered} log Pbar_i(x_ui; s)], where
  Pbar_i(k; s) = sum_g w_g P(k | z_g, beta_ic + s) averages each item's category probabilities separately
  over the release's 500-point grid z_g = linspace(-4 sigma, 4 sigma) with normalised N(0, sigma^2)
  density weights w_g, and n_u is the number of items u answered. The release multiplies q_uc into every
  factor of a user's product in float64 and np.ma's log masks a product that is 0, so a user counts only
  if q_uc^n_u prod_i Pbar_i does not underflow (it does for q_uc = 0, as in the hard start, and for q_uc
  below about 1e-16 with 20 items answered), and then with weight 1: log q_uc does not depend on s.
  Then theta_hat_uc = the MLE given the shifted thresholds.

Differences from the release that remain in the official mode (none changes the formulas above):
* The release multiplies probabilities in float64; a user whose E-step likelihood underflows (below
  e^-744, hundreds of items) gets q = 0 during the iterations and 1/C at the end there. Here the
  posterior is computed in log space and is defined for every user; the two agree wherever the release's
  is defined.
* The location maximiser: the release runs scipy `minimize` (BFGS from 0.1); here three nested grids
  over +-4 sigma (resolution 0.0005 sigma) on the same objective.
* The release's mixture M-step does not zero the diagonal of Y^(1,k-1) in the level shifts (its single-PCM
  estimator does); the shared spectral code here always does. The release's power iteration stops on a
  max-abs change of 1e-4 (at most 1000 steps); here the shared l2 tolerance 1e-6.
* On convergence the release returns the previous iterate's thresholds with the newest abilities; here
  the newest iterate, its abilities and its E-step. Early stopping uses held-out users' marginal
  log-likelihood (the release: held-out ratings scored with plug-in abilities).

Why quadrature is the default: it is better as measured, and it is EM for the mixture's marginal
likelihood. On the two-group mixture of the tests (2 x 1500 users, 10 items, L = 2) the official mode
assigns as many users (90.6% vs 90.8%) but its per-threshold RMSE is 0.245 against 0.084; in `pcm/mixture`
at quick scale 0.201 against 0.083, and its held-out log-likelihood is lower for C >= 2 on the simulated
and all three real data sets (README). The loss is the release's q^2 weighting of the counts: E[q_c f(x)]
is component c's expectation of f, E[q_c^2 f(x)] tilts it towards users assigned with confidence. With
q-weighted counts (`count_weights="q"`) the plug-in E-step does as well as the quadrature one on the three
seeds measured (RMSE 0.083 / 0.104 / 0.113 vs 0.084 / 0.102 / 0.162). The official mode stays for
comparison with the authors' numbers.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.papers.pcm.abilities import gauss_hermite, mle_abilities, response_log_likelihood
from jaxml.papers.pcm.spectral import (category_log_probs, check_counts, pairwise_counts, thresholds_from_counts,
                                       validate_responses)

MODES = ("quadrature", "official")
OFFICIAL_GRID_POINTS = 500                           # the release's `grid_size` in `estimate_shift_mmle`
_LOG_TINY64 = float(np.log(np.nextafter(0.0, 1.0)))  # -744.44: log of float64's smallest positive number


class MixtureFit(NamedTuple):
    thresholds: np.ndarray        # [C, m, L]
    weights: np.ndarray           # [C]; official mode: 1/C (its E-step has no mixing weights)
    responsibilities: np.ndarray  # [n, C]
    log_likelihood: float         # marginal log-likelihood of the training data (with `weights`)
    iterations: int
    abilities: np.ndarray | None = None   # [n, C] plug-in ability MLEs per component (official mode only)
    mode: str = "quadrature"


def _embed(x, max_items=100):
    obs = x >= 0
    var = np.where(obs, x, np.nan)
    var = np.nan_to_num(np.nanvar(var, axis=0), nan=0.0)
    items = np.sort(np.argsort(-var, kind="stable")[:max_items])
    xs, os_ = x[:, items].astype(np.float32), obs[:, items]
    i, j = np.triu_indices(len(items), 1)
    return np.where(os_[:, i] & os_[:, j], xs[:, i] - xs[:, j], 0.0)


def kmeans(points, k: int, seed: int = 0, iters: int = 30) -> np.ndarray:
    """Lloyd's k-means with k-means++ seeding; returns labels `[n]`."""
    rng = np.random.default_rng(seed)
    pts = jnp.asarray(points, jnp.float32)
    centres = [pts[rng.integers(len(pts))]]
    for _ in range(1, k):
        d2 = np.asarray(jnp.min(jnp.stack([((pts - c) ** 2).sum(1) for c in centres]), 0), np.float64)
        centres.append(pts[rng.choice(len(pts), p=d2 / d2.sum()) if d2.sum() > 0 else rng.integers(len(pts))])
    centres = jnp.stack(centres)

    @jax.jit
    def step(c):
        d2 = (pts ** 2).sum(1)[:, None] - 2 * pts @ c.T + (c ** 2).sum(1)[None]
        labels = jnp.argmin(d2, 1)
        onehot = jax.nn.one_hot(labels, k, dtype=pts.dtype)
        size = onehot.sum(0)
        new = (onehot.T @ pts) / jnp.maximum(size, 1)[:, None]
        return jnp.where(size[:, None] > 0, new, c), labels

    for _ in range(iters):
        centres, labels = step(centres)
    return np.asarray(labels)


@jax.jit
def _marginal_loglik(x, thresholds, nodes, log_w):
    """log int P(x_u | theta, beta) N(theta) dtheta `[n]` for one component."""
    return jax.nn.logsumexp(response_log_likelihood(x, thresholds, nodes) + log_w, -1)


@jax.jit
def _shift_scores(x, beta, q, nodes, log_w, shifts):
    return jax.lax.map(lambda s: (q * _marginal_loglik(x, beta + s, nodes, log_w)).sum(), shifts)


@jax.jit
def _component_log_likelihoods(x, thresholds, log_pi, nodes, log_w):
    """log pi_c + log int P(x_u | theta, beta_c) N(theta) dtheta, `[n, C]` (thresholds `[C, m, L]`)."""
    return jnp.stack([_marginal_loglik(x, b, nodes, log_w) for b in thresholds], 1) + log_pi


@jax.jit
def _posterior(x, thresholds, log_pi, nodes, log_w):
    """The E-step: responsibilities `[n, C]` and the marginal log-likelihood of the data (one program)."""
    comp = _component_log_likelihoods(x, thresholds, log_pi, nodes, log_w)
    norm = jax.nn.logsumexp(comp, 1, keepdims=True)
    return jnp.exp(comp - norm), norm.sum()


@jax.jit
def _quadrature(nodes, weights):
    return jnp.asarray(nodes, jnp.float32), jnp.log(jnp.asarray(weights, jnp.float32))


@jax.jit
def _shifted(beta, shift):
    return beta + shift


@functools.partial(jax.jit, static_argnames=("sigma", "points"))
def _best_shift(x, beta, q, nodes, log_w, sigma, points=41):
    """The shift delta maximising sum_u q_u log int P(x_u | theta, beta + delta) N(theta) dtheta: a grid
    over +-4 sigma, then a grid 20x finer around its best point."""
    coarse = jnp.linspace(-4 * sigma, 4 * sigma, points)
    best = coarse[jnp.argmax(_shift_scores(x, beta, q, nodes, log_w, coarse))]
    step = coarse[1] - coarse[0]
    fine = best + jnp.linspace(-step, step, points)
    return fine[jnp.argmax(_shift_scores(x, beta, q, nodes, log_w, fine))]


@functools.partial(jax.jit, static_argnames=("batch_size",))
def _official_log_posterior(x, thresholds, abilities, sigma, batch_size):
    """log q `[n, C]` of the release's E-step (see the module docstring), in log space."""
    levels = jnp.arange(thresholds.shape[-1] + 1)

    def one(args):                                                       # one user: x [m], theta [C]
        xu, theta = args
        logp = jax.vmap(category_log_probs)(theta, thresholds)             # [C, m, L+1]
        onehot = (xu[:, None] == levels).astype(logp.dtype)                # [m, L+1]; missing rows are 0
        return jnp.einsum("ik,cik->c", onehot, logp)

    ll = jax.lax.map(one, (x, abilities), batch_size=batch_size)           # [n, C]
    ll = ll + jax.scipy.stats.norm.logpdf(abilities, 0.0, sigma)
    return jax.nn.log_softmax(ll, -1)


def official_e_step(responses, thresholds, abilities, *, sigma: float = 1.0, batch_size: int = 4096) -> np.ndarray:
    """The release's E-step (`SpectralEM.E_step`): plug-in abilities, no mixing weights.

        q_uc = prod_i P(x_ui | theta_uc, beta_c) N(theta_uc; 0, sigma^2) / sum_c' (same with c')

    over the items i user u answered. Computed in log space (the release multiplies probabilities in
    float64; the two agree wherever its products do not underflow).

    Args:
      responses: `[n, m]` scores (-1, -99999 or NaN missing; every user answers at least one item).
      thresholds: `[C, m, L]` per-component thresholds.
      abilities: `[n, C]` the abilities plugged in (the release: per-component MLEs on [-6, 6]).
      sigma: standard deviation of the N(0, sigma^2) ability density.
    Returns:
      `[n, C]` responsibilities (rows sum to 1).
    """
    thresholds = np.asarray(thresholds)
    if thresholds.ndim != 3:
        raise ValueError(f"thresholds: expected [C, m, L], got shape {thresholds.shape}")
    x, _ = validate_responses(responses, thresholds.shape[-1])
    theta = np.asarray(abilities)
    if theta.shape != (x.shape[0], thresholds.shape[0]) or x.shape[1] != thresholds.shape[1]:
        raise ValueError(f"abilities {theta.shape} and responses {x.shape} do not match thresholds "
                         f"{thresholds.shape}: expected abilities [n, C] and responses [n, m]")
    _check_sigma(sigma)
    dtype = jnp.result_type(float)                  # float64 under jax.enable_x64, else float32
    return np.exp(np.asarray(_official_log_posterior(jnp.asarray(x), jnp.asarray(thresholds, dtype),
                                                     jnp.asarray(theta, dtype), float(sigma),
                                                     int(min(batch_size, x.shape[0]))), np.float64))


def _official_grid(sigma, grid_points):
    """The release's ability grid `[G]` (relative to the location) and its log weights `[G]`."""
    z = jnp.linspace(-4.0 * sigma, 4.0 * sigma, grid_points)
    log_w = jax.scipy.stats.norm.logpdf(z, 0.0, sigma)
    return z, log_w - jax.nn.logsumexp(log_w)


def _official_shift_objective(x, beta, log_q, shift, z, log_w):
    """sum over kept users of n_u log q_u + sum_i log Pbar_i(x_ui; shift) (scalar; see the module docstring)."""
    logp = category_log_probs(z, beta + shift)                                  # [G, m, L+1]
    item = jax.nn.logsumexp(logp + log_w[:, None, None], 0)                     # [m, L+1]: log Pbar_i(k)
    obs = x >= 0
    per = jnp.where(obs, item[jnp.arange(x.shape[1]), jnp.maximum(x, 0)], 0.0).sum(-1)    # [n]
    scaled = jnp.where(jnp.isfinite(log_q), obs.sum(-1) * log_q, -jnp.inf)     # log q^n_u, -inf for q = 0
    total = scaled + per
    return jnp.where(total > _LOG_TINY64, total, 0.0).sum()


@functools.partial(jax.jit, static_argnames=("grid_points",))
def _official_shift_scores(x, beta, log_q, shifts, sigma, grid_points):
    z, log_w = _official_grid(sigma, grid_points)
    return jax.lax.map(lambda s: _official_shift_objective(x, beta, log_q, s, z, log_w), shifts)


def official_shift_log_likelihood(responses, thresholds, responsibilities, shifts, *, sigma: float = 1.0,
                                  grid_points: int = OFFICIAL_GRID_POINTS) -> np.ndarray:
    """The release's location objective (`SpectralEM.estimate_shift_mmle`) at each shift `[S]`.

    Value at s = -(the release's `approximate_marginal_llh(delta)` at delta = -s): thresholds + s with
    theta on the grid z_g is the release's theta on delta + z_g with the thresholds unshifted.

    Args:
      responses: `[n, m]` scores. thresholds: `[m, L]` (one component). responsibilities: `[n]` q_uc of
      that component (0 allowed). shifts: `[S]`. grid_points: the ability grid's size (release: 500).
    Returns:
      `[S]` objective values (to be maximised).
    """
    beta = np.asarray(thresholds)
    if beta.ndim != 2:
        raise ValueError(f"thresholds: expected [m, L] (one component), got shape {beta.shape}")
    x, _ = validate_responses(responses, beta.shape[1])
    q = np.asarray(responsibilities, np.float64)
    if q.shape != (x.shape[0],) or (q < 0).any() or not np.isfinite(q).all():
        raise ValueError(f"responsibilities: expected [{x.shape[0]}] finite values >= 0, got shape {q.shape}")
    _check_sigma(sigma)
    if grid_points < 2:
        raise ValueError(f"grid_points must be >= 2, got {grid_points}")
    with np.errstate(divide="ignore"):
        log_q = np.log(q)
    dtype = jnp.result_type(float)
    return np.asarray(_official_shift_scores(jnp.asarray(x), jnp.asarray(beta, dtype), jnp.asarray(log_q, dtype),
                                             jnp.asarray(np.atleast_1d(shifts), dtype), float(sigma),
                                             int(grid_points)), np.float64)


@functools.partial(jax.jit, static_argnames=("grid_points", "points", "levels"))
def _official_best_shift(x, beta, log_q, sigma, grid_points, points=41, levels=3):
    """Maximiser of the release's location objective by nested grids: `points` shifts over +-4 sigma, then
    `points` shifts over +-1 step around the best one, `levels` times (3: a resolution of 0.0005 sigma; the
    release runs scipy BFGS from 0.1 on the same objective)."""
    z, log_w = _official_grid(sigma, grid_points)
    f = lambda s: _official_shift_objective(x, beta, log_q, s, z, log_w)
    unit = jnp.linspace(-1.0, 1.0, points)

    def level(carry, _):
        centre, width = carry
        shifts = centre + width * unit
        best = shifts[jnp.argmax(jax.lax.map(f, shifts))]
        return (best, width * 2 / (points - 1)), None

    (best, _), _ = jax.lax.scan(level, (jnp.zeros_like(sigma * 1.0), 4.0 * sigma), None, length=levels)
    return best


def _check_sigma(sigma):
    if not (np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a positive finite number, got {sigma!r}")


def spectral_em(responses, n_components: int, n_levels: int | None = None, *, mode: str = "quadrature",
                seed: int = 0, sigma: float = 1.0, max_iters: int = 30, tol: float = 1e-4, lam: float = 0.1,
                n_points: int = 41, grid_points: int = OFFICIAL_GRID_POINTS, count_weights: str | None = None,
                init_labels=None, validation=None) -> MixtureFit:
    """Fits a C-component mixture of PCMs (see the module docstring for both modes).

    Args:
      responses: `[n, m]` scores 0..L (-1, -99999 or NaN missing; every user answers at least one item).
      n_components: C, in [1, n].
      mode: "quadrature" (ours, default: theta integrated out, mixing weights estimated) or "official"
        (the release: plug-in ability MLEs, no mixing weights, its location step on a `grid_points` grid).
      sigma: standard deviation of the N(0, sigma^2) ability distribution in each component.
      n_points: Gauss-Hermite nodes of the quadrature mode (and of `log_likelihood` in both modes).
      grid_points: the official mode's ability grid in the location step (release: 500).
      count_weights: the per-user weights of component c's counts in the M-step: "q" (q_uc, the EM
        weights) or "q2" (q_uc^2, as the release); None: "q" in the quadrature mode, "q2" in the official.
      init_labels: optional `[n]` starting labels in 0..C-1 (default: k-means as the release).
      validation: optional `[n_val, m]` responses of other users; EM stops early when their mean
        log-likelihood drops, and the previous iterate is returned.
    Returns:
      `MixtureFit`: thresholds `[C, m, L]`, weights `[C]`, responsibilities `[n, C]`, abilities `[n, C]`
      (official mode; None otherwise).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    _check_sigma(sigma)
    x, n_levels = validate_responses(responses, n_levels)
    n, m = x.shape
    if n_components < 1 or n_components > n:
        raise ValueError(f"n_components must be in [1, n_users={n}], got {n_components}")
    official = mode == "official"
    count_weights = ("q2" if official else "q") if count_weights is None else count_weights
    if count_weights not in ("q", "q2"):
        raise ValueError(f"count_weights must be 'q', 'q2' or None, got {count_weights!r}")
    nodes, log_w = _quadrature(*gauss_hermite(n_points, 0.0, sigma))
    xj = jnp.asarray(x)
    labels = kmeans(_embed(x), n_components, seed) if init_labels is None else np.asarray(init_labels)
    if labels.shape != (n,) or labels.min() < 0 or labels.max() >= n_components:
        raise ValueError(f"init_labels: expected [{n}] integers in 0..{n_components - 1}, got shape {labels.shape}")
    q = np.asarray(jax.nn.one_hot(labels, n_components), np.float64)
    if official:
        with np.errstate(divide="ignore"):
            log_q = np.log(q)                                      # hard start: log 0 = -inf
        uniform = np.full(n_components, 1.0 / n_components)
    else:
        q = 0.98 * q + 0.02 / n_components                         # soft start: no component is empty
    beta = np.zeros((n_components, m, n_levels))
    theta = np.zeros((n, n_components), np.float32) if official else None
    ll_total, it, best_val, previous = -np.inf, 0, -np.inf, None
    for it in range(1, max_iters + 1):
        new = np.empty_like(beta)
        for c in range(n_components):
            # "q2": the release weights its counts by q^2 (both indicator matrices carry q)
            counts = pairwise_counts(x, n_levels, q[:, c] ** 2 if count_weights == "q2" else q[:, c],
                                     validate=False)
            check_counts(counts)
            b = thresholds_from_counts(counts, lam=lam, check=False).thresholds
            if official:
                shift = _official_best_shift(xj, b, jnp.asarray(log_q[:, c], jnp.float32), float(sigma),
                                             int(grid_points))
            else:
                shift = _best_shift(xj, b, jnp.asarray(q[:, c], jnp.float32), nodes, log_w, float(sigma))
            new[c] = np.asarray(_shifted(b, shift))
            if official:
                theta[:, c] = np.asarray(mle_abilities(xj, jnp.asarray(new[c], jnp.float32), validate=False))
        change = float(((new - beta) ** 2).sum())
        beta = new
        beta_j = jnp.asarray(beta, jnp.float32)
        if official:
            log_q = np.asarray(_official_log_posterior(xj, beta_j, jnp.asarray(theta), float(sigma),
                                                       int(min(4096, n))), np.float64)
            q = np.exp(log_q)
            _, ll_total = _posterior(xj, beta_j, jnp.asarray(np.log(uniform), jnp.float32), nodes, log_w)
            current = MixtureFit(beta.copy(), uniform.copy(), q, float(ll_total), it, theta.copy(), mode)
        else:
            with np.errstate(divide="ignore"):          # an emptied component: log 0 = -inf, as before
                log_pi = np.log(q.mean(0))
            q, ll_total = _posterior(xj, beta_j, jnp.asarray(log_pi, jnp.float32), nodes, log_w)
            q, ll_total = np.asarray(q, np.float64), float(ll_total)
            current = MixtureFit(beta.copy(), q.mean(0), q, ll_total, it)
        if validation is not None:
            val = float(mixture_log_likelihood(current, validation, sigma=sigma, n_points=n_points).mean())
            if val < best_val and previous is not None:
                return previous
            best_val, previous = val, current
        if change < tol:
            break
    return current


def mixture_log_likelihood(fit: MixtureFit, responses, *, sigma: float = 1.0, n_points: int = 41) -> np.ndarray:
    """log sum_c pi_c int P(x_u | theta, beta_c) N(theta; 0, sigma^2) dtheta per user `[n]` (held-out data)."""
    x, _ = validate_responses(responses, fit.thresholds.shape[-1], allow_empty_rows=True)
    nodes, log_w = _quadrature(*gauss_hermite(n_points, 0.0, sigma))
    with np.errstate(divide="ignore"):
        log_pi = np.log(np.asarray(fit.weights, np.float64))
    return np.asarray(_mixture_log_likelihood(jnp.asarray(x), jnp.asarray(fit.thresholds, jnp.float32),
                                              jnp.asarray(log_pi, jnp.float32), nodes, log_w))


@jax.jit
def _mixture_log_likelihood(x, thresholds, log_pi, nodes, log_w):
    return jax.nn.logsumexp(_component_log_likelihoods(x, thresholds, log_pi, nodes, log_w), 1)


def permutation_error(estimate, truth) -> float:
    """min over component permutations of the Frobenius norm of the (grand-mean centred) difference."""
    import itertools

    est, tru = np.asarray(estimate, np.float64), np.asarray(truth, np.float64)
    offset = tru.mean() - est.mean()       # one shift common to all components stays unidentified
    return min(float(np.linalg.norm(est[list(p)] + offset - tru)) for p in itertools.permutations(range(len(tru))))
