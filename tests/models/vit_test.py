import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.models.vit import ViT, image_to_patches, patches_to_pixels
from jaxml.nn.attention import dot_product_attention
from jaxml.nn.ops import Ops, plain_linear

# 8x12 RGB images on 4x4 patches: a 2x3 grid of 6 patches, so rows and columns are not confused.
SHAPE = (2, 8, 12, 3)
N_PATCHES = 6


def tiny(**kw):
    kw = dict(num_classes=5, patch_size=4, hidden=16, layers=2, heads=4, mlp_hidden=24) | kw
    return ViT(**kw)


def init(model, shape=SHAPE, seed=0):
    images = jax.random.uniform(jax.random.PRNGKey(seed + 1), shape)
    params = model.init(jax.random.PRNGKey(seed), images)["params"]
    return params, images


def test_shapes_and_parameter_count():
    model = tiny()
    params, images = init(model)
    chex.assert_shape(model.apply({"params": params}, images), (2, 5))
    d, m, c, p = 16, 24, 3, 4
    ln = 2 * d
    block = ln + (d * 3 * d + 3 * d) + (d * d + d) + ln + (d * m + m) + (m * d + d)
    expected = (p * p * c * d + d) + d + (N_PATCHES + 1) * d + 2 * block + ln + (d * 5 + 5)
    assert sum(x.size for x in jax.tree_util.tree_leaves(params)) == expected
    # MNIST-sized single-channel input with mean pooling.
    model = tiny(pool="mean", num_classes=10)
    params, images = init(model, (3, 28, 28, 1))
    chex.assert_shape(model.apply({"params": params}, images), (3, 10))
    chex.assert_shape(params["position_embedding"], (1, 50, 16))


def test_image_to_patches_layout_and_pixel_round_trip():
    images = jnp.arange(np.prod(SHAPE), dtype=jnp.float32).reshape(SHAPE)
    patches = image_to_patches(images, 4)
    chex.assert_shape(patches, (2, N_PATCHES, 4 * 4 * 3))
    # Patch 4 is grid row 1, column 1: pixels [4:8, 4:8], flattened (row, col, channel).
    np.testing.assert_array_equal(patches[1, 4], images[1, 4:8, 4:8, :].reshape(-1))
    relevance = jnp.arange(12.0).reshape(2, N_PATCHES)
    pixels = patches_to_pixels(relevance, SHAPE[1:3], 4)
    chex.assert_shape(pixels, (2, 8, 12))
    np.testing.assert_array_equal(pixels[1, 4:8, 4:8], jnp.full((4, 4), relevance[1, 4]))
    # The pixel map of a patch map is constant on every patch and averages back to it.
    np.testing.assert_array_equal(image_to_patches(pixels[..., None], 4).mean(-1), relevance)
    conserved = patches_to_pixels(relevance, SHAPE[1:3], 4, conserve=True)
    np.testing.assert_allclose(conserved.sum((1, 2)), relevance.sum(1), rtol=1e-6)


def test_patch_embedding_of_a_patch_depends_only_on_its_pixels():
    model = tiny()
    params, images = init(model)
    _, state = model.apply({"params": params}, images, mutable=["intermediates"])
    changed = images.at[:, 4:8, 8:12, :].add(1.0)   # patch 5: grid row 1, column 2
    _, state2 = model.apply({"params": params}, changed, mutable=["intermediates"])
    before, after = state["intermediates"]["patches"][0], state2["intermediates"]["patches"][0]
    np.testing.assert_array_equal(before[:, :5], after[:, :5])
    assert np.abs(after[:, 5] - before[:, 5]).min() > 0
    # After a block, attention mixes the change into every token.
    r0, r0_changed = state["intermediates"]["residual_0"][0], state2["intermediates"]["residual_0"][0]
    assert np.abs(r0_changed - r0).max(-1).min() > 0


def test_every_dense_layer_attention_norm_and_activation_go_through_ops():
    model = tiny()
    params, images = init(model)
    kernels, attention_shapes, activations, factors = [], [], [], []

    def linear(x, kernel, bias):
        kernels.append(kernel)
        return plain_linear(x, kernel, bias)

    def attention(q, k, v, mask):
        attention_shapes.append((q.shape, k.shape, v.shape, mask))
        return dot_product_attention(q, k, v, mask)

    def activation(fn, x):
        activations.append(fn)
        return fn(x)

    def norm_factor(inv):
        factors.append(inv.shape)
        return inv

    ops = Ops(attention=attention, norm_factor=norm_factor, activation=activation, linear=linear)
    out = model.clone(ops=ops).apply({"params": params}, images)
    np.testing.assert_array_equal(out, model.apply({"params": params}, images))
    # patch embedding + (qkv, out, fc_in, fc_out) per block + head
    assert len(kernels) == 1 + 4 * model.layers + 1
    # ... and those are exactly the model's kernels: no dense layer bypasses ops.linear.
    param_kernels = [leaf for path, leaf in jax.tree_util.tree_leaves_with_path(params)
                     if jax.tree_util.keystr(path).endswith("['kernel']")]
    assert len(param_kernels) == len(kernels)
    for k in param_kernels:
        assert sum(x.shape == k.shape and np.array_equal(x, k) for x in kernels) == 1
    tokens = (2, 1 + N_PATCHES, 4, 4)
    assert attention_shapes == [(tokens, tokens, tokens, None)] * model.layers
    assert len(activations) == model.layers and all(fn is jax.nn.gelu for fn in activations)
    assert factors == [(2, 1 + N_PATCHES, 1)] * (2 * model.layers + 1)


@pytest.mark.parametrize("pool", ["cls", "mean"])
def test_without_position_embeddings_permuting_patches_permutes_tokens_and_keeps_logits(pool):
    model = tiny(pool=pool)
    params, images = init(model)
    params = dict(params, position_embedding=jnp.zeros_like(params["position_embedding"]))
    perm = np.array([3, 0, 5, 1, 4, 2])
    patches = image_to_patches(images, 4)[:, perm]          # [2, 6, 48], then back to the image
    permuted = patches.reshape(2, 2, 3, 4, 4, 3).transpose(0, 1, 3, 2, 4, 5).reshape(SHAPE)
    logits, state = model.apply({"params": params}, images, mutable=["intermediates"])
    logits_p, state_p = model.apply({"params": params}, permuted, mutable=["intermediates"])
    np.testing.assert_allclose(logits_p, logits, atol=1e-5, rtol=1e-5)
    for i in range(model.layers):
        r, r_p = state["intermediates"][f"residual_{i}"][0], state_p["intermediates"][f"residual_{i}"][0]
        np.testing.assert_allclose(r_p[:, 0], r[:, 0], atol=1e-5, rtol=1e-5)          # class token
        np.testing.assert_allclose(r_p[:, 1:], r[:, 1:][:, perm], atol=1e-5, rtol=1e-5)
    # The learned position embeddings are what breaks the symmetry.
    params_pos = dict(params, position_embedding=jax.random.normal(jax.random.PRNGKey(3), params["position_embedding"].shape))
    a = model.apply({"params": params_pos}, images)
    b = model.apply({"params": params_pos}, permuted)
    assert np.abs(a - b).max() > 1e-3


def test_logits_depend_only_on_their_own_example():
    model = tiny()
    params, _ = init(model)
    images = jax.random.uniform(jax.random.PRNGKey(5), (4, 8, 12, 3))
    full = model.apply({"params": params}, images)
    np.testing.assert_allclose(full[2:3], model.apply({"params": params}, images[2:3]), rtol=1e-5, atol=1e-6)


def test_explanation_points_values_and_gradients():
    model = tiny()
    params, images = init(model)
    variables = model.init(jax.random.PRNGKey(0), images)
    perturbations = variables["perturbations"]
    expected = {"pixels": SHAPE, "patches": (2, N_PATCHES, 16),
                **{f"residual_{i}": (2, 1 + N_PATCHES, 16) for i in range(model.layers)}}
    assert {k: v.shape for k, v in perturbations.items()} == expected
    logits, state = model.apply({"params": params, "perturbations": perturbations}, images,
                                mutable=["intermediates", "perturbations"])
    sown = state["intermediates"]
    assert {k: v[0].shape for k, v in sown.items()} == expected
    np.testing.assert_array_equal(sown["pixels"][0], images)
    np.testing.assert_allclose(sown["patches"][0], image_to_patches(images, 4) @ params["patch_embed"]["kernel"]
                               + params["patch_embed"]["bias"], rtol=1e-5, atol=1e-6)

    def score(perturbations, images):
        return model.apply({"params": params, "perturbations": perturbations}, images)[:, 1].sum()

    grads_at_points, grads_input = jax.grad(score, argnums=(0, 1))(perturbations, images)
    # The gradient at the `pixels` point is the gradient with respect to the input.
    np.testing.assert_allclose(grads_at_points["pixels"], grads_input, rtol=1e-5, atol=1e-7)
    # Chain rule through the patch embedding: d/dpixels = d/dpatches @ kernel^T, re-tiled.
    via_patches = grads_at_points["patches"] @ params["patch_embed"]["kernel"].T
    np.testing.assert_allclose(image_to_patches(grads_input, 4), via_patches, rtol=1e-4, atol=1e-7)


def test_dropout_only_in_training():
    model = tiny(dropout=0.5)
    params, images = init(model)
    a = model.apply({"params": params}, images)
    np.testing.assert_array_equal(a, model.apply({"params": params}, images))
    b = model.apply({"params": params}, images, train=True, rngs={"dropout": jax.random.PRNGKey(1)})
    assert np.abs(a - b).max() > 1e-3


@pytest.mark.parametrize("model,shape,error,match", [
    (tiny(), (8, 12, 3), ValueError, r"images \[batch, height, width, channels\]"),
    (tiny(), (2, 10, 12, 3), ValueError, r"height 10 and width 12 must both be multiples of patch_size=4"),
    (tiny(), (2, 8, 14, 3), ValueError, r"multiples of patch_size=4"),
    (tiny(pool="max"), SHAPE, ValueError, r"pool='max'"),
    (tiny(hidden=18), SHAPE, ValueError, r"hidden=18 must be a multiple of heads=4"),
])
def test_bad_inputs_are_clear_errors(model, shape, error, match):
    with pytest.raises(error, match=match):
        model.init(jax.random.PRNGKey(0), jnp.zeros(shape))


def test_integer_images_and_bad_relevance_are_clear_errors():
    with pytest.raises(TypeError, match="must be floating point"):
        tiny().init(jax.random.PRNGKey(0), jnp.zeros(SHAPE, jnp.uint8))
    with pytest.raises(ValueError, match="5 patches do not tile a 8x12 image"):
        patches_to_pixels(jnp.zeros((2, 5)), (8, 12), 4)
    with pytest.raises(ValueError, match=r"\[batch, n_patches\]"):
        patches_to_pixels(jnp.zeros((6,)), (8, 12), 4)


def test_exact_gelu_is_the_erf_form():
    import math

    from jaxml.models.vit import MLP
    x = jax.random.normal(jax.random.PRNGKey(0), (2, 3, 4)) * 3
    mlp = MLP(8, exact_gelu=True)
    p = mlp.init(jax.random.PRNGKey(1), x)["params"]
    h = np.asarray(x) @ np.asarray(p["fc_in"]["kernel"]) + np.asarray(p["fc_in"]["bias"])
    erf = np.vectorize(math.erf)
    g = 0.5 * h * (1 + erf(h / math.sqrt(2)))                        # torch's nn.GELU()
    want = g @ np.asarray(p["fc_out"]["kernel"]) + np.asarray(p["fc_out"]["bias"])
    np.testing.assert_allclose(np.asarray(mlp.apply({"params": p}, x)), want, rtol=1e-5, atol=1e-5)
    tanh = np.asarray(MLP(8).apply({"params": p}, x))                # the default tanh form differs
    assert np.abs(tanh - want).max() > 1e-5
