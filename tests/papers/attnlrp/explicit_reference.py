"""An explicit, rule-by-rule AttnLRP for a small Llama, written from the paper's formulas in NumPy.

Used only by the tests, to check the efficient (input x modified gradient) implementation. Every
operation propagates relevance with its own rule (epsilon rule for linear maps and additions,
the softmax rule of Prop. 3.1, the uniform rule for bilinear products, the identity rule for
norms and activations); nothing here uses automatic differentiation.
"""

from __future__ import annotations

import numpy as np

EPS = 1e-12


def _div(a, b):
    return a / (b + np.where(b >= 0, EPS, -EPS))


def _linear_rule(x, w, r_out):
    """Epsilon rule for z = x @ w (no bias): R_in = x * ((R_out / z) @ w.T)."""
    z = x @ w
    return x * (_div(r_out, z) @ w.T)


def _add_rule(a, b, r_out):
    """Epsilon rule for z = a + b."""
    s = _div(r_out, a + b)
    return a * s, b * s


def _silu(x):
    return x / (1 + np.exp(-x))


class ExplicitLlama:
    """Forward and relevance propagation for one sequence through a `jaxml` Llama's params."""

    def __init__(self, config, params):
        self.c = config
        self.p = {k: v for k, v in _numpy_tree(params).items()}

    def _rms(self, x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.c.norm_eps) * w

    def _rot_matrices(self, T):
        """M[t] (hd x hd): the interleaved rotary map at position t (row vector convention)."""
        hd = self.c.head_dim
        ang = np.arange(T)[:, None] * self.c.rope_theta ** (-np.arange(0, hd, 2) / hd)
        M = np.zeros((T, hd, hd))
        for i in range(hd // 2):
            c, s = np.cos(ang[:, i]), np.sin(ang[:, i])
            # [x0, x1] -> [x0 c - x1 s, x0 s + x1 c] as x @ M
            M[:, 2 * i, 2 * i], M[:, 2 * i, 2 * i + 1] = c, s
            M[:, 2 * i + 1, 2 * i], M[:, 2 * i + 1, 2 * i + 1] = -s, c
        return M

    def relevance(self, ids, target, position):
        c, p = self.c, self.p
        T, H, KV, hd = len(ids), c.heads, c.kv_heads, c.head_dim
        G = H // KV
        M = self._rot_matrices(T)
        mask = np.tril(np.ones((T, T), bool))
        x = p["embed/embedding"][np.asarray(ids)]
        x0 = x
        cache = []
        for i in range(c.layers):
            q_ = f"layers_{i}/"
            h = self._rms(x, p[q_ + "attn_norm/scale"])
            q = (h @ p[q_ + "attn/q/kernel"]).reshape(T, H, hd)
            k = (h @ p[q_ + "attn/k/kernel"]).reshape(T, KV, hd)
            v = (h @ p[q_ + "attn/v/kernel"]).reshape(T, KV, hd)
            qr = np.einsum("thd,tde->the", q, M)
            kr = np.einsum("thd,tde->the", k, M)
            S = np.einsum("thd,shd->hts", qr, np.repeat(kr, G, 1)) / np.sqrt(hd)
            Sm = np.where(mask, S, -np.inf)
            A = np.exp(Sm - Sm.max(-1, keepdims=True))
            A /= A.sum(-1, keepdims=True)
            O = np.einsum("hts,shd->thd", A, np.repeat(v, G, 1))
            o = O.reshape(T, H * hd) @ p[q_ + "attn/o/kernel"]
            x_mid = x + o
            h2 = self._rms(x_mid, p[q_ + "mlp_norm/scale"])
            g = h2 @ p[q_ + "mlp/gate/kernel"]
            u = h2 @ p[q_ + "mlp/up/kernel"]
            a = _silu(g)
            m = (a * u) @ p[q_ + "mlp/down/kernel"]
            x_out = x_mid + m
            cache.append(dict(x=x, h=h, q=q, k=k, v=v, qr=qr, kr=kr, S=np.where(mask[None], S, 0.0), A=A, O=O,
                              o=o, x_mid=x_mid, h2=h2, g=g, u=u, a=a, m=m))
            x = x_out
        xf = self._rms(x, p["final_norm/scale"])
        logits = xf @ p["embed/embedding"].T
        # --- relevance: start at the target logit ------------------------------------------------
        r_logits = np.zeros_like(logits)
        r_logits[position, target] = logits[position, target]
        r = _linear_rule(xf, p["embed/embedding"].T, r_logits)       # identity rule through the final norm
        for i in reversed(range(c.layers)):
            q_, s = f"layers_{i}/", cache[i]
            r_mid, r_m = _add_rule(s["x_mid"], s["m"], r)
            r_p = _linear_rule(s["a"] * s["u"], p[q_ + "mlp/down/kernel"], r_m)
            r_a, r_u = r_p / 2, r_p / 2                              # uniform rule for the gate product
            r_g = r_a                                                # identity rule for SiLU
            r_h2 = _linear_rule(s["h2"], p[q_ + "mlp/gate/kernel"], r_g) + \
                _linear_rule(s["h2"], p[q_ + "mlp/up/kernel"], r_u)
            r_mid = r_mid + r_h2                                     # identity rule through the norm
            r_x, r_o = _add_rule(s["x"], s["o"], r_mid)
            r_O = _linear_rule(s["O"].reshape(T, H * hd), p[q_ + "attn/o/kernel"], r_o).reshape(T, H, hd)
            vg = np.repeat(s["v"], G, 1)
            # O = A v: uniform-epsilon rule for the bilinear product (Prop. 3.3).
            frac = _div(r_O, 2 * s["O"])                              # [T, H, hd]
            r_A = np.einsum("hts,shd,thd->hts", s["A"], vg, frac)
            r_vg = np.einsum("hts,shd,thd->shd", s["A"], vg, frac)
            r_v = r_vg.reshape(T, KV, G, hd).sum(2)
            # Softmax rule (Prop. 3.1): R_S = S (R_A - A sum_j R_A).
            r_S = s["S"] * (r_A - s["A"] * r_A.sum(-1, keepdims=True))
            # S = qr kr^T / sqrt(hd): uniform-epsilon rule.
            krg = np.repeat(s["kr"], G, 1)
            fS = _div(r_S, 2 * s["S"])                                # R_S / (2 S)
            r_qr = np.einsum("thd,shd,hts->thd", s["qr"], krg, fS) / np.sqrt(hd)
            r_krg = np.einsum("thd,shd,hts->shd", s["qr"], krg, fS) / np.sqrt(hd)
            r_kr = r_krg.reshape(T, KV, G, hd).sum(2)
            # Rotary: a linear map per position (epsilon rule).
            r_q = s["q"] * np.einsum("the,tde->thd", _div(r_qr, s["qr"]), M)
            r_k = s["k"] * np.einsum("the,tde->thd", _div(r_kr, s["kr"]), M)
            r_h = (_linear_rule(s["h"], p[q_ + "attn/q/kernel"], r_q.reshape(T, H * hd))
                   + _linear_rule(s["h"], p[q_ + "attn/k/kernel"], r_k.reshape(T, KV * hd))
                   + _linear_rule(s["h"], p[q_ + "attn/v/kernel"], r_v.reshape(T, KV * hd)))
            r = r_x + r_h                                            # identity rule through the norm
        return r, float(logits[position, target]), x0


def _numpy_tree(params, prefix=""):
    out = {}
    for k, v in params.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_numpy_tree(v, name + "/"))
        else:
            out[name] = np.asarray(v, np.float64)
    return out
