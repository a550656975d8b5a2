"""Pruning: exact sparsity patterns, Wanda's closed form on a hand-made layer, SparseGPT against a textbook
OBS step and against magnitude/Wanda on a real SmolLM2 layer."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.compress import calibration
from jaxml.compress.pruning import (SparsityPattern, magnitude_prune, mask_from_scores, reconstruction_error,
                                    sparsegpt_prune, sparsity_of, wanda_prune, wanda_scores)

PATTERNS = ("unstructured", "1:2", "2:4", "4:8")


@pytest.mark.parametrize("spec,n,m,sparsity", [("2:4", 2, 4, 0.5), ("1:2", 1, 2, 0.5), ("4:8", 4, 8, 0.5),
                                               ("unstructured", 0, 0, 0.5), ("60%", 0, 0, 0.6),
                                               ("unstructured:0.25", 0, 0, 0.25), ("1:4", 1, 4, 0.75)])
def test_parse(spec, n, m, sparsity):
    p = SparsityPattern.parse(spec)
    assert (p.n, p.m) == (n, m) and p.sparsity == pytest.approx(sparsity)


@pytest.mark.parametrize("spec", ["3:2", "2:2", "dense", "150%", "0:4"])
def test_bad_patterns(spec):
    with pytest.raises(ValueError):
        SparsityPattern.parse(spec)


@pytest.mark.parametrize("spec", PATTERNS)
@pytest.mark.parametrize("method", ["magnitude", "wanda", "sparsegpt"])
def test_masks_meet_their_patterns_exactly(spec, method):
    rng = np.random.default_rng(0)
    n_in, n_out = 64, 24
    w = rng.standard_normal((n_in, n_out)).astype(np.float32)
    w[3, 5] = w[7, 5] = 0.25          # ties are broken by position, never by dropping more
    w[11, :] = 0.0                    # weights already zero count as pruned where the pattern prunes them
    x = rng.standard_normal((500, n_in)) * rng.uniform(0.2, 3, n_in)
    h = x.T @ x / len(x)
    if method == "magnitude":
        p = magnitude_prune(w, spec, group="output")
    elif method == "wanda":
        p = wanda_prune(w, np.mean(x * x, 0), spec)
    else:
        p = sparsegpt_prune(w, h, spec, block_size=16)
    pattern = SparsityPattern.parse(spec)
    kept = p != 0
    if pattern.structured:
        groups = kept.reshape(n_in // pattern.m, pattern.m, n_out).sum(1)
        assert (groups <= pattern.n).all()
        assert (groups[[i for i in range(n_in // pattern.m) if i != 11 // pattern.m]] == pattern.n).all()
    elif method == "sparsegpt":          # adaptive per block of 16 inputs: exactly half of each block's 16 x 24
        per_block = kept.reshape(4, 16, n_out).sum((1, 2))
        assert (per_block <= 16 * n_out // 2).all() and per_block.sum() >= n_in * n_out // 2 - n_out
    else:                                # per output column: exactly 32 of 64 pruned
        assert (kept.sum(0) <= n_in // 2).all() and (kept.sum(0) >= n_in // 2 - 1).all()
    assert sparsity_of(p) >= 0.5 - 1e-9
    # masks themselves are exact, whatever the values
    mask = mask_from_scores(np.abs(w) + 1.0, spec, group="output")
    if pattern.structured:
        assert (mask.reshape(-1, pattern.m, n_out).sum(1) == pattern.n).all()
    else:
        assert (mask.sum(0) == n_in - int(n_in * 0.5)).all()
    layer = mask_from_scores(np.abs(w) + 1.0, "unstructured", group="layer")
    assert layer.sum() == w.size - w.size // 2


def test_wanda_equals_its_closed_form_on_a_hand_made_layer():
    # kernel [in=4, out=2]; input norms ||X_i||^2 / n = (1, 4, 0.25, 9): scores |W| * (1, 2, 0.5, 3)
    w = np.array([[4.0, -1.0],
                  [1.0, 2.0],
                  [-6.0, 3.0],
                  [1.0, -0.5]], np.float32)
    sq = np.array([1.0, 4.0, 0.25, 9.0])
    np.testing.assert_allclose(wanda_scores(w, sq), [[4, 1], [2, 4], [3, 1.5], [3, 1.5]])
    # column 0 scores (4, 2, 3, 3): prune the two lowest, 2 (row 1) and the first 3 (row 2);
    # column 1 scores (1, 4, 1.5, 1.5): prune 1 (row 0) and the first 1.5 (row 2)
    np.testing.assert_array_equal(wanda_prune(w, sq, "unstructured"), [[4, 0], [0, 2], [0, 0], [1, -0.5]])
    # 1:2 in pairs of inputs (rows 0-1, rows 2-3): column 0 keeps row 0 (4 > 2) and row 3 (a tie of 3s: the
    # earlier position is pruned first, as in the unstructured case); column 1 keeps row 1 and row 3 (1.5 tie)
    np.testing.assert_array_equal(wanda_prune(w, sq, "1:2"), [[4, 0], [0, 2], [0, 0], [1, -0.5]])
    # magnitude ignores the inputs: layer-wise the 4 smallest |W| of 8 (0.5, then the 1s in order)
    np.testing.assert_array_equal(magnitude_prune(w, "unstructured"), [[4, 0], [0, 2], [-6, 3], [0, 0]])


def test_sparsegpt_with_one_pruned_weight_is_the_textbook_obs_update():
    """Pruning one weight w_q optimally: delta = -(w_q / [H^-1]_qq) H^-1_{:,q} (Hassibi & Stork), with
    the reference's ordering (pruning decided from w^2 / [H^-1]_qq^2 in the block)."""
    rng = np.random.default_rng(1)
    n_in = 6
    x = rng.standard_normal((200, n_in)) @ rng.standard_normal((n_in, n_in))
    h = x.T @ x / 200
    w = rng.standard_normal((n_in, 1))
    p = SparsityPattern(1 / n_in)        # prunes exactly one weight of the 6 in the single block
    out = sparsegpt_prune(w, h, p, damp=0.0, block_size=n_in)
    q = int(np.flatnonzero(out[:, 0] == 0)[0])
    # the block's pruned weight: the lowest w^2 / (U_qq)^2 where U is the upper Cholesky factor of H^-1,
    # and the remaining weights move along the OBS direction restricted to the later columns
    hinv = np.linalg.inv(h)
    u = np.linalg.cholesky(hinv).T
    assert q == int(np.argmin(w[:, 0] ** 2 / np.diag(u) ** 2))
    # OBS on the columns q.. with the earlier columns fixed: the optimal update of the later weights
    later = np.arange(q, n_in)
    sub = np.linalg.inv(h[np.ix_(later, later)])
    want = w[later, 0] - w[q, 0] / sub[0, 0] * sub[:, 0]
    np.testing.assert_allclose(out[later, 0], want, atol=1e-9)
    np.testing.assert_allclose(out[:q, 0], w[:q, 0], atol=0)


def test_sparsegpt_block_size_does_not_change_an_unstructured_choice_over_one_block():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((32, 8))
    x = rng.standard_normal((300, 32))
    h = x.T @ x / 300
    a = sparsegpt_prune(w, h, "2:4", block_size=8)
    b = sparsegpt_prune(w, h, "2:4", block_size=32)
    np.testing.assert_allclose(a, b, atol=1e-10)      # N:M decisions are per group: blocks only batch updates


@pytest.fixture(scope="module")
def smollm2_layer():
    """The input statistics of SmolLM2-135M's layer 3 MLP up-projection [576, 1536] on 8 x 64 tokens of Austen."""
    from jaxml.data import text
    from jaxml.models.llama import load_smollm2
    model, params, tok = load_smollm2()
    doc = text.load_corpus("austen")[0]
    ids = tok.encode(text.unwrap(doc.text)[:20000])[:8 * 64]
    windows = np.asarray(ids, np.int32).reshape(8, 64)
    positions = np.broadcast_to(np.arange(64), windows.shape)
    stats = calibration.calibrate(model, params, [((jnp.asarray(windows), jnp.asarray(positions)), {})],
                                  hessian=True)
    name = "layers_3/mlp/up"
    return np.asarray(calibration.linear_kernels(params)[name], np.float32), stats[name]


@pytest.mark.parametrize("spec", PATTERNS)
def test_sparsegpt_reconstructs_a_real_layer_better_than_magnitude_and_wanda(smollm2_layer, spec):
    w, st = smollm2_layer
    errors = {
        "magnitude": reconstruction_error(w, magnitude_prune(w, spec), st.hessian),
        "wanda": reconstruction_error(w, wanda_prune(w, st.sq_mean, spec), st.hessian),
        "sparsegpt": reconstruction_error(w, sparsegpt_prune(w, st.hessian, spec), st.hessian),
    }
    assert errors["sparsegpt"] < errors["wanda"] < errors["magnitude"], errors
    np.testing.assert_allclose(st.sq_mean, np.diag(st.hessian), rtol=1e-9)   # Wanda's norms = diag(X^T X / n)


def test_bad_inputs():
    w = np.ones((8, 4), np.float32)
    with pytest.raises(ValueError, match="multiple of 4"):
        magnitude_prune(np.ones((6, 4), np.float32), "2:4")
    with pytest.raises(ValueError, match="hessian shape"):
        sparsegpt_prune(w, np.eye(4), "2:4")
    with pytest.raises(ValueError, match="input_sq_mean shape"):
        wanda_prune(w, np.ones(4), "2:4")
    with pytest.raises(ValueError, match="group="):
        mask_from_scores(w, "unstructured", group="row")
    with pytest.raises(ValueError, match="block_size"):
        sparsegpt_prune(w, np.eye(8), "4:8", block_size=6)
