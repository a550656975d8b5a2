"""Model-level compression (`jaxml.compress.model`): specs, memory accounting by hand, every kernel of
Llama, BERT and ViT compressed through the params, and the methods' layer outputs against their own
layer functions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.compress import calibration, pruning
from jaxml.compress.model import Compression, compress_model, int_format
from jaxml.compress.quantizers import quantize_array


def test_parse_and_names():
    assert Compression.parse("dense") == Compression()
    assert Compression.parse("GPTQ-W4") == Compression("gptq", bits=4)
    assert Compression.parse("wanda-2:4") == Compression("wanda", pattern="2:4")
    assert Compression.parse("sparsegpt-50%").name == "sparsegpt-50%"
    assert Compression.parse("magnitude-unstructured").level == "50%"
    assert Compression("awq", bits=3).level == "W3"
    for bad in ("gptq-4", "wanda", "prune-2:4", "rtn-w9"):
        with pytest.raises(ValueError):
            Compression.parse(bad)
    with pytest.raises(ValueError, match="accepted integers 2..8"):
        Compression("rtn", bits=1)
    with pytest.raises(ValueError, match="for pruning"):
        Compression("rtn", bits=4, pattern="2:4")
    with pytest.raises(ValueError, match="N:M"):
        Compression("wanda", pattern="4:2")


def test_bits_per_weight_by_hand():
    # INT group 64 asymmetric: bits + (16-bit scale + 16-bit zero) / 64.
    assert Compression("rtn", bits=4).bits_per_weight() == 4.5
    assert Compression("gptq", bits=3).bits_per_weight() == 3.5
    assert Compression("awq", bits=8).bits_per_weight() == 8.5
    # 2:4: half the weights in fp16 plus ceil(log2(C(4,2)) / 2) = ceil(1.29) = 2 index bits per kept weight.
    assert Compression("wanda", pattern="2:4").bits_per_weight() == 0.5 * (16 + 2)
    # 1:2: log2(2) / 1 = 1 bit per kept weight; 4:8: log2(70) / 4 = 1.53 -> 2 bits.
    assert Compression("wanda", pattern="1:2").bits_per_weight() == 0.5 * 17
    assert Compression("wanda", pattern="4:8").bits_per_weight() == 0.5 * 18
    # Unstructured 50%: fp16 of the kept half plus a 1-bit mask per weight.
    assert Compression("magnitude", pattern="50%").bits_per_weight() == 9.0
    assert Compression().bits_per_weight() == 16.0


def _bert():
    from jaxml.models import bert
    cfg = bert.BertConfig(vocab_size=11, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=128, max_position_embeddings=16, type_vocab_size=2)
    ids = jnp.ones((2, 8), jnp.int32)
    model = bert.Bert(cfg)
    params = model.init(jax.random.PRNGKey(0), ids, jnp.ones((2, 8), jnp.int32))["params"]
    return model, params, [((ids, jnp.ones((2, 8), jnp.int32)), {})]


def _vit():
    from jaxml.models.vit import ViT
    x = jax.random.normal(jax.random.PRNGKey(1), (2, 16, 16, 1))
    model = ViT(num_classes=3, patch_size=8, hidden=64, layers=2, heads=2, mlp_hidden=128)
    params = model.init(jax.random.PRNGKey(0), x)["params"]
    return model, params, [((x,), {})]


@pytest.mark.parametrize("make", [_bert, _vit], ids=["bert", "vit"])
@pytest.mark.parametrize("spec", ["wanda-2:4", "sparsegpt-4:8", "magnitude-50%", "gptq-w4", "rtn-w3"])
def test_every_linear_kernel_of_bert_and_vit(make, spec):
    model, params, batches = make()
    stats = calibration.calibrate(model, params, batches, hessian=True)
    spec = Compression.parse(spec)
    params_c, report = compress_model(params, stats, spec)
    before, after = calibration.linear_kernels(params), calibration.linear_kernels(params_c)
    assert before.keys() == after.keys() and report.layers == len(before) >= 6
    for name, w in after.items():
        w = np.asarray(w)
        if spec.pattern:
            p = pruning.SparsityPattern.parse(spec.pattern)
            if p.structured:   # at most N nonzeros per group of M inputs (a kept weight may itself be 0)
                groups = (w != 0).reshape(-1, p.m, w.shape[1]).sum(1)
                assert groups.max() <= p.n
            else:
                assert pruning.sparsity_of(w) >= 0.5 - 1e-9
        else:                  # on the INT grid: at most 2^bits distinct values per group of 64 inputs
            n_in = w.shape[0]
            for g in range(0, n_in, 64):
                for col in range(min(w.shape[1], 4)):
                    assert len(np.unique(w[g:g + 64, col])) <= 2 ** spec.bits
    # The compressed model runs and differs from the dense one.
    out_d = model.apply({"params": params}, *batches[0][0])
    out_c = model.apply({"params": params_c}, *batches[0][0])
    assert np.all(np.isfinite(np.asarray(out_c))) and not np.allclose(out_d, out_c)


def test_kernels_equal_the_layer_functions():
    model, params, batches = _bert()
    stats = calibration.calibrate(model, params, batches, hessian=True)
    name, w = sorted(calibration.linear_kernels(params).items())[0]
    w = np.asarray(w, np.float32)
    pc, _ = compress_model(params, stats, Compression("rtn", bits=4))
    np.testing.assert_array_equal(calibration.linear_kernels(pc)[name], quantize_array(int_format(4), w, 0))
    pc, _ = compress_model(params, stats, Compression("wanda", pattern="2:4"))
    np.testing.assert_array_equal(calibration.linear_kernels(pc)[name],
                                  pruning.wanda_prune(w, stats[name].sq_mean, "2:4"))
    pc, _ = compress_model(params, stats, Compression("magnitude", pattern="50%"), layers=(name,))
    changed = [k for k, v in calibration.linear_kernels(pc).items() if not np.array_equal(v, calibration.linear_kernels(params)[k])]
    assert changed == [name]


def test_clear_errors():
    model, params, batches = _bert()
    with pytest.raises(ValueError, match="needs calibration statistics"):
        compress_model(params, None, Compression("gptq", bits=4))
    stats = calibration.calibrate(model, params, batches, hessian=False)
    with pytest.raises(ValueError, match="hessian=True"):
        compress_model(params, stats, Compression("sparsegpt", pattern="2:4"))
    with pytest.raises(ValueError, match="no Linear kernels match"):
        compress_model(params, stats, Compression("rtn", bits=4), layers=("nothing/",))
