"""VQ-Stroke, the seq2seq generator and the metrics, against hand-computed values and invariants."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.strokenuwa import data, generator, metrics, vq


# --- VQ-Stroke ------------------------------------------------------------------------------------

def test_features_round_trip_and_scale():
    rows = np.array([[0, 0, 0, 0, 0, 0, 0, 200, 100], [2, 10, 20, 30, 40, 50, 60, 70, 80], [1, 5, 5, 0, 0, 0, 0, 9, 9]])
    x = np.asarray(vq.features(rows))
    np.testing.assert_allclose(x[:, 0], [-1, 1, 0])                 # cmd - 1
    np.testing.assert_allclose(x[0, 7:], [1.0, 0.0])                # 200 -> 1, 100 -> 0: the paper's (v/200)*2-1
    np.testing.assert_array_equal(np.asarray(vq.rows_from_features(x)), rows)
    # M and L rows come back with zero control points whatever the decoder says there
    noisy = x.copy()
    noisy[2, 3:7] = 0.3
    np.testing.assert_array_equal(np.asarray(vq.rows_from_features(noisy))[2, 3:7], 0)


def test_span_mask_rounds_up_to_the_factor():
    m = np.asarray(vq.span_mask(jnp.array([3, 4, 0]), 8, 2))
    np.testing.assert_array_equal(m, [[1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 0, 0, 0, 0], [0] * 8])
    m4 = np.asarray(vq.span_mask(jnp.array([5]), 8, 4))
    np.testing.assert_array_equal(m4, [[1] * 8])


def test_nearest_code():
    book = jnp.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    z = jnp.array([[[1.0, 1.0], [9.0, 2.0], [-1.0, 7.0]]])
    np.testing.assert_array_equal(np.asarray(vq.nearest_code(z, book)), [[0, 1, 2]])


def test_ema_update_matches_hand_computation_and_reseeds_dead_codes():
    mu = 0.9
    book = {"codebook": jnp.array([[0.0, 0.0], [5.0, 5.0], [9.0, 9.0]]), "counts": jnp.array([10.0, 10.0, 1.0]),
            "sums": jnp.array([[0.0, 0.0], [50.0, 50.0], [9.0, 9.0]])}
    z = jnp.array([[[1.0, 0.0], [3.0, 2.0], [6.0, 6.0], [100.0, 100.0]]])
    idx = jnp.array([[0, 0, 1, 2]])
    mask = jnp.array([[1.0, 1.0, 1.0, 0.0]])        # the last position is padding: ignored
    new, stats = vq.ema_update(book, z, idx, mask, jax.random.PRNGKey(0), mu, threshold=1.0)
    counts = np.array([0.9 * 10 + 0.1 * 2, 0.9 * 10 + 0.1 * 1, 0.9 * 1 + 0.0])
    sums0 = 0.9 * np.array([0.0, 0.0]) + 0.1 * np.array([4.0, 2.0])
    sums1 = 0.9 * np.array([50.0, 50.0]) + 0.1 * np.array([6.0, 6.0])
    np.testing.assert_allclose(np.asarray(new["counts"][:2]), counts[:2], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(new["codebook"][0]), sums0 / counts[0], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(new["codebook"][1]), sums1 / counts[1], rtol=1e-6)
    # code 2 fell to 0.9 < 1: re-seeded with one of the valid encoder outputs, never the padded one
    seeded = np.asarray(new["codebook"][2])
    assert any(np.allclose(seeded, v) for v in np.asarray(z[0, :3])), seeded
    assert float(new["counts"][2]) == 1.0 and int(stats["reseeded"]) == 1
    # perplexity of the usage (2/3, 1/3, 0)
    p = np.array([2 / 3, 1 / 3])
    np.testing.assert_allclose(float(stats["perplexity"]), np.exp(-(p * np.log(p)).sum()), rtol=1e-5)


def _vq_batch(seed=0, n=8, t=16):
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, 201, (n, t, 9))
    rows[..., 0] = rng.integers(0, 3, (n, t))
    length = rng.integers(1, t + 1, n)
    rows[np.arange(t)[None, :] >= length[:, None]] = 0
    return {"rows": rows.astype(np.int32), "length": length.astype(np.int32)}


def test_vq_task_first_step_initialises_codebooks_from_encoder_outputs_and_gradients_flow():
    model = vq.VQStroke(levels=2, width=16, depth=1, emb=8, codes=16)
    task = vq.VQStrokeTask(model, None, {}, mu=1.0)    # mu = 1: the first step's EMA leaves the codes as initialised
    batch = _vq_batch()
    params = jax.jit(task.init)(jax.random.PRNGKey(0), batch)
    state = task.init_state(jax.random.PRNGKey(0), batch)
    (loss, (m, new)), grads = jax.jit(jax.value_and_grad(task.loss, has_aux=True))(params, batch, jax.random.PRNGKey(1),
                                                                                   state)
    assert int(new["ready"]) == 1 and new["codebook"].shape == (2, 16, 8)
    zs = jax.jit(lambda p, x: model.apply({"params": p}, vq.features(x), method=vq.VQStroke.encode))(params, batch["rows"])
    for level, z in enumerate(zs):
        flat = np.asarray(z).reshape(-1, 8)
        # every initial code is one of the encoder outputs
        d = np.min(np.linalg.norm(np.asarray(new["codebook"][level])[:, None] - flat[None], axis=-1), axis=1)
        assert d.max() < 1e-5
    # the straight-through estimator lets the reconstruction reach the encoder
    enc = grads["encoders_0"]["to_emb"]["kernel"]
    assert float(jnp.abs(enc).sum()) > 0
    # total = sum of recon + commit over the levels
    np.testing.assert_allclose(float(loss), sum(float(m[f"recon{l}"] + m[f"commit{l}"]) for l in range(2)), rtol=1e-5)


def test_vq_rejects_lengths_that_do_not_divide():
    model = vq.VQStroke(levels=2, width=8, depth=1, emb=4, codes=8)
    with pytest.raises(ValueError, match="multiple of 4"):
        model.init(jax.random.PRNGKey(0), jnp.zeros((1, 6, 9)))


def test_tokenize_detokenize_shapes_and_padding_decode():
    model = vq.VQStroke(levels=2, width=8, depth=1, emb=4, codes=8)
    task = vq.VQStrokeTask(model, None, {})
    batch = _vq_batch(t=8)
    params = jax.jit(task.init)(jax.random.PRNGKey(0), batch)
    _, (_, state) = jax.jit(task.loss)(params, batch, jax.random.PRNGKey(1), task.init_state(None, batch))
    codes = vq.tokenize(model, params, state, batch["rows"], batch["length"])
    assert codes.shape == (8, 4) and codes.min() >= 0 and codes.max() < 8
    rows = vq.detokenize(model, params, state, codes)
    assert rows.shape == (8, 8, 9) and rows[..., 0].max() <= 2 and rows[..., 1:].max() <= 200


# --- the generator ----------------------------------------------------------------------------

def test_targets_and_content_round_trip():
    seqs = [np.array([0, 5, 2]), np.array([], int), np.array([7])]
    t = generator.targets(seqs, 6)
    np.testing.assert_array_equal(t[0], [1, 3, 8, 5, 2, 0])
    np.testing.assert_array_equal(t[1], [1, 2, 0, 0, 0, 0])
    back = generator.content(t[:, 1:])
    for a, b in zip(seqs, back):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="4 tokens > 3"):
        generator.targets([np.arange(4)], 5)


def test_cached_greedy_decoding_equals_teacher_forced_argmax():
    cfg = generator.Seq2SeqConfig(src_vocab=12, tgt_vocab=20, max_src=8, max_tgt=12, dim=32, heads=4, mlp=64)
    model = generator.Seq2Seq(cfg)
    src = np.array([[3, 4, 5, 0, 0, 0], [6, 7, 0, 0, 0, 0], [2, 2, 2, 2, 2, 2]])
    params = jax.jit(model.init)(jax.random.PRNGKey(3), src, np.ones((3, 11), np.int32))["params"]
    out = generator.generate(model, params, src, max_len=11)
    seq = np.concatenate([np.full((3, 1), generator.BOS), out.tokens], 1)
    logits = np.array(jax.jit(model.apply)({"params": params}, src, seq[:, :-1]))
    logits[..., [generator.PAD, generator.BOS]] = -np.inf
    for i in range(3):
        n = min(out.lengths[i] + 1, 11)
        np.testing.assert_array_equal(logits[i, :n].argmax(-1), out.tokens[i, :n])
    # source padding is masked: extra PAD columns do not change the output
    wide = np.concatenate([src, np.zeros((3, 2), np.int32)], 1)
    out2 = generator.generate(model, params, wide, max_len=11)
    np.testing.assert_array_equal(out.tokens, out2.tokens)


def test_seq2seq_task_loss_is_the_masked_cross_entropy():
    cfg = generator.Seq2SeqConfig(src_vocab=8, tgt_vocab=10, max_src=4, max_tgt=6, dim=16, heads=2, mlp=32)
    task = generator.Seq2SeqTask(generator.Seq2Seq(cfg), None, {})
    batch = {"src": np.array([[1, 2, 0, 0]]), "tgt": generator.targets([np.array([1, 4])], 6)}
    params = jax.jit(task.init)(jax.random.PRNGKey(0), batch)
    loss, _ = jax.jit(task.loss)(params, batch, None)
    logits = np.asarray(jax.jit(task.model.apply)({"params": params}, batch["src"], batch["tgt"][:, :-1]))[0]
    logp = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) - logits.max(-1, keepdims=True)
    want = batch["tgt"][0, 1:4]                      # 4, 7, EOS; the PADs after are not scored
    np.testing.assert_allclose(float(loss), -np.mean(logp[np.arange(3), want]), rtol=1e-5)


# --- metrics --------------------------------------------------------------------------------------

def test_point_l2_uses_the_commands_points():
    ref = np.array([[1, 0, 0, 0, 0, 0, 0, 10, 0], [2, 0, 0, 3, 4, 0, 0, 0, 0]])
    pred = np.array([[1, 0, 0, 50, 50, 50, 50, 13, 4], [2, 0, 0, 0, 0, 0, 0, 0, 0]])
    # L: start exact, end off by (3, 4) -> mean (0 + 5) / 2; C: one control point off by 5 -> 5 / 4
    np.testing.assert_allclose(np.asarray(metrics.point_l2(pred, ref)), [2.5, 1.25])


def test_compression_ratio_and_validity():
    assert metrics.compression_ratio([2, 3], [40, 60]) == pytest.approx(0.05)
    assert metrics.validity_rate([True, False, True, True]) == 0.75
    with pytest.raises(ValueError):
        metrics.compression_ratio([1, 2], [3])


def test_nearest_raster_distance_by_hand():
    a = np.zeros((2, 2, 2))
    a[0, 0, 0] = 1.0                        # one pixel
    a[1] = 0.5                              # grey everywhere
    refs = np.zeros((2, 2, 2))
    refs[0, 0, :] = 1.0                     # top row
    refs[1] = 1.0                           # everything
    # a0 vs refs: IoU 1/2 and 1/4 -> nearest 1/2; a1: min/max sums 1/2 and 2/4 -> 0.5
    np.testing.assert_allclose(metrics.nearest_raster_distance(a, refs), [0.5, 0.5])


def test_frechet_distance_of_gaussians():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(20000, 2))
    b = rng.normal(size=(20000, 2)) * 2.0 + np.array([3.0, 0.0])
    # |mu|^2 + tr(I + 4I - 2 * 2I) = 9 + 2
    assert metrics.frechet_distance(a, b) == pytest.approx(11.0, rel=0.03)
    assert metrics.frechet_distance(a, a) == pytest.approx(0.0, abs=1e-6)


def test_caption_score():
    probs = np.array([[0.7, 0.3], [0.2, 0.8], [0.5, 0.5]])
    assert metrics.caption_score(probs, np.array([0, 0, 1])) == pytest.approx((0.7 + 0.2 + 0.5) / 3)


# --- captions and splits --------------------------------------------------------------------------

def test_tabler_caption_from_the_header():
    text = '<!--\ncategory: Letters\ntags: [letters, "alphabet", latin, letters]\nunicode: "f567"\n-->\n<svg/>'
    assert data.tabler_caption("a-b-2", text) == "letters a b 2 alphabet latin"


def test_kanji_caption_lists_the_character_and_its_components():
    text = '<g kvg:element="字"><g kvg:element="宀"><g kvg:element="冖"/></g><g kvg:element="子"/></g>'
    assert data.kanji_caption(text) == "字 宀 冖 子"


def test_splits_keep_variants_together_and_are_balanced():
    assert data.group_of("tabler", "bell-off") == data.group_of("tabler", "bell-2") == "tabler/bell"
    assert data.split_of("kanjivg", "05b57") == data.split_of("kanjivg", "05b57-Kaisho")
    counts = {s: 0 for s in data.SPLITS}
    for i in range(4000):
        counts[data.split_of("tabler", f"icon{i}")] += 1
    assert 150 < counts["test"] < 250 and 150 < counts["validation"] < 250


def test_pad_batch_and_caption_encoding_refuse_to_cut():
    b = data.pad_batch([np.ones((3, 9), int), np.ones((5, 9), int)], multiple=4)
    assert b["rows"].shape == (2, 8, 9) and b["rows"][0, 3:].sum() == 0 and list(b["length"]) == [3, 5]
    with pytest.raises(ValueError, match="longest"):
        data.pad_batch([np.ones((9, 9), int)], multiple=4, length=8)
    vocab = data.caption_vocab(["a b", "b c"])
    assert vocab["b"] == 2 and vocab["<unk>"] == 1
    np.testing.assert_array_equal(data.encode_captions(["b zzz"], vocab, 3), [[2, 1, 0]])
    with pytest.raises(ValueError, match="3 keywords"):
        data.encode_captions(["a b c"], vocab, 2)
