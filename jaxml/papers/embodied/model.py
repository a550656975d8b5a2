"""The generative model of a discrete active-inference agent: a factorised POMDP (A, B, C, D, E).

Notation (pymdp's, and Da Costa et al. 2020's). Hidden states factorise into F factors with S_f
levels, observations into M modalities with O_m outcomes, and each factor f has U_f controls
(U_f = 1: uncontrolled). A modality may depend on a subset of factors (`a_deps[m]`), and a factor's
transition on a subset of factors (`b_deps[f]`, which contains f itself in the usual case).

    A[m]  [O_m, *S[a_deps[m]]]        p(o_m | s_deps), columns sum to 1 over axis 0
    B[f]  [S_f, *S[b_deps[f]], U_f]   p(s_f' | s_deps, u_f), columns sum to 1 over axis 0
    C[m]  [O_m] or [T, O_m]           preferences over outcomes, in nats (pymdp adds them unnormalised)
    D[f]  [S_f]                       prior over the initial state
    E     [P]                         habits: prior over the P policies
    policies  [P, T, F] int           the action of each factor at each of the T planned steps

Dirichlet concentrations `pA`, `pB`, `pD` (same shapes as A, B, D) make those parameters learnable;
the model's A, B, D are then their expected values (`dirichlet_mean`); a None entry of pA or pB
marks a modality or factor that is known and never learned.

`GenerativeModel` is a `flax.struct` pytree: every array is a leaf (so a population of agents is a
model with a leading batch axis on every leaf, made by `stack_models` or `broadcast_model`), the
dependency structure is static. Build one with `generative_model(...)`, which validates shapes,
normalisation and signs and raises ValueError naming the offending array.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

# The floor under probabilities before a log: pymdp's `MINVAL = jnp.finfo(float).eps` (float64 eps),
# so that log-likelihoods of impossible outcomes match pymdp's -36.04 exactly.
EPS = float(np.finfo(np.float64).eps)
NORMALISATION_TOL = 1e-4


def log_stable(x):
    """ln(max(x, EPS)): the log of a probability that may be exactly 0."""
    return jnp.log(jnp.clip(x, EPS))


@struct.dataclass
class GenerativeModel:
    """A factorised discrete POMDP; see the module docstring for the shapes."""

    A: tuple
    B: tuple
    C: tuple
    D: tuple
    E: jax.Array
    policies: jax.Array
    pA: tuple | None = None
    pB: tuple | None = None
    pD: tuple | None = None
    a_deps: tuple = struct.field(pytree_node=False, default=())
    b_deps: tuple = struct.field(pytree_node=False, default=())

    @property
    def num_states(self) -> tuple[int, ...]:
        return tuple(int(b.shape[-len(d) - 2]) for b, d in zip(self.B, self.b_deps))

    @property
    def num_obs(self) -> tuple[int, ...]:
        return tuple(int(a.shape[-len(d) - 1]) for a, d in zip(self.A, self.a_deps))

    @property
    def num_controls(self) -> tuple[int, ...]:
        return tuple(int(b.shape[-1]) for b in self.B)

    @property
    def num_policies(self) -> int:
        return int(self.policies.shape[-3])

    @property
    def policy_len(self) -> int:
        return int(self.policies.shape[-2])


def dirichlet_mean(concentration, axis: int = 0):
    """The expected categorical of Dirichlet concentrations, normalised over `axis` (outcomes)."""
    c = jnp.clip(jnp.asarray(concentration), EPS)
    return c / c.sum(axis=axis, keepdims=True)


def construct_policies(num_controls: Sequence[int], policy_len: int = 1) -> np.ndarray:
    """Every sequence of `policy_len` joint actions: `[prod(U)^policy_len, policy_len, F]` int32.

    The order is itertools.product over (step 0 factor 0, step 0 factor 1, ..., step T-1 factor F-1),
    pymdp's `construct_policies` order, so that E and q(pi) index the same policies as pymdp's.
    """
    if policy_len < 1:
        raise ValueError(f"policy_len must be >= 1, got {policy_len}")
    controls = [int(u) for u in num_controls]
    if any(u < 1 for u in controls):
        raise ValueError(f"num_controls must be >= 1 for every factor, got {controls}")
    flat = list(itertools.product(*[range(u) for u in controls * policy_len]))
    return np.asarray(flat, np.int32).reshape(len(flat), policy_len, len(controls))


def _as_list(name: str, x, allow_none: bool = False) -> list:
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        if not allow_none and any(v is None for v in x):
            raise ValueError(f"{name} has None entries; only the Dirichlet concentrations pA and pB may")
        return [None if v is None else jnp.asarray(v, jnp.float32) for v in x]
    raise TypeError(f"{name} must be a list of arrays (one per modality or factor), got {type(x).__name__}")


def _check_probabilities(name: str, x, axis: int = 0) -> None:
    a = np.asarray(x, np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} has non-finite entries")
    if np.any(a < 0):
        raise ValueError(f"{name} has negative entries (min {a.min():.3g}); probabilities must be >= 0")
    sums = a.sum(axis=axis)
    if not np.allclose(sums, 1.0, atol=NORMALISATION_TOL):
        worst = np.unravel_index(np.argmax(np.abs(sums - 1)), sums.shape)
        raise ValueError(f"{name} is not normalised over axis {axis}: the column at {tuple(int(i) for i in worst)} "
                         f"sums to {sums[worst]:.6g} (accepted: 1 +- {NORMALISATION_TOL})")


def _check_concentration(name: str, p, shape) -> None:
    a = np.asarray(p, np.float64)
    if a.shape != tuple(shape):
        raise ValueError(f"{name} has shape {a.shape}; it must match its parameter's shape {tuple(shape)}")
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"{name} must hold finite, strictly positive Dirichlet concentrations")


def generative_model(A, B, C=None, D=None, E=None, *, a_deps=None, b_deps=None, policy_len: int = 1,
                     policies=None, pA=None, pB=None, pD=None) -> GenerativeModel:
    """A validated `GenerativeModel` (unbatched).

    Args:
      A: list of M arrays `[O_m, *S[a_deps[m]]]`; or None entries replaced by `dirichlet_mean(pA[m])`.
      B: list of F arrays `[S_f, *S[b_deps[f]], U_f]`.
      C: list of M preference vectors `[O_m]` (or `[policy_len, O_m]`); default zeros.
      D: list of F initial-state priors `[S_f]`; default uniform (or `dirichlet_mean(pD)`).
      E: habits `[P]`; default uniform.
      a_deps: per modality, the factors it depends on; default all factors.
      b_deps: per factor, the factors its transition depends on; default `[f]`.
      policy_len, policies: the planning horizon, or an explicit `[P, T, F]` policy table.
      pA, pB, pD: Dirichlet concentrations; when given, A/B/D default to their means. A None entry
        of pA or pB marks a modality or factor whose parameters are known (not learned).
    Raises:
      ValueError naming the array whose shape, normalisation or sign is wrong.
    """
    pA_l, pB_l, pD_l = _as_list("pA", pA, True), _as_list("pB", pB, True), _as_list("pD", pD)
    if A is None and pA_l:
        A = [None] * len(pA_l)
    if B is None and pB_l:
        B = [None] * len(pB_l)
    if A is None or B is None:
        raise ValueError("generative_model needs A and B (or pA and pB)")
    A_l = [dirichlet_mean(pA_l[m]) if a is None else jnp.asarray(a, jnp.float32) for m, a in enumerate(A)]
    B_l = [dirichlet_mean(pB_l[f]) if b is None else jnp.asarray(b, jnp.float32) for f, b in enumerate(B)]
    M, F = len(A_l), len(B_l)
    if M == 0 or F == 0:
        raise ValueError(f"need at least one modality and one factor, got {M} modalities and {F} factors")
    b_deps = tuple((f,) for f in range(F)) if b_deps is None else tuple(tuple(int(i) for i in d) for d in b_deps)
    a_deps = tuple(tuple(range(F)) for _ in range(M)) if a_deps is None else tuple(
        tuple(int(i) for i in d) for d in a_deps)
    if len(b_deps) != F:
        raise ValueError(f"b_deps has {len(b_deps)} entries for {F} factors")
    if len(a_deps) != M:
        raise ValueError(f"a_deps has {len(a_deps)} entries for {M} modalities")
    for kind, deps in (("a_deps", a_deps), ("b_deps", b_deps)):
        for i, d in enumerate(deps):
            if not d or any(not 0 <= j < F for j in d) or len(set(d)) != len(d):
                raise ValueError(f"{kind}[{i}] = {list(d)}: must be distinct factor indices in [0, {F})")
    num_states = []
    for f, b in enumerate(B_l):
        if b.ndim != len(b_deps[f]) + 2:
            raise ValueError(f"B[{f}] has shape {b.shape}; with b_deps[{f}] = {list(b_deps[f])} it must be "
                             f"[S_{f}, *S[b_deps], U_{f}] ({len(b_deps[f]) + 2} axes)")
        num_states.append(int(b.shape[0]))
    for f, b in enumerate(B_l):
        want = (num_states[f],) + tuple(num_states[j] for j in b_deps[f])
        if tuple(b.shape[:-1]) != want:
            raise ValueError(f"B[{f}] has shape {tuple(b.shape)}; expected {want} + (U_{f},) from the states "
                             f"of factors {list(b_deps[f])}")
        _check_probabilities(f"B[{f}]", b)
    for m, a in enumerate(A_l):
        want = tuple(num_states[j] for j in a_deps[m])
        if a.ndim != len(want) + 1 or tuple(a.shape[1:]) != want:
            raise ValueError(f"A[{m}] has shape {tuple(a.shape)}; expected [O_{m}, *{list(want)}] from the "
                             f"states of factors {list(a_deps[m])}")
        _check_probabilities(f"A[{m}]", a)
    num_obs = [int(a.shape[0]) for a in A_l]
    num_controls = [int(b.shape[-1]) for b in B_l]

    if policies is None:
        policies = construct_policies(num_controls, policy_len)
    policies = np.asarray(policies)
    if policies.ndim != 3 or policies.shape[2] != F or not np.issubdtype(policies.dtype, np.integer):
        raise ValueError(f"policies must be an int array [P, T, {F}], got {policies.dtype} {policies.shape}")
    if np.any(policies < 0) or np.any(policies >= np.asarray(num_controls)):
        raise ValueError(f"policies hold actions outside [0, U_f) with U = {num_controls}")
    P, T = policies.shape[:2]

    C_l = _as_list("C", C) or [jnp.zeros(o, jnp.float32) for o in num_obs]
    if len(C_l) != M:
        raise ValueError(f"C has {len(C_l)} entries for {M} modalities")
    for m, c in enumerate(C_l):
        if c.shape not in ((num_obs[m],), (T, num_obs[m])):
            raise ValueError(f"C[{m}] has shape {tuple(c.shape)}; accepted: ({num_obs[m]},) or ({T}, {num_obs[m]})")
        if not np.all(np.isfinite(np.asarray(c))):
            raise ValueError(f"C[{m}] has non-finite entries")
    if D is None:
        D_l = [dirichlet_mean(p) for p in pD_l] if pD_l else [jnp.full(s, 1.0 / s, jnp.float32) for s in num_states]
    else:
        D_l = _as_list("D", D)
    if len(D_l) != F:
        raise ValueError(f"D has {len(D_l)} entries for {F} factors")
    for f, d in enumerate(D_l):
        if d.shape != (num_states[f],):
            raise ValueError(f"D[{f}] has shape {tuple(d.shape)}; expected ({num_states[f]},)")
        _check_probabilities(f"D[{f}]", d)
    E = jnp.full(P, 1.0 / P, jnp.float32) if E is None else jnp.asarray(E, jnp.float32)
    if E.shape != (P,):
        raise ValueError(f"E has shape {tuple(E.shape)}; expected ({P},), one habit per policy")
    _check_probabilities("E", E)
    for name, ps, params in (("pA", pA_l, A_l), ("pB", pB_l, B_l), ("pD", pD_l, D_l)):
        if ps and len(ps) != len(params):
            raise ValueError(f"{name} has {len(ps)} entries; expected {len(params)}")
        for i, p in enumerate(ps):
            if p is None:
                continue
            _check_concentration(f"{name}[{i}]", p, params[i].shape)
    return GenerativeModel(A=tuple(A_l), B=tuple(B_l), C=tuple(C_l), D=tuple(D_l), E=E,
                           policies=jnp.asarray(policies, jnp.int32),
                           pA=tuple(pA_l) if pA_l else None, pB=tuple(pB_l) if pB_l else None,
                           pD=tuple(pD_l) if pD_l else None, a_deps=a_deps, b_deps=b_deps)


def broadcast_model(model: GenerativeModel, n: int) -> GenerativeModel:
    """`n` copies of `model` along a new leading axis of every leaf (a population of agents)."""
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (n,) + x.shape), model)


def stack_models(models: Sequence[GenerativeModel]) -> GenerativeModel:
    """Models with equal shapes and dependencies stacked along a new leading axis."""
    return jax.tree.map(lambda *xs: jnp.stack(xs), *models)


# ---- tensor helpers shared by perception, action and learning ------------------------------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def contract(tensor, vectors: Sequence, keep: Sequence[int] = ()):
    """Contracts the axes of `tensor` not in `keep` with `vectors` (one per contracted axis, in order).

    `contract(A_m, [q_1, q_2], keep=(0,))` is sum_{s1, s2} A_m[:, s1, s2] q_1[s1] q_2[s2].
    """
    axes = [i for i in range(tensor.ndim) if i not in keep]
    if len(axes) != len(vectors):
        raise ValueError(f"contract: {len(vectors)} vectors for {len(axes)} contracted axes of {tensor.shape}")
    if not axes:
        return tensor
    sub = _LETTERS[:tensor.ndim]
    operands = ",".join([sub] + [sub[i] for i in axes])
    out = "".join(sub[i] for i in keep)
    return jnp.einsum(f"{operands}->{out}", tensor, *vectors)


def outer(vectors: Sequence):
    """The outer product of 1-D vectors `[n_1] x ... x [n_k] -> [n_1, ..., n_k]`."""
    sub = _LETTERS[:len(vectors)]
    return jnp.einsum(",".join(sub) + "->" + sub, *vectors)
