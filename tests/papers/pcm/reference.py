"""NumPy references for the PCM tests: exact expected counts and a loop-by-loop spectral estimator."""

import numpy as np


def pcm_probs(theta, beta):
    """P(X_ui = k) `[n, m, L+1]` in float64."""
    theta, beta = np.asarray(theta, np.float64), np.asarray(beta, np.float64)
    steps = theta[:, None, None] - beta[None]
    z = np.concatenate([np.zeros(steps.shape[:-1] + (1,)), np.cumsum(steps, -1)], -1)
    z -= z.max(-1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(-1, keepdims=True)


def expected_counts(theta, weight, beta):
    """Exact E[Y], E[V], E[N] of a population of users with abilities `theta` and masses `weight`."""
    p = pcm_probs(theta, beta) * 1.0
    n, m, k1 = p.shape
    w = np.asarray(weight, np.float64)
    off = 1.0 - np.eye(m)
    y = np.stack([np.einsum("u,ui,uj->ij", w, p[:, :, l], p[:, :, l - 1]) * off for l in range(1, k1)])
    tot = p.sum(1)                                                     # [n, L+1] expected counts per level
    v = np.zeros((k1, m, k1))
    for a in range(k1):
        for b in range(k1):
            others = tot[:, b][:, None] - p[:, :, b]                   # sum over j != i
            v[a, :, b] = np.einsum("u,ui,ui->i", w, p[:, :, a], others + (a == b))
    cnt = np.einsum("u,uia->ia", w, p)
    return y, v, cnt


def spectral_loops(x, lam=0.1, tol=1e-6, max_iters=10_000):
    """The anchors' steps 1-7 written with explicit dense count matrices (x: ints, -1 missing)."""
    x = np.asarray(x)
    n_levels = int(x.max())
    m = x.shape[1]

    def ymat(a, b):
        return ((x == a).astype(float).T @ (x == b).astype(float))

    tilde = []
    for level in range(1, n_levels + 1):
        y = ymat(level, level - 1)
        np.fill_diagonal(y, 0)
        mc = np.where((y != 0) | (y.T != 0), y + lam, y)
        d = np.maximum(mc.sum(1), 1)
        mc = mc / d[:, None]
        for i in range(m):
            mc[i, i] = 0
            mc[i, i] = 1 - mc[i].sum()
        pi = np.ones(m) / m
        for _ in range(max_iters):
            nxt = pi @ mc
            nxt /= nxt.sum()
            done = np.linalg.norm(nxt - pi) < tol
            pi = nxt
            if done:
                break
        tilde.append(np.log(pi / d))
    out = [tilde[0] - tilde[0].mean()]
    for k in range(2, n_levels + 1):
        y1, y0 = ymat(1, k - 1), ymat(0, k)
        np.fill_diagonal(y1, 0)
        np.fill_diagonal(y0, 0)
        ck = tilde[k - 1] - tilde[k - 1].mean()
        delta = np.log((y1 * np.exp(out[0])[:, None]).sum() / (y0 * np.exp(ck)[None, :]).sum())
        out.append(ck + delta)
    return np.stack(out, 1)


def sample_pcm(rng, theta, beta, missing=0.0):
    p = pcm_probs(theta, beta)
    u = rng.random(p.shape[:2])[..., None]
    x = (u > np.cumsum(p, -1)).sum(-1)
    x = np.minimum(x, beta.shape[1])
    if missing:
        x = np.where(rng.random(x.shape) < missing, -1, x)
    return x
