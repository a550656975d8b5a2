import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.models.cnn import CNN


def test_shapes_and_parameter_count():
    model = CNN(num_classes=10, features=(8, 16), hidden=32)
    x = jnp.zeros((3, 28, 28, 1))
    params = model.init(jax.random.PRNGKey(0), x)["params"]
    chex.assert_shape(model.apply({"params": params}, x), (3, 10))
    # conv0: 3*3*1*8+8, conv1: 3*3*8*16+16, hidden: 7*7*16*32+32, logits: 32*10+10
    expected = (72 + 8) + (1152 + 16) + (784 * 32 + 32) + (320 + 10)
    assert sum(p.size for p in jax.tree_util.tree_leaves(params)) == expected


def test_logits_depend_only_on_their_own_example():
    model = CNN(features=(4,), hidden=8)
    x = jax.random.normal(jax.random.PRNGKey(1), (4, 28, 28, 1))
    params = model.init(jax.random.PRNGKey(0), x)["params"]
    full = model.apply({"params": params}, x)
    single = model.apply({"params": params}, x[2:3])
    np.testing.assert_allclose(full[2:3], single, rtol=1e-5, atol=1e-6)


def test_dropout_only_in_training():
    model = CNN(features=(4,), hidden=8, dropout=0.5)
    x = jnp.ones((2, 28, 28, 1))
    params = model.init(jax.random.PRNGKey(0), x)["params"]
    eval_a = model.apply({"params": params}, x)
    eval_b = model.apply({"params": params}, x)
    np.testing.assert_array_equal(eval_a, eval_b)
    train_a = model.apply({"params": params}, x, train=True, rngs={"dropout": jax.random.PRNGKey(1)})
    assert not np.allclose(train_a, eval_a)


def test_bad_rank_is_a_clear_error():
    with pytest.raises(ValueError, match=r"images \[batch, height, width, channels\]"):
        CNN().init(jax.random.PRNGKey(0), jnp.zeros((28, 28)))


def test_kernel_size_sets_the_convolution_kernels():
    model = CNN(num_classes=3, features=(2, 4), hidden=0, kernel_size=5)
    params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 28, 28, 1)))["params"]
    assert params["conv0"]["kernel"].shape == (5, 5, 1, 2) and params["conv1"]["kernel"].shape == (5, 5, 2, 4)
    assert params["logits"]["kernel"].shape == (7 * 7 * 4, 3)      # 'same' padding: 28 -> 14 -> 7
