"""SmolLM2-135M in Flax against an independent NumPy float64 forward pass of the same GGUF file."""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.llm import generate as gen
from jaxml.models import llama

PROMPTS = ["Once upon a time, there was a little", "It is a truth universally acknowledged, that",
           "def fibonacci(n):"]


# --- The reference: written from the GGUF tensors and the LLaMA formulas, sharing no model code. --

class NumpyLlama:
    def __init__(self, path):
        from gguf import GGUFReader
        from gguf.quants import dequantize
        r = GGUFReader(str(path))
        f = lambda k: r.fields[k].contents()
        self.W = {t.name: np.asarray(dequantize(t.data, t.tensor_type), np.float64).reshape(
            [int(s) for s in t.shape[::-1]]) for t in r.tensors}
        self.L, self.D = f("llama.block_count"), f("llama.embedding_length")
        self.NH, self.NKV = f("llama.attention.head_count"), f("llama.attention.head_count_kv")
        self.HD = self.D // self.NH
        self.theta, self.eps = f("llama.rope.freq_base"), f("llama.attention.layer_norm_rms_epsilon")

    def rms(self, x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * w

    def rope(self, x, T):  # x [heads, T, hd]; GGUF Q/K: adjacent features are the rotary pairs
        ang = np.arange(T)[:, None] * self.theta ** (-np.arange(0, self.HD, 2) / self.HD)
        c, s = np.cos(ang)[None], np.sin(ang)[None]
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return np.stack([x0 * c - x1 * s, x0 * s + x1 * c], -1).reshape(x.shape)

    def logits(self, ids):
        W, T = self.W, len(ids)
        x = W["token_embd.weight"][np.asarray(ids)]
        causal = np.tril(np.ones((T, T), bool))
        for i in range(self.L):
            p = f"blk.{i}."
            h = self.rms(x, W[p + "attn_norm.weight"])
            q = self.rope((h @ W[p + "attn_q.weight"].T).reshape(T, self.NH, self.HD).transpose(1, 0, 2), T)
            k = self.rope((h @ W[p + "attn_k.weight"].T).reshape(T, self.NKV, self.HD).transpose(1, 0, 2), T)
            v = (h @ W[p + "attn_v.weight"].T).reshape(T, self.NKV, self.HD).transpose(1, 0, 2)
            k, v = np.repeat(k, self.NH // self.NKV, 0), np.repeat(v, self.NH // self.NKV, 0)
            a = q @ k.transpose(0, 2, 1) / np.sqrt(self.HD)
            a = np.where(causal, a, -np.inf)
            a = np.exp(a - a.max(-1, keepdims=True))
            a = a / a.sum(-1, keepdims=True)
            x = x + (a @ v).transpose(1, 0, 2).reshape(T, self.D) @ W[p + "attn_output.weight"].T
            h = self.rms(x, W[p + "ffn_norm.weight"])
            g = h @ W[p + "ffn_gate.weight"].T
            x = x + ((g / (1 + np.exp(-g))) * (h @ W[p + "ffn_up.weight"].T)) @ W[p + "ffn_down.weight"].T
        return self.rms(x, W["output_norm.weight"]) @ W["token_embd.weight"].T

    def greedy(self, ids, n):
        ids = list(ids)
        for _ in range(n):
            ids.append(int(np.argmax(self.logits(ids)[-1])))
        return ids[-n:]


@pytest.fixture(scope="module")
def smollm():
    model, params, tok = llama.load_smollm2()
    return model, params, tok


@pytest.fixture(scope="module")
def reference():
    return NumpyLlama(llama.smollm2_path())


def _our_logits(model, params, ids):
    tokens = jnp.asarray([ids], jnp.int32)
    return np.asarray(model.apply({"params": params}, tokens, jnp.arange(len(ids))[None])[0][0])


def test_config_from_gguf_metadata(smollm):
    model, _, tok = smollm
    c = model.config
    assert (c.layers, c.hidden, c.heads, c.kv_heads, c.mlp_hidden, c.vocab_size) == (30, 576, 9, 3, 1536, 49152)
    assert c.rope_layout == "interleaved" and c.tie_embeddings and c.max_len == 8192


def test_float32_logits_match_the_float64_reference(smollm, reference):
    model, params, tok = smollm
    for prompt in PROMPTS[:2]:
        ids = tok.encode(prompt)
        diff = np.abs(_our_logits(model, params, ids) - reference.logits(ids)).max()
        assert diff <= 5e-4, (prompt, diff)


def test_float64_logits_match_the_reference_to_1e6(reference):
    with jax.enable_x64(True):
        config, params, meta = llama.load_gguf(llama.smollm2_path(), dtype=np.float64)
        model = llama.Llama(config, dtype=jnp.float64)
        from jaxml.models.tokenizer import tokenizer_from_gguf_metadata
        tok = tokenizer_from_gguf_metadata(meta)
        for prompt in PROMPTS:
            ids = tok.encode(prompt)
            ours = _our_logits(model, params, ids)
            assert ours.dtype == np.float64
            np.testing.assert_array_less(np.abs(ours - reference.logits(ids)).max(), 1e-6)


def test_greedy_tokens_equal_the_reference_and_read_as_english(smollm, reference):
    model, params, tok = smollm
    ids = tok.encode(PROMPTS[0])
    expected = reference.greedy(ids, 12)
    out = gen.generate(model, params, [ids], max_new_tokens=12, stop_ids=tok.stop_ids, pad_id=tok.pad_id)
    assert out.sequences()[0] == expected
    assert tok.decode(expected) == " girl named Emma who loved to play in the sun. She"


def test_last_logits_only_is_the_reference_last_row(smollm, reference):
    """The head on the last position only ([batch, 1, vocab]) on left-padded rows of different
    lengths: the float64 reference's last row of each prompt, and the full model's last row."""
    model, params, tok = smollm
    rows = [tok.encode(p) for p in PROMPTS[:2]]
    length = max(map(len, rows))
    tokens = np.zeros((2, length), np.int32)
    positions = np.zeros((2, length), np.int32)
    valid = np.zeros((2, length), bool)
    for b, ids in enumerate(rows):
        tokens[b, length - len(ids):] = ids
        positions[b, length - len(ids):] = np.arange(len(ids))
        valid[b, length - len(ids):] = True
    last = model.clone(last_logits_only=True)
    out = np.asarray(last.apply({"params": params}, tokens, positions, key_valid=valid)[0])
    full = np.asarray(model.apply({"params": params}, tokens, positions, key_valid=valid)[0])
    assert out.shape == (2, 1, model.config.vocab_size)
    np.testing.assert_allclose(out[:, 0], full[:, -1], atol=1e-5)
    for b, ids in enumerate(rows):
        assert np.abs(out[b, 0] - reference.logits(ids)[-1]).max() <= 5e-4
    with pytest.raises(ValueError, match="last_logits_only"):
        last.apply({"params": params}, tokens[:1], positions[:1], cache=llama.init_cache(model.config, 1, 2 * length),
                   cache_index=0)


def test_rotate_half_layout_with_unpermuted_weights_is_the_same_model(smollm):
    model, params, tok = smollm
    config_hf, params_hf = llama.permute_qk_to_rotate_half(params, model.config)
    ids = tok.encode(PROMPTS[1])
    a = _our_logits(model, params, ids)
    b = _our_logits(llama.Llama(config_hf), params_hf, ids)
    np.testing.assert_allclose(a, b, atol=2e-4)
    # ...while the wrong layout for these weights gives a different model.
    c = _our_logits(llama.Llama(config_hf), params, ids)
    assert np.abs(a - c).max() > 1.0


def test_bad_files_give_clear_errors(tmp_path):
    (tmp_path / "not.gguf").write_bytes(b"PK\x03\x04 this is a zip")
    with pytest.raises(ValueError, match="not a GGUF file"):
        llama.load_gguf(tmp_path / "not.gguf")
    with open(llama.smollm2_path(), "rb") as f:
        head = f.read(2_000_000)
    (tmp_path / "cut.gguf").write_bytes(head)
    with pytest.raises(ValueError, match="truncated"):
        llama.load_gguf(tmp_path / "cut.gguf")
    with pytest.raises(FileNotFoundError):
        llama.load_gguf(tmp_path / "missing.gguf")


def test_metadata_errors():
    with pytest.raises(ValueError, match="architecture 'gpt2' is not supported"):
        llama.LlamaConfig.from_gguf_metadata({"general.architecture": "gpt2"})
    with pytest.raises(ValueError, match="lacks 'llama.block_count'"):
        llama.LlamaConfig.from_gguf_metadata({"general.architecture": "llama", "llama.embedding_length": 8,
                                              "llama.attention.head_count": 2, "llama.vocab_size": 4})


def test_tokenizer_round_trip_and_specials(smollm):
    _, _, tok = smollm
    for text in ["Hello, world!", "  spaces\tand\nnewlines", "naïve café — 東京", "x = 12345"]:
        assert tok.decode(tok.encode(text)) == text
    digits = tok.encode("2024")
    assert len(digits) == 4                                   # the smollm pre-tokenizer splits digits
    assert tok.encode("<|im_start|>") == [1] and tok.encode("<|im_end|>") == [2]
    assert set(tok.stop_ids) == {0, 2}
    chat = tok.apply_chat_template([{"role": "user", "content": "Hi"}])
    assert chat.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    with pytest.raises(ValueError, match="'role' and 'content'"):
        tok.apply_chat_template([{"text": "hi"}])
