"""Independent float64 NumPy references for the embodied tests: explicit loops over states and
outcomes, written from the formulas (Da Costa et al. 2020; pymdp's docs), not from our JAX code."""

from __future__ import annotations

import itertools

import numpy as np

EPS = np.finfo(np.float64).eps


def softmax(x):
    z = np.exp(x - np.max(x))
    return z / z.sum()


def ln(x):
    return np.log(np.maximum(x, EPS))


def random_categorical(rng, shape, concentration=1.0):
    """Columns (axis 0) drawn from a flat Dirichlet."""
    x = rng.gamma(concentration, size=shape)
    return x / x.sum(0, keepdims=True)


def expect_ll(ll, qs, deps, keep_factor):
    """sum over the states of deps other than keep_factor of ll[s] prod_j q_j(s_j), as a vector over keep_factor."""
    k = deps.index(keep_factor)
    out = np.zeros(ll.shape[k])
    for idx in itertools.product(*[range(n) for n in ll.shape]):
        w = 1.0
        for pos, j in enumerate(deps):
            if pos != k:
                w *= qs[j][idx[pos]]
        out[idx[k]] += w * ll[idx]
    return out


def fpi(A, a_deps, obs, prior, num_iter, schedule="parallel"):
    """Mean-field FPI from uniform beliefs; returns the list of q(s_f) after num_iter iterations."""
    lls = [ln(a[o]) for a, o in zip(A, obs)]
    F = len(prior)
    qs = [np.full(len(p), 1.0 / len(p)) for p in prior]
    for _ in range(num_iter):
        new = [q.copy() for q in qs]
        for f in range(F):
            src = qs if schedule == "parallel" else new
            msg = ln(prior[f]).copy()
            for ll, deps in zip(lls, a_deps):
                if f in deps:
                    msg += expect_ll(ll, src, list(deps), f)
            new[f] = softmax(msg)
        qs = new
    return qs


def free_energy(A, a_deps, obs, prior, qs):
    F = sum((q * (ln(q) - ln(p))).sum() for q, p in zip(qs, prior))
    for a, deps, o in zip(A, a_deps, obs):
        ll = ln(a[o])
        for idx in itertools.product(*[range(n) for n in ll.shape]):
            w = np.prod([qs[j][idx[pos]] for pos, j in enumerate(deps)])
            F -= w * ll[idx]
    return F


def evidence(A, a_deps, obs, prior):
    """p(o) = sum_s prod_f prior_f(s_f) prod_m A_m[o_m, s_deps]."""
    total = 0.0
    for s in itertools.product(*[range(len(p)) for p in prior]):
        w = np.prod([p[i] for p, i in zip(prior, s)])
        for a, deps, o in zip(A, a_deps, obs):
            w *= a[(o,) + tuple(s[j] for j in deps)]
        total += w
    return total


def predict_obs(A, a_deps, qs):
    out = []
    for a, deps in zip(A, a_deps):
        qo = np.zeros(a.shape[0])
        for idx in itertools.product(*[range(n) for n in a.shape[1:]]):
            qo += a[(slice(None),) + idx] * np.prod([qs[j][i] for j, i in zip(deps, idx)])
        out.append(qo)
    return out


def predict_states(B, qs, action):
    """Single-dependency transitions (b_deps[f] = [f])."""
    return [b[:, :, u] @ q for b, q, u in zip(B, qs, action)]


def entropy(p):
    return -(p * ln(p)).sum()


def neg_efe(A, a_deps, B, C, qs, policy, info_gain=True):
    """sum over steps of utility + state information gain (b_deps = [f])."""
    total = 0.0
    for u in policy:
        qs = predict_states(B, qs, u)
        qo = predict_obs(A, a_deps, qs)
        total += sum((q * c).sum() for q, c in zip(qo, C))
        if info_gain:
            for a, deps, q in zip(A, a_deps, qo):
                ambiguity = 0.0
                for idx in itertools.product(*[range(n) for n in a.shape[1:]]):
                    col = a[(slice(None),) + idx]
                    ambiguity += entropy(col) * np.prod([qs[j][i] for j, i in zip(deps, idx)])
                total += entropy(q) - ambiguity
    return total


def mmp(A, a_deps, B, obs, actions, prior, num_iter, tau=1.0):
    """Marginal message passing over T steps, factor-local B (Parr et al. 2019 as in pymdp's run_mmp):
    q_t <- softmax(ln q_t + tau (E ln A_t + fwd_t + bwd_t - ln q_t)) with
    fwd_0 = ln prior, fwd_t = ln(B_{t-1} q_{t-1}), halved unless t = T-1; bwd_t = 1/2 ln(q_{t+1} . rownorm(B_t))."""
    T, F = len(obs), len(prior)
    qs = [np.full((T, len(p)), 1.0 / len(p)) for p in prior]
    for _ in range(num_iter):
        new = [q.copy() for q in qs]
        for f in range(F):
            for t in range(T):
                current = [qs[g][t] for g in range(F)]
                msg = np.zeros(len(prior[f]))
                for a, deps, o in zip(A, a_deps, obs[t]):
                    if f in deps:
                        msg += expect_ll(ln(a[o]), current, list(deps), f)
                w = 0.5 if t < T - 1 else 1.0
                if t == 0:
                    msg += w * ln(prior[f])
                else:
                    msg += w * ln(B[f][:, :, actions[t - 1][f]] @ qs[f][t - 1])
                if t < T - 1:
                    b = B[f][:, :, actions[t][f]]
                    b = b / np.maximum(b.sum(1, keepdims=True), EPS)
                    msg += 0.5 * ln(qs[f][t + 1] @ b)
                ln_q = ln(qs[f][t])
                ln_q = ln_q + tau * (msg - ln_q)
                new[f][t] = softmax(ln_q)
        qs = new
    return qs
