"""The video LLM's input embeddings, soft-target loss, propagation gradients and greedy decoding,
against independent numpy computations and exact identities; the token layout round trip."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.momentor import engine, model, text, tpm

M = 6
F = 5


@pytest.fixture(scope="module")
def videos():
    return engine.make_videos("train", 3, seed=0, events_range=(2, 3))


@pytest.fixture(scope="module")
def vocab():
    return text.Vocab.build()


def _spec(vocab, encoding="propagate"):
    return model.ModelSpec(len(vocab), M, F, encoding, hidden=16, layers=1, heads=2, mlp_hidden=32)


def _batch(videos, vocab, encoding, tasks=("grounding", "captioning", "dense")):
    ex = engine.make_examples(videos, tasks, seed=0)
    rows = text.encode(ex, videos, vocab, encoding, M)
    video = rows.pop("video")
    feats = np.random.default_rng(0).normal(size=(len(videos), M, F)).astype(np.float32)
    return ex, {k: jnp.asarray(v) for k, v in rows.items()}, feats[video]


@pytest.mark.parametrize("encoding", tpm.ENCODINGS)
def test_encode_then_decode_gives_the_answer_back(videos, vocab, encoding):
    ex, rows, _ = _batch(videos, vocab, encoding)
    for r, e in enumerate(ex):
        kind = np.asarray(rows["target_kind"][r])
        idx = np.flatnonzero(kind > 0)
        ids = [int(rows["target_id"][r, i]) if kind[i] == 1 else text.TIME for i in idx]
        times = [float(rows["target_pos"][r, i]) for i in idx]
        got = text.decode(ids, times, vocab, encoding, videos[e.video].duration, M)
        want = list(e.answer)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            if isinstance(w, engine.Time):
                tol = 0.051 if encoding == "text" else 1e-4 * videos[e.video].duration
                assert isinstance(g, engine.Time) and abs(g.seconds - w.seconds) <= tol
            else:
                assert g == w


def test_layout_and_errors(videos, vocab):
    ex, rows, _ = _batch(videos, vocab, "interpolate", tasks=("grounding",))
    t = np.asarray(rows["tokens"][0])
    assert t[0] == text.BOS and (t[1:1 + M] == text.FRAME).all()
    np.testing.assert_array_equal(np.asarray(rows["frame_index"][0, 1:1 + M]), np.arange(M))
    assert (np.asarray(rows["target_kind"][0]) == 2).sum() == 2          # the two timestamps of the span
    with pytest.raises(ValueError, match="length=10"):
        text.encode(ex, videos, vocab, "interpolate", M, length=10)
    with pytest.raises(ValueError, match="not in the Momentor vocabulary"):
        vocab.ids(["banana"])


def test_parsers():
    T = engine.Time
    assert text.parse_span([T(5.0), "to", T(2.0)]) == (2.0, 5.0)
    assert np.isnan(text.parse_span(["to", T(2.0)])).all()
    ev = text.parse_events([T(0.0), "to", T(4.0), ":", "red", "bag", ";", T(4.0), ":", "x", ";",
                            T(4.0), "to", T(9.0), ":", "blue", "coat"])
    assert ev == [(0.0, 4.0, "red bag"), (4.0, 9.0, "blue coat")]             # the part with one time is dropped


def test_input_delta_matches_a_numpy_reference(videos, vocab):
    spec = _spec(vocab, "interpolate")
    params = model.init_params(jax.random.PRNGKey(0), spec)
    _, batch, feats = _batch(videos, vocab, "interpolate")
    delta = np.asarray(jax.jit(model.input_delta, static_argnums=1)(params, spec, batch, jnp.asarray(feats)))
    p = jax.tree_util.tree_map(np.asarray, params)
    e_in, e_out = p["tpm"]["E_in"], p["tpm"]["E_out"]
    for r in range(delta.shape[0]):
        frames = feats[r] @ p["proj"]["kernel"] + p["proj"]["bias"] + (e_in + e_out) / 2
        for i, tok in enumerate(np.asarray(batch["tokens"][r])):
            if tok == text.FRAME:
                want = frames[int(batch["frame_index"][r, i])]
            elif tok == text.TIME:
                x = float(batch["time_pos"][r, i])
                lo, hi = int(np.floor(x)), int(np.ceil(x))
                want = (1 - (x - lo)) * e_in[lo] + (x - lo) * e_in[hi]
            else:
                want = np.zeros(spec.hidden)
            np.testing.assert_allclose(delta[r, i], want, rtol=1e-4, atol=1e-5)


def test_soft_target_cross_entropy_matches_a_manual_computation(videos, vocab):
    spec = _spec(vocab, "interpolate")
    params = model.init_params(jax.random.PRNGKey(1), spec)
    _, batch, feats = _batch(videos, vocab, "interpolate", tasks=("grounding",))
    batch = {**batch, "features": jnp.asarray(feats)}
    ce, lg = jax.jit(model.token_losses, static_argnums=1)(params, spec, batch)
    logp = np.asarray(jax.nn.log_softmax(lg, -1), np.float64)
    kind = np.asarray(batch["target_kind"])
    for r, i in zip(*np.nonzero(kind == 2)):
        x = float(batch["target_pos"][r, i])
        lo, hi = int(np.floor(x)), int(np.ceil(x))
        want = -((1 - (x - lo)) * logp[r, i, spec.vocab_size + lo] + (x - lo) * logp[r, i, spec.vocab_size + hi])
        np.testing.assert_allclose(float(ce[r, i]), want, rtol=1e-4)
    for r, i in zip(*np.nonzero(kind == 1)):
        np.testing.assert_allclose(float(ce[r, i]), -logp[r, i, int(batch["target_id"][r, i])], rtol=1e-4)
    assert float(ce[kind == 0].sum()) == 0.0


def test_propagation_changes_gradients_not_values(videos, vocab):
    """Same params: 'propagate' gives the same logits bit for bit, and its table gradients are
    (I + R) times those of 'interpolate'."""
    plain, prop = _spec(vocab, "interpolate"), _spec(vocab, "propagate")
    params = model.init_params(jax.random.PRNGKey(2), plain)
    _, batch, feats = _batch(videos, vocab, "interpolate")
    batch = {**batch, "features": jnp.asarray(feats)}
    a = jax.jit(model.logits, static_argnums=1)(params, plain, batch, batch["features"])
    b = jax.jit(model.logits, static_argnums=1)(params, prop, batch, batch["features"])
    assert np.array_equal(np.asarray(a), np.asarray(b))
    ga = jax.jit(jax.grad(lambda p: model.sequence_loss(p, plain, batch)[0]))(params)
    gb = jax.jit(jax.grad(lambda p: model.sequence_loss(p, prop, batch)[0]))(params)
    r = np.eye(M) + np.array([[2.0 ** -abs(i - j) for j in range(M)] for i in range(M)])
    for name in ("E_in", "E_out"):
        np.testing.assert_allclose(gb["tpm"][name], r @ np.asarray(ga["tpm"][name], np.float64), rtol=1e-4, atol=1e-7)
    for x, y in zip(jax.tree_util.tree_leaves((gb["lm"], gb["proj"])), jax.tree_util.tree_leaves((ga["lm"], ga["proj"]))):
        np.testing.assert_array_equal(x, y)          # the rest of the model sees identical values


_logits = jax.jit(model.logits, static_argnums=1)


@pytest.mark.parametrize("encoding", ["propagate", "discrete", "text"])
def test_greedy_generation_agrees_with_a_teacher_forced_forward(videos, vocab, encoding):
    """Left-padded batched decoding: every generated token is the argmax of an independent,
    unpadded forward pass over the prompt plus what was generated before it."""
    spec = _spec(vocab, encoding)
    params = model.init_params(jax.random.PRNGKey(3), spec)
    # make temporal tokens likely, so generation exercises the feedback of decoded positions
    params["tpm"]["E_out"] = params["tpm"]["E_out"] * 30.0
    ex = engine.make_examples(videos, ("grounding", "dense"), seed=0)[:3]
    feats = np.random.default_rng(4).normal(size=(len(videos), M, F)).astype(np.float32)[[e.video for e in ex]]
    prompt = text.prompts(ex, videos, vocab, encoding, M)
    steps = 5
    ids, pos = model.generate(params, spec, prompt, feats, steps, batch_size=2)
    if encoding != "text":
        assert (ids == text.TIME).any()
    for r in range(len(ex)):
        valid = prompt["key_valid"][r]
        toks = list(prompt["tokens"][r][valid])
        fidx = list(prompt["frame_index"][r][valid])
        tpos = list(prompt["time_pos"][r][valid])
        for s in range(steps):
            batch = {"tokens": jnp.asarray([toks]), "frame_index": jnp.asarray([fidx]),
                     "time_pos": jnp.asarray([tpos], jnp.float32)}
            lg = np.asarray(_logits(params, spec, batch, jnp.asarray(feats[r:r + 1])))[0, -1]
            if encoding == "text":
                want = int(np.argmax(lg[:spec.vocab_size]))
            else:
                want = int(np.argmax(lg))
            if want >= spec.vocab_size:
                q = np.exp(lg[spec.vocab_size:] - lg[spec.vocab_size:].max())
                q /= q.sum()
                i = int(np.argmax(q))
                j = i + 1 if (i + 1 < M and (i == 0 or q[i + 1] >= q[i - 1])) else i - 1
                want_pos = (q[i] * i + q[j] * j) / (q[i] + q[j]) if encoding != "discrete" else float(i)
                assert ids[r, s] == text.TIME
                np.testing.assert_allclose(pos[r, s], want_pos, rtol=1e-4, atol=1e-4)
                toks.append(text.TIME)
                tpos.append(float(pos[r, s]))
            else:
                assert ids[r, s] == want
                toks.append(want)
                tpos.append(0.0)
            fidx.append(-1)
            if toks[-1] == text.EOS:
                assert (ids[r, s + 1:] == text.PAD).all()
                break


def test_spec_rejects_an_unknown_encoding(vocab):
    with pytest.raises(ValueError, match="accepted"):
        dataclasses.replace(_spec(vocab), encoding="digits")


def test_loss_weighting_per_video_as_the_official_code_or_per_token(videos, vocab):
    """'video' (momentor.py:254-257): each example's mean over its answer tokens, then the mean over
    examples; 'token': one mean over every answer token of the batch. Both against numpy sums of the
    per-position losses, on a batch whose examples have different answer lengths (so they differ)."""
    spec = _spec(vocab, "propagate")
    params = model.init_params(jax.random.PRNGKey(2), spec)
    _, batch, feats = _batch(videos, vocab, "propagate", tasks=("grounding", "dense"))
    batch = {**batch, "features": jnp.asarray(feats)}
    ce = np.asarray(jax.jit(model.token_losses, static_argnums=1)(params, spec, batch)[0], np.float64)
    kind = np.asarray(batch["target_kind"])
    lengths = (kind > 0).sum(1)
    assert len(set(lengths.tolist())) > 1
    per_video = np.mean([ce[r][kind[r] > 0].mean() for r in range(len(ce))])
    per_token = ce[kind > 0].mean()
    assert abs(per_video - per_token) > 1e-4 * per_token     # 10x the tolerance below
    video, _ = model.sequence_loss(params, spec, batch, "video")
    token, _ = model.sequence_loss(params, spec, batch, "token")
    np.testing.assert_allclose([float(video), float(token)], [per_video, per_token], rtol=1e-5)
    # an example with no answer token (a padding row) counts in neither
    pad = {k: (jnp.concatenate([v, jnp.zeros_like(v[:1])]) if k != "features" else jnp.concatenate([v, v[:1]]))
           for k, v in batch.items()}
    np.testing.assert_allclose(float(model.sequence_loss(params, spec, pad, "video")[0]), per_video, rtol=1e-5)
    with pytest.raises(ValueError, match="loss weighting 'batch' is not known; accepted: video, token"):
        model.sequence_loss(params, spec, batch, "batch")
    with pytest.raises(ValueError, match="accepted: video, token"):
        model.MomentorTask(spec, None, {}, loss_weighting="sum")


def test_soft_target_at_an_integer_position_is_one_hot():
    """At an integer position (t = 0, t = T, or a timestamp on a token) floor = ceil: our soft target is the
    one-hot the paper intends. The release's writes (momentor.py:248-250: floor <- 1 - r, then ceil <- r)
    would leave that entry 0, an all-zero target row (README, differences from the official code)."""
    got = np.asarray(tpm.soft_targets(jnp.asarray([0.0, 3.0, 5.0, 2.25]), 6))
    want = np.zeros((4, 6))
    want[0, 0] = want[1, 3] = want[2, 5] = 1.0
    want[3, 2], want[3, 3] = 0.75, 0.25
    np.testing.assert_array_equal(got, want)
