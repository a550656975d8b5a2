"""AIM's mask, loss, targets, positions, probes and sharding, against independent references."""

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec as P

from jaxml.core.mesh import make_mesh, param_shardings, path_name
from jaxml.models.vit import sincos_position_embedding
from jaxml.papers.aim.model import AIM, next_patch_loss, patch_targets
from jaxml.papers.aim.probe import AttentiveProbe, LinearProbe
from jaxml.papers.aim.task import PretrainTask, sample_prefix_lengths, validation_prefixes

N = 7


def _model(**kw):
    kw = dict(patch_size=4, hidden=16, layers=2, heads=2, head_depth=1, head_width=16) | kw
    return AIM(**kw)


def _images(b=2, seed=0, hw=(12, 8)):
    return jax.random.normal(jax.random.PRNGKey(seed), (b,) + hw + (1,))


def test_a_prediction_sees_exactly_the_patches_the_mask_allows():
    """Perturbing patch j changes the prediction at i iff j < P or j <= i (the mask reaches attention)."""
    model = _model()
    images = _images(1)          # 3 x 2 = 6 patches
    n, p = 6, 3
    prefix = jnp.array([p], jnp.int32)
    params = model.init(jax.random.PRNGKey(1), images, prefix)["params"]
    predict = jax.jit(lambda x: model.apply({"params": params}, x, prefix))
    base = predict(images)
    for j in range(n):
        row, col = divmod(j, 2)
        bumped = images.at[0, 4 * row:4 * row + 4, 4 * col:4 * col + 4].add(1.0)
        changed = np.abs(np.asarray(predict(bumped) - base)[0]).max(-1) > 1e-6
        expected = np.array([(j < p) or (j <= i) for i in range(n)])
        np.testing.assert_array_equal(changed, expected, err_msg=f"patch {j}")


def _numpy_loss(pred, target, prefix):
    per_example, total, count = [], 0.0, 0
    for b in range(pred.shape[0]):
        errs = []
        for i in range(pred.shape[1] - 1):
            if i + 1 >= prefix[b]:
                errs.append(np.mean((pred[b, i] - target[b, i + 1]) ** 2))
        per_example.append(np.mean(errs))
        total += np.sum(errs)
        count += len(errs)
    return total / count, np.array(per_example)


def test_next_patch_loss_equals_numpy_and_ignores_prefix_targets():
    rng = np.random.default_rng(0)
    pred = rng.normal(size=(3, 6, 5)).astype(np.float32)
    target = rng.normal(size=(3, 6, 5)).astype(np.float32)
    prefix = np.array([1, 3, 5], np.int32)
    loss, per_example = next_patch_loss(jnp.asarray(pred), jnp.asarray(target), jnp.asarray(prefix))
    ref_loss, ref_per_example = _numpy_loss(pred, target, prefix)
    np.testing.assert_allclose(float(loss), ref_loss, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(per_example), ref_per_example, rtol=1e-6)
    # No gradient reaches a position whose target is in the prefix (i + 1 < P), nor the last one.
    grad = np.asarray(jax.grad(lambda x: next_patch_loss(x, jnp.asarray(target), jnp.asarray(prefix))[0])(
        jnp.asarray(pred)))
    for b, p in enumerate(prefix):
        scored = np.array([i + 1 >= p for i in range(5)] + [False])
        assert np.all(grad[b, ~scored] == 0) and np.all(np.abs(grad[b, scored]).sum(-1) > 0)
    with pytest.raises(ValueError, match="prefix_lengths"):
        next_patch_loss(jnp.asarray(pred), jnp.asarray(target), jnp.asarray(prefix[:2]))


def test_normalised_targets_are_standardised_per_patch():
    rng = np.random.default_rng(1)
    patches = rng.uniform(0, 3, size=(2, 4, 16)).astype(np.float32)
    t = np.asarray(patch_targets(jnp.asarray(patches)))
    ref = (patches - patches.mean(-1, keepdims=True)) / np.sqrt(patches.var(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(t, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(t.mean(-1), 0, atol=1e-6)
    np.testing.assert_allclose(t.std(-1), 1, atol=1e-3)
    np.testing.assert_array_equal(np.asarray(patch_targets(jnp.asarray(patches), normalize=False)), patches)


def test_sincos_positions_match_the_formula():
    emb = np.asarray(sincos_position_embedding(3, 2, 8))
    chex.assert_shape(emb, (6, 8))
    omega = 10000.0 ** (-np.arange(2) / 2)
    for idx in range(6):
        r, c = divmod(idx, 2)
        ref = np.concatenate([np.sin(r * omega), np.cos(r * omega), np.sin(c * omega), np.cos(c * omega)])
        np.testing.assert_allclose(emb[idx], ref, rtol=1e-6, atol=1e-7)
    assert len({tuple(np.round(e, 5)) for e in emb}) == 6
    with pytest.raises(ValueError, match="multiple of 4"):
        sincos_position_embedding(2, 2, 6)


def test_trunk_has_no_biases_no_class_token_and_head_depth_zero_is_linear():
    model = _model(head_depth=0)
    params = nn.unbox(model.init(jax.random.PRNGKey(0), _images(1), jnp.ones((1,), jnp.int32))["params"])
    names = [path_name(path) for path, _ in jax.tree_util.tree_leaves_with_path(params)]
    linear_biases = [n for n in names if n.endswith("bias") and "norm" not in n]
    assert not linear_biases, linear_biases
    assert not any("cls" in n or "position" in n for n in names)
    assert sorted(n for n in names if n.startswith("head")) == ["head/out/kernel"]


def test_sampled_prefixes_cover_one_to_n_minus_one():
    p = np.asarray(sample_prefix_lengths(jax.random.PRNGKey(0), 4000, N, "prefix"))
    assert p.min() == 1 and p.max() == N - 1 and len(np.unique(p)) == N - 1
    assert not np.asarray(sample_prefix_lengths(jax.random.PRNGKey(0), 5, N, "causal")).any()
    v = validation_prefixes(100, N, "prefix")
    np.testing.assert_array_equal(v, validation_prefixes(100, N, "prefix"))
    assert 1 <= v.min() and v.max() <= N - 1
    with pytest.raises(ValueError, match="accepted"):
        sample_prefix_lengths(jax.random.PRNGKey(0), 5, N, "bidirectional")


def test_attentive_probe_is_permutation_invariant_and_non_affine():
    feats = jax.random.normal(jax.random.PRNGKey(0), (4, 5, 8))
    probe = AttentiveProbe(3, heads=2)
    variables = probe.init(jax.random.PRNGKey(1), feats)
    assert "norm" not in variables["params"]          # BatchNorm without scale or bias
    out = probe.apply(variables, feats)
    perm = probe.apply(variables, feats[:, ::-1])
    np.testing.assert_allclose(np.asarray(out), np.asarray(perm), rtol=1e-5, atol=1e-6)
    # One token: the pooled vector is that token's value projection (softmax over one key is 1).
    one = feats[:, :1]
    v = variables["params"]["kv"]
    x = one[:, 0] / np.sqrt(1 + 1e-6)                 # initial running stats: mean 0, var 1
    value = x @ v["kernel"][:, 8:] + v["bias"][8:]
    ref = value @ variables["params"]["classifier"]["kernel"] + variables["params"]["classifier"]["bias"]
    np.testing.assert_allclose(np.asarray(probe.apply(variables, one)), np.asarray(ref), rtol=1e-5, atol=1e-6)
    lin = LinearProbe(3)
    lv = lin.init(jax.random.PRNGKey(2), feats)
    assert set(lv["params"]) == {"classifier"}


def test_sharded_forward_equals_replicated_forward(devices8):
    """Heads and MLP units split over a 4-way `model` axis (2-way `data`) give the replicated outputs."""
    images = np.asarray(jax.random.uniform(jax.random.PRNGKey(0), (4, 16, 16, 1)) * 255).astype(np.uint8)
    task = PretrainTask(_model(hidden=32, heads=4), images, images[:2])
    params = task.init(jax.random.PRNGKey(1), {"image": images[:2]})
    prefix = jnp.array([1, 5, 9, 15], jnp.int32)
    replicated = jax.jit(task.predict)(params, images, prefix)[0]
    mesh = make_mesh(data=2, model=4, devices=devices8)
    rules = task.param_sharding()
    shardings = param_shardings(jax.eval_shape(lambda: params), mesh, rules)
    qkv = shardings["trunk"]["block_0"]["attn"]["qkv"]["kernel"]
    assert qkv.spec == P(None, "model") and shardings["trunk"]["block_0"]["mlp"]["fc_out"]["kernel"].spec == P("model", None)
    sharded_params = jax.device_put(params, shardings)
    assert len(sharded_params["trunk"]["block_1"]["mlp"]["fc_in"]["kernel"].addressable_shards[0].data.shape) == 2
    assert sharded_params["trunk"]["block_1"]["mlp"]["fc_in"]["kernel"].addressable_shards[0].data.shape[1] == 128 // 4
    batch = jax.device_put(images, NamedSharding(mesh, P("data")))
    sharded = jax.jit(task.predict)(sharded_params, batch, prefix)[0]
    np.testing.assert_allclose(np.asarray(sharded), np.asarray(replicated), rtol=1e-5, atol=1e-5)


def _pallas_setup():
    from kernels.attention_lrp.api import as_attention_fn
    from jaxml.nn.ops import Ops

    images = _images(2, hw=(8, 8))          # 4 patches
    prefix = jnp.array([1, 3], jnp.int32)
    model = _model(layers=1)
    params = model.init(jax.random.PRNGKey(2), images, prefix)["params"]
    pallas = model.clone(ops=Ops(attention=as_attention_fn("pallas", interpret=True)))
    return images, prefix, model, pallas, params


def test_the_prefix_mask_runs_through_the_pallas_attention_kernel():
    """`Ops(attention=...)` with the flash-attention kernel (interpret mode) gives the XLA predictions
    under the prefix-causal mask (the kernel's gradients under dense masks: tests/kernels/attention_lrp)."""
    images, prefix, model, pallas, params = _pallas_setup()
    np.testing.assert_allclose(np.asarray(pallas.apply({"params": params}, images, prefix)),
                               np.asarray(model.apply({"params": params}, images, prefix)), rtol=2e-5, atol=2e-5)


@pytest.mark.slow
def test_pretraining_gradients_through_the_pallas_kernel_equal_xla():
    images, prefix, model, pallas, params = _pallas_setup()
    target = jax.random.normal(jax.random.PRNGKey(3), (2, 4, 16))

    def loss(m, p):
        return next_patch_loss(m.apply({"params": p}, images, prefix), target, prefix)[0]

    g_ref, g_pallas = jax.grad(lambda p: loss(model, p))(params), jax.grad(lambda p: loss(pallas, p))(params)
    jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5), g_pallas, g_ref)
