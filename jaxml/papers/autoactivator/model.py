"""AutoActivator: a network of random hidden units grown per task session under a supervisory
mechanism, closed-form output weights, and task-agnostic reactivation of units at inference.

    net = AutoActivator.empty(dim=784, num_classes=10)
    for session in stream:                                    # jaxml.papers.autoactivator.stream
        net, log = learn_session(net, session.x_train, session.y_train, session.classes, key, cfg)
    labels = net.predict(x_test)                              # int [n], no task id given

Shapes: inputs x float32 [n, d]; session t's group of L_t units has input weights W [d_t, L_t]
(d_t = d + L_1 + ... + L_{t-1}: the new units read the input and every existing unit's activation),
biases b [L_t], output weights beta [L_t, C] over the C classes of the whole stream.

One session (`learn_session`), for session t with one-hot targets Y [n, C]:
  1. The residual the new units must explain is E0 = Y - F_{<t}(x): the prediction of the units of
     the earlier sessions, with their output weights frozen (knowledge transfer: the new units build
     on the existing ones and only correct what they get wrong on the new classes). The new units are
     connected to the existing ones: they read the input and the existing units' activations.
  2. Growth. Each step draws `candidates` batches of `batch_units` random units (uniform input
     weights and biases at several scales, stochastic-configuration style) and scores them all in
     one jitted pass: for candidate activations G [n, k] and residual column e_q,
         xi_q = e_q' G (G'G)^-1 G' e_q - (1 - r - mu_L) ||e_q||^2,     mu_L = (1 - r) / (L + 1),
     the block form of the SCN supervisory inequality (Wang & Li 2017; Dai et al. 2019). A batch is
     admissible when xi_q >= 0 for every output q; the admissible batch with the largest sum of xi
     is recruited. When none is admissible, r is relaxed along `r_schedule`; when r runs out, growth
     stops. Growth also stops when the mean squared residual reaches `tolerance` or at `max_units`.
  3. Output weights in closed form: beta = (H'H + lambda I)^-1 H'E0 over the session's units H,
     with the Cholesky factor of H'H + lambda I extended block by block as units join
     (`CholeskyRidge`); nothing is trained by back-propagation and old units never change.
  4. Reactivation statistics over the units that take part when session t is reactivated (those
     of sessions 1..t): one mean per class of the session and a shared, shrunk covariance of their
     activations on the session's training inputs; s_t(x) = min over the session's classes of the
     Mahalanobis distance per unit, and the threshold tau_t = the `quantile` of s_t over those
     inputs.

Inference (`AutoActivator.predict`): for a test input every session's units score it; the units
of session t are reactivated when s_t(x) <= tau_t. The session picked is the reactivated one with
the smallest s_t / tau_t (when none or several pass, still the smallest ratio); its units and those
of the sessions it was built on (1..t) take part, the later units stay inactive, and the argmax runs
over the classes seen through session t. `predict(..., reactivate=False)` is the ablation: every
unit takes part for every input.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

ACTIVATIONS = {"sigmoid": jax.nn.sigmoid, "tanh": jnp.tanh, "relu": jax.nn.relu}
FAN_IN_BUCKET = 128   # candidate scoring pads the unit inputs to a multiple of this many columns


@dataclasses.dataclass(frozen=True)
class GrowthConfig:
    """Hyper-parameters of one session's growth (defaults: the Fashion-MNIST pixels setting).

    Attributes:
      batch_units: k, units per candidate batch (the step size of growth).
      candidates: candidate batches drawn and scored together at every step.
      scales: input-weight ranges; candidate c draws W ~ U[-s, s] / sqrt(d), b ~ U[-s, s] / 2 with
        s = scales[c % len(scales)].
      r_schedule: the contraction factors r tried in order (0 < r < 1); a larger r admits a batch
        that explains less of the residual.
      tolerance: stop when the mean squared residual per entry of E reaches this.
      max_units: the most units one session may add.
      ridge: lambda of the closed-form output weights.
      check: the supervisory mechanism; False is the ablation that recruits a random candidate
        batch at every step unchecked (same stopping rule).
      activation: "sigmoid", "tanh" or "relu".
      shrinkage: covariance shrinkage of the reactivation Gaussian (towards its mean variance).
      quantile: the reactivation threshold's quantile of the training scores.
      connect: new units read the existing units' activations as well as the input (a network
        built by `learn_stream` takes it from here).
    """

    batch_units: int = 10
    candidates: int = 32
    scales: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0)
    r_schedule: tuple[float, ...] = (0.9, 0.99, 0.999, 0.9999)
    tolerance: float = 0.01
    max_units: int = 200
    ridge: float = 1e-3
    check: bool = True
    activation: str = "sigmoid"
    shrinkage: float = 0.1
    quantile: float = 0.95
    connect: bool = True

    def __post_init__(self):
        if self.batch_units < 1 or self.candidates < 1 or self.max_units < self.batch_units:
            raise ValueError(f"GrowthConfig: need batch_units >= 1, candidates >= 1 and max_units >= batch_units, "
                             f"got {self.batch_units}, {self.candidates}, {self.max_units}")
        if not self.r_schedule or not all(0.0 < r < 1.0 for r in self.r_schedule):
            raise ValueError(f"GrowthConfig.r_schedule: values in (0, 1) expected, got {self.r_schedule}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"GrowthConfig.activation {self.activation!r}: accepted {sorted(ACTIVATIONS)}")
        if not 0.0 < self.quantile <= 1.0 or not 0.0 <= self.shrinkage <= 1.0:
            raise ValueError("GrowthConfig: quantile must be in (0, 1] and shrinkage in [0, 1]")
        if self.ridge <= 0.0 or not self.scales:
            raise ValueError("GrowthConfig: ridge must be > 0 and scales non-empty")


# --- The supervisory mechanism -------------------------------------------------------------------

def sample_candidates(key: jax.Array, dim: int, cfg: GrowthConfig) -> tuple[jax.Array, jax.Array]:
    """Random candidate batches: W [candidates, d, k] and b [candidates, k] (uniform, several scales)."""
    kw, kb = jax.random.split(key)
    shape = (cfg.candidates, dim, cfg.batch_units)
    scale = jnp.asarray(cfg.scales, jnp.float32)[jnp.arange(cfg.candidates) % len(cfg.scales)]
    w = jax.random.uniform(kw, shape, minval=-1.0, maxval=1.0) * scale[:, None, None] / np.sqrt(dim)
    b = jax.random.uniform(kb, shape[::2], minval=-1.0, maxval=1.0) * scale[:, None] / 2.0
    return w, b


@functools.partial(jax.jit, static_argnames="activation")
def candidate_projections(x: jax.Array, w: jax.Array, b: jax.Array, residual: jax.Array,
                          activation: str = "sigmoid") -> jax.Array:
    """||P_c e_q||^2 = e_q' G_c (G_c'G_c)^-1 G_c' e_q for every candidate c and output q: [C, m].

    x [n, d], w [C, d, k], b [C, k], residual [n, m]. One pass for all candidates (a single
    [n, d] x [d, C*k] product), with a relative jitter on G'G for candidates whose units are
    (numerically) collinear.
    """
    num, dim, k = w.shape
    g = ACTIVATIONS[activation](x @ w.transpose(1, 0, 2).reshape(dim, num * k) + b.reshape(-1))
    g = g.reshape(x.shape[0], num, k)
    gram = jnp.einsum("nck,ncl->ckl", g, g)
    gram = gram + 1e-6 * jnp.trace(gram, axis1=1, axis2=2)[:, None, None] / k * jnp.eye(k)
    ge = jnp.einsum("nck,nq->ckq", g, residual)
    return jnp.sum(ge * jnp.linalg.solve(gram, ge), axis=1)


def supervisory_xi(projections: np.ndarray, residual_energy: np.ndarray, r: float, units: int) -> np.ndarray:
    """xi [C, m] = ||P_c e_q||^2 - (1 - r - mu_L) ||e_q||^2 with mu_L = (1 - r) / (L + 1)."""
    mu = (1.0 - r) / (units + 1.0)
    return np.asarray(projections) - (1.0 - r - mu) * np.asarray(residual_energy)[None, :]


def select_candidate(xi: np.ndarray) -> int | None:
    """The admissible candidate (xi_q >= 0 for all q) with the largest sum of xi, or None."""
    xi = np.asarray(xi)
    admissible = np.all(xi >= 0.0, axis=1)
    if not admissible.any():
        return None
    return int(np.argmax(np.where(admissible, xi.sum(axis=1), -np.inf)))


# --- Closed-form output weights ------------------------------------------------------------------

class CholeskyRidge:
    """Ridge least squares min ||T - H beta||^2 + lambda ||beta||^2 whose columns H arrive in blocks.

    Keeps the lower Cholesky factor of H'H + lambda I and H'T (float64); `append(G)` extends them
    with a new block G [n, k] in O(L^2 k + n L k), `solve()` returns beta [L, m].
    """

    def __init__(self, targets: np.ndarray, ridge: float):
        self.targets = np.asarray(targets, np.float64)
        self.ridge = float(ridge)
        self.columns = np.zeros((len(self.targets), 0))
        self.factor = np.zeros((0, 0))
        self.h_t = np.zeros((0, self.targets.shape[1]))

    def append(self, block: np.ndarray) -> None:
        g = np.asarray(block, np.float64)
        cross = self.columns.T @ g                                      # [L, k]
        lower = scipy.linalg.solve_triangular(self.factor, cross, lower=True) if len(cross) else cross
        corner = g.T @ g + self.ridge * np.eye(g.shape[1]) - lower.T @ lower
        corner_factor = np.linalg.cholesky(corner)
        size = self.factor.shape[0]
        factor = np.zeros((size + g.shape[1],) * 2)
        factor[:size, :size] = self.factor
        factor[size:, :size] = lower.T
        factor[size:, size:] = corner_factor
        self.factor = factor
        self.columns = np.concatenate([self.columns, g], axis=1)
        self.h_t = np.concatenate([self.h_t, g.T @ self.targets], axis=0)

    def solve(self) -> np.ndarray:
        if self.factor.shape[0] == 0:
            return np.zeros((0, self.targets.shape[1]))
        return scipy.linalg.cho_solve((self.factor, True), self.h_t)

    def residual(self, beta: np.ndarray | None = None) -> np.ndarray:
        beta = self.solve() if beta is None else beta
        return self.targets - self.columns @ beta


# --- The network ---------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class UnitGroup:
    """The units one session added: W [d_t, L], b [L], beta [L, C], the classes it introduced, and
    its reactivation statistics over the P units of sessions 1..t: class means [c_t, P], the
    precision [P, P] of their shared covariance, and the threshold tau."""

    w: np.ndarray
    b: np.ndarray
    beta: np.ndarray
    classes: tuple[int, ...]
    means: np.ndarray
    precision: np.ndarray
    threshold: float

    @property
    def units(self) -> int:
        return int(self.w.shape[1])


@dataclasses.dataclass(frozen=True)
class AutoActivator:
    """The grown network: one `UnitGroup` per session, in learning order. With `connect` the units
    of a session read the input and the activations of every earlier session's units (the paper's
    new units "connected with existing ones"); without, the input only."""

    dim: int
    num_classes: int
    groups: tuple[UnitGroup, ...] = ()
    activation: str = "sigmoid"
    connect: bool = True

    @classmethod
    def empty(cls, dim: int, num_classes: int, activation: str = "sigmoid", connect: bool = True) -> AutoActivator:
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation {activation!r}: accepted {sorted(ACTIVATIONS)}")
        return cls(dim=dim, num_classes=num_classes, activation=activation, connect=connect)

    @property
    def units_per_session(self) -> list[int]:
        return [g.units for g in self.groups]

    def _check(self, x) -> np.ndarray:
        x = np.asarray(x, np.float32)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"AutoActivator expects inputs [n, {self.dim}], got shape {x.shape}")
        return x

    def unit_inputs(self, x, hidden: Sequence[jax.Array]) -> jax.Array:
        """What a new unit reads: the input x [n, d] and, with `connect`, the activations of the
        existing units `hidden` (one [n, L_s] array per earlier session) -> [n, d + sum L_s]."""
        x = jnp.asarray(x)
        return jnp.concatenate([x, *hidden], axis=1) if self.connect and hidden else x

    def group_activations(self, x, upto: int | None = None) -> list[jax.Array]:
        """Activations of the units of sessions 0..upto (default all), one [n, L_t] array each;
        session t's units read x and (with `connect`) the activations of sessions 0..t-1."""
        upto = len(self.groups) - 1 if upto is None else upto
        out: list[jax.Array] = []
        for g in self.groups[:upto + 1]:
            out.append(ACTIVATIONS[self.activation](self.unit_inputs(x, out) @ g.w + g.b))
        return out

    def activations(self, x, group: int) -> jax.Array:
        """Activations [n, L_t] of session `group`'s units."""
        return self.group_activations(x, group)[group]

    def session_outputs(self, x) -> jax.Array:
        """Per-session output contributions [T, n, C] (each group's activations times its beta)."""
        return self.forward(x)[1]

    def all_activations(self, x) -> jax.Array:
        """Activations [n, L_1 + ... + L_T] of every unit, session by session."""
        return jnp.concatenate(self.group_activations(x), axis=1)

    def scores(self, x) -> jax.Array:
        """Normalised reactivation scores [n, T]: s_t(x) / tau_t (<= 1: session t's units fire)."""
        return self.forward(x)[0]

    def forward(self, x) -> tuple[jax.Array, jax.Array]:
        """(scores [n, T], session outputs [T, n, C]) from one pass over the units."""
        hidden = self.group_activations(self._check(x))
        h = jnp.concatenate(hidden, axis=1)
        scores, units = [], 0
        for g in self.groups:
            units += g.units
            scores.append(session_score(h[:, :units], g.means, g.precision) / g.threshold)
        return jnp.stack(scores, axis=1), jnp.stack([a @ g.beta for a, g in zip(hidden, self.groups)])

    def route(self, x) -> np.ndarray:
        """The session whose units (with those it builds on) are reactivated for each input: int [n]."""
        return np.asarray(jnp.argmin(self.scores(x), axis=1))

    def logits(self, x, active: np.ndarray) -> np.ndarray:
        """Outputs [n, C] with session units gated by `active` bool [n, T]."""
        parts = self.session_outputs(x)                       # [T, n, C]
        return np.asarray(jnp.einsum("tnc,nt->nc", parts, jnp.asarray(active, parts.dtype)))

    def predict(self, x, reactivate: bool = True) -> np.ndarray:
        """Class ids [n]. With reactivation the units of sessions 1..t(x) take part and the argmax
        runs over their classes; without it every unit takes part for every input."""
        if not self.groups:
            raise ValueError("AutoActivator.predict: the network has learned no session yet")
        scores, parts = self.forward(x)
        return self._decide(np.asarray(scores), np.asarray(parts), len(self.groups) - 1, reactivate)

    def _decide(self, scores: np.ndarray, parts: np.ndarray, upto: int, reactivate: bool) -> np.ndarray:
        """Labels [n] of the network after session `upto` from the full network's normalised scores
        [n, T] and per-session outputs [T, n, C] (sessions after `upto` are simply ignored)."""
        n = scores.shape[0]
        session = np.argmin(scores[:, :upto + 1], axis=1) if reactivate else np.full(n, upto)
        prefix_sums = np.cumsum(parts[:upto + 1], axis=0)                # [upto + 1, n, C]
        seen = np.zeros((upto + 1, self.num_classes), bool)
        for t, g in enumerate(self.groups[:upto + 1]):
            seen[t:, list(g.classes)] = True
        out = np.where(seen[session], prefix_sums[session, np.arange(n)], -np.inf)
        return out.argmax(axis=1)

    def after(self, session: int) -> AutoActivator:
        """The network as it was right after `session` (its first session + 1 groups)."""
        if not 0 <= session < len(self.groups):
            raise ValueError(f"AutoActivator.after({session}): the network has sessions 0..{len(self.groups) - 1}")
        return dataclasses.replace(self, groups=self.groups[:session + 1])

    def accuracy_matrix(self, stream, reactivate: bool = True) -> np.ndarray:
        """acc [T, T]: accuracy on session j's test set of the network after session i (j <= i;
        0 above the diagonal), for the stream it learned. One forward pass: the network after i
        is the first i + 1 sessions' units, scores and outputs."""
        if len(stream) != len(self.groups):
            raise ValueError(f"accuracy_matrix: {len(stream)} sessions but the network learned {len(self.groups)}")
        x = self._check(np.concatenate([s.x_test for s in stream]))
        y = np.concatenate([s.y_test for s in stream])
        which = np.concatenate([np.full(len(s.y_test), j) for j, s in enumerate(stream)])
        scores, parts = (np.asarray(a) for a in self.forward(x))
        acc = np.zeros((len(stream),) * 2)
        for i in range(len(stream)):
            right = self._decide(scores, parts, i, reactivate) == y
            for j in range(i + 1):
                acc[i, j] = float(np.mean(right[which == j]))
        return acc

    def prefix_logits(self, x, upto: int) -> np.ndarray:
        """Outputs [n, C] of the units of sessions 0..upto (the network as it was after session `upto`)."""
        active = np.zeros((len(x), len(self.groups)), bool)
        active[:, :upto + 1] = True
        return self.logits(x, active)


@dataclasses.dataclass(frozen=True)
class SessionLog:
    """How one session grew: mean squared residual after every recruited batch (the first entry is
    before any unit), the r that admitted each batch, candidates scored, why growth stopped, time."""

    residual: list[float]
    objective: list[float]
    r_used: list[float]
    min_xi: list[float]
    candidates_scored: int
    rejected: int
    stop: str
    seconds: float


def learn_session(net: AutoActivator, x, y, classes: Sequence[int], key: jax.Array,
                  cfg: GrowthConfig) -> tuple[AutoActivator, SessionLog]:
    """Grows, fits and adds the units of one session; the earlier groups are not touched.

    Args:
      net: the network so far.
      x: float [n, d] the session's training inputs; y: int [n] global class ids, all in `classes`.
      classes: the classes this session introduces.
      key: PRNG key for the candidate draws.
      cfg: GrowthConfig.
    Returns:
      (the network with one more group, SessionLog).
    """
    start = time.perf_counter()
    x = net._check(x)
    y = np.asarray(y)
    if len(x) != len(y) or len(x) == 0:
        raise ValueError(f"learn_session: {len(x)} inputs and {len(y)} labels (need the same, > 0)")
    if not set(np.unique(y).tolist()) <= set(int(c) for c in classes):
        raise ValueError(f"learn_session: labels {sorted(set(np.unique(y).tolist()))} not all in classes {classes}")
    learned = {c for g in net.groups for c in g.classes}
    if learned & {int(c) for c in classes}:
        raise ValueError(f"learn_session: classes {sorted(learned & set(int(c) for c in classes))} were learned in an "
                         "earlier session (class-incremental sessions introduce new classes)")
    if max(int(c) for c in classes) >= net.num_classes or min(int(c) for c in classes) < 0:
        raise ValueError(f"learn_session: classes {tuple(classes)} outside 0..{net.num_classes - 1}")
    if cfg.activation != net.activation or cfg.connect != net.connect:
        raise ValueError(f"learn_session: cfg (activation {cfg.activation!r}, connect {cfg.connect}) does not match "
                         f"the network's (activation {net.activation!r}, connect {net.connect})")
    targets = np.eye(net.num_classes, dtype=np.float64)[y]
    if net.groups:
        targets = targets - net.prefix_logits(x, len(net.groups) - 1)
    solver = CholeskyRidge(targets, cfg.ridge)
    old_hidden = net.group_activations(x) if net.groups else []
    xd = net.unit_inputs(x, old_hidden)                    # [n, d (+ existing units)]
    fan_in = int(xd.shape[1])
    # The scoring pass sees the inputs zero-padded to a multiple of 128 columns (zero weights on the
    # padding), so the sessions of a stream share a few compiled programs instead of one each.
    pad = -fan_in % FAN_IN_BUCKET
    x_scored = jnp.pad(xd, ((0, 0), (0, pad)))
    weights, biases = [], []
    residual = targets
    log = dict(residual=[float(np.mean(residual ** 2))], objective=[float(np.sum(residual ** 2))], r_used=[],
               min_xi=[], candidates_scored=0, rejected=0)
    stop = "max_units"
    while sum(w.shape[1] for w in weights) < cfg.max_units:
        if log["residual"][-1] <= cfg.tolerance:
            stop = "tolerance"
            break
        key, sub = jax.random.split(key)
        w, b = sample_candidates(sub, fan_in, cfg)
        units = sum(w_.shape[1] for w_ in weights)
        if cfg.check:
            proj = np.asarray(candidate_projections(x_scored, jnp.pad(w, ((0, 0), (0, pad), (0, 0))), b,
                                                    jnp.asarray(residual, jnp.float32), net.activation), np.float64)
            energy = np.sum(residual ** 2, axis=0)
            log["candidates_scored"] += cfg.candidates
            choice = None
            for r in cfg.r_schedule:
                xi = supervisory_xi(proj, energy, r, units)
                choice = select_candidate(xi)
                if choice is not None:
                    log["rejected"] += int(np.sum(~np.all(xi >= 0, axis=1)))
                    log["r_used"].append(r)
                    log["min_xi"].append(float(xi[choice].min()))
                    break
            if choice is None:
                stop = "no_admissible_candidate"
                break
        else:  # the ablation: a random candidate batch, unchecked
            choice = int(jax.random.randint(jax.random.fold_in(sub, 1), (), 0, cfg.candidates))
        w_new, b_new = np.asarray(w[choice]), np.asarray(b[choice])
        block = np.asarray(ACTIVATIONS[net.activation](xd @ w_new + b_new), np.float64)
        solver.append(block)
        weights.append(w_new)
        biases.append(b_new)
        beta = solver.solve()
        residual = solver.residual(beta)
        log["residual"].append(float(np.mean(residual ** 2)))
        log["objective"].append(float(np.sum(residual ** 2) + cfg.ridge * np.sum(beta ** 2)))
    if not weights:
        raise ValueError("learn_session: no unit was recruited (the residual already met the tolerance, or no "
                         "candidate met the supervisory inequality); lower `tolerance` or relax `r_schedule`")
    w_all, b_all = np.concatenate(weights, axis=1), np.concatenate(biases)
    beta = solver.solve().astype(np.float32)
    prefix = np.concatenate([np.asarray(h, np.float64) for h in old_hidden] + [solver.columns], axis=1)
    means, precision, threshold = reactivation_statistics(prefix, y, cfg)
    group = UnitGroup(w=w_all, b=b_all, beta=beta, classes=tuple(int(c) for c in classes), means=means,
                      precision=precision, threshold=threshold)
    net = dataclasses.replace(net, groups=net.groups + (group,))
    return net, SessionLog(stop=stop, seconds=time.perf_counter() - start, **log)


def session_score(h: jax.Array, means: jax.Array, precision: jax.Array) -> jax.Array:
    """min over class means m of (h - m)' P (h - m) / P_units: h [n, P], means [c, P] -> [n]."""
    z = h[:, None, :] - means[None]                                       # [n, c, P]
    return jnp.min(jnp.einsum("ncp,pq,ncq->nc", z, precision, z), axis=1) / h.shape[1]


def reactivation_statistics(h: np.ndarray, y: np.ndarray, cfg: GrowthConfig
                            ) -> tuple[np.ndarray, np.ndarray, float]:
    """Class means [c, P], the precision [P, P] of the pooled within-class covariance shrunk by
    `cfg.shrinkage` towards its mean variance, and the threshold tau: the `cfg.quantile` of the
    session's own training scores. h: activations [n, P] of the units of sessions 1..t; y [n]."""
    h, y = np.asarray(h, np.float64), np.asarray(y)
    classes = np.unique(y)
    means = np.stack([h[y == c].mean(axis=0) for c in classes])
    z = h - means[np.searchsorted(classes, y)]
    cov = z.T @ z / max(len(h) - len(classes), 1)
    average = np.trace(cov) / len(cov)
    cov = (1.0 - cfg.shrinkage) * cov + (cfg.shrinkage * average + 1e-9) * np.eye(len(cov))
    precision = np.linalg.inv(cov)
    scores = np.asarray(session_score(jnp.asarray(h), jnp.asarray(means), jnp.asarray(precision)))
    return means.astype(np.float32), precision.astype(np.float32), float(np.quantile(scores, cfg.quantile))


def learn_stream(stream, key: jax.Array, cfg: GrowthConfig, num_classes: int | None = None
                 ) -> tuple[AutoActivator, list[SessionLog]]:
    """Learns every session of a stream in order; returns the network and the session logs."""
    if not stream:
        raise ValueError("learn_stream: empty stream")
    if num_classes is None:
        num_classes = 1 + max(c for s in stream for c in s.classes)
    net = AutoActivator.empty(stream[0].dim, num_classes, cfg.activation, cfg.connect)
    logs = []
    for t, session in enumerate(stream):
        net, log = learn_session(net, session.x_train, session.y_train, session.classes, jax.random.fold_in(key, t), cfg)
        logs.append(log)
    return net, logs
