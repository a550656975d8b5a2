"""AVTrack's model and losses: gating semantics, real skipping, one compilation, analytic loss values."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.avtrack import losses
from jaxml.papers.avtrack import model as M
from jaxml.papers.avtrack.task import AVTrackTask, example_batch

SMALL = dict(template_size=16, search_size=32, patch_size=8, hidden=32, layers=5, heads=2, mlp_hidden=64,
             head_channels=16)


@pytest.fixture(scope="module")
def setup():
    m = M.AVTrack(**SMALL)
    rng = np.random.default_rng(0)
    t = jnp.asarray(rng.random((3, 16, 16, 3), np.float32))
    s = jnp.asarray(rng.random((3, 32, 32, 3), np.float32))
    params = jax.jit(m.init, static_argnums=3)(jax.random.key(0), t, s, "none")["params"]
    return m, params, t, s


_forward = jax.jit(M.forward, static_argnums=(0, 4))
# One inference program per (model, batch size): every force pattern (-1 = the gates decide) shares it.
_infer = jax.jit(lambda m, p, t, s, force: M.infer(m, p, t, s, force=force), static_argnums=0)
GATES = -jnp.ones(5, jnp.int32)


def _close(a, b, tol=1e-5):
    for k in ("score", "size", "offset"):
        np.testing.assert_allclose(np.asarray(a[k]), np.asarray(b[k]), atol=tol, rtol=tol)


def test_all_gates_on_equals_ungated(setup):
    m, params, t, s = setup
    ungated = M.AVTrack(**SMALL, gated=False)
    p_ungated = {k: v for k, v in params.items() if not k.startswith("gates")}
    ref = _forward(ungated, p_ungated, t, s, "none")
    _close(_forward(m, params, t, s, "none"), ref)
    forced = _infer(m, params, t, s, jnp.ones(m.layers, jnp.int32))
    _close(forced, ref)
    assert float(forced["active"].sum()) == m.layers
    # With every block skipped the stream is just the embeddings: a different output.
    off = _infer(m, params, t, s, jnp.zeros(m.layers, jnp.int32))
    assert np.abs(np.asarray(off["score"]) - np.asarray(ref["score"])).max() > 1e-4


def test_inference_at_batch_one_matches_training_gates(setup):
    m, params, t, s = setup
    for n in range(t.shape[0]):
        train = _forward(m, params, t[n:n + 1], s[n:n + 1], "hard")
        inf = _infer(m, params, t[n:n + 1], s[n:n + 1], GATES)
        _close(train, inf)
        np.testing.assert_array_equal(np.asarray(train["active"][0]), np.asarray(inf["active"]))
        np.testing.assert_array_equal(np.asarray(inf["active"][:2]), [1.0, 1.0])   # blocks 0-1 always run


def test_whole_batch_skipping_runs_a_block_if_any_item_wants_it(setup):
    m, params, t, s = setup
    # Make the gate of block 2 open for item 0 only: bias it so that p > 0.5 exactly where channel 0 sums high.
    p = jax.tree_util.tree_map(lambda a: a, params)
    bound = m.bind({"params": params})
    x = bound.block(1, bound.block(0, bound.embed(t, s)))                # the input of block 2
    logits = np.asarray(x[:, :, 0] @ params["gates_0"]["kernel"][:, 0])
    bias = -(np.sort(logits)[-1] + np.sort(logits)[-2]) / 2          # only the largest logit passes 0
    p["gates_0"] = {"kernel": params["gates_0"]["kernel"], "bias": jnp.asarray([bias], jnp.float32)}
    for name in ("gates_1", "gates_2"):
        p[name] = {"kernel": params[name]["kernel"] * 0, "bias": jnp.asarray([-5.0])}   # closed
    train = _forward(m, p, t, s, "hard")
    per_item = np.asarray(train["active"][:, 2])
    assert per_item.sum() == 1                                       # per-sample in training
    inf = _infer(m, p, t, s, GATES)
    assert float(inf["active"][2]) == 1.0                            # whole batch at inference
    assert float(inf["active"][3]) == 0.0 and float(inf["active"][4]) == 0.0


def test_skipped_blocks_are_not_executed(setup):
    m, params, t, s = setup
    ran = []
    f = jax.jit(lambda p, t, s, force: M.infer(m, p, t, s, force=force, counter=lambda i: ran.append(int(i))))
    pattern = np.array([1, 1, 0, 1, 0], np.int32)
    jax.block_until_ready(f(params, t[:1], s[:1], jnp.asarray(pattern)))
    jax.effects_barrier()
    assert sorted(ran) == [0, 1, 3]
    ran.clear()
    jax.block_until_ready(f(params, t[:1], s[:1], jnp.asarray([1, 1, 1, 1, 1], jnp.int32)))
    jax.effects_barrier()
    assert sorted(ran) == [0, 1, 2, 3, 4]


def test_one_compilation_serves_every_gate_pattern(setup):
    m, params, t, s = setup

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(p, t, s, force):
        return M.infer(m, p, t, s, force=force)

    outs = set()
    for pattern in ([1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 0, 1, 0], [-1, -1, -1, -1, -1]):
        out = run(params, t[:1], s[:1], jnp.asarray(pattern, jnp.int32))
        outs.add(round(float(out["score"].sum()), 5))
    assert len(outs) >= 3                    # the patterns really change the computation


def test_hard_gates_learn_only_from_sparsity_and_ste_from_the_task(setup):
    _, _, t, s = setup
    m = M.AVTrack(**(SMALL | dict(layers=3, hidden=16, heads=1, mlp_hidden=16, head_channels=8)))
    batch = example_batch(m, 3) | {"template": t, "search": s}
    for gating, spar, expect in (("hard", 0.0, False), ("ste", 0.0, True), ("hard", 48.0, True)):
        task = AVTrackTask(m, None, {}, gating=gating, weights=tuple((losses.WEIGHTS | {"spar": spar}).items()))
        p = jax.jit(task.init)(jax.random.key(1), batch)

        def loss_of_gate(gate, p=p, task=task):
            return task.loss({"tracker": p["tracker"] | {"gates_0": gate}}, batch, None)[0]

        # Only the gate's gradient is asked for, so XLA keeps just the part of the backward pass it needs.
        g = jax.jit(jax.grad(loss_of_gate))(p["tracker"]["gates_0"])
        gate_norm = float(jnp.abs(g["kernel"]).sum())
        # 'hard' (as released): the tracking loss gives the gate no gradient, only the sparsity loss does.
        assert (gate_norm > 0) == expect, (gating, spar, gate_norm)


def test_decode_boxes_reads_the_argmax_cell():
    f = 4
    score = np.full((1, f, f), 0.1, np.float32)
    score[0, 2, 1] = 0.9
    size = np.zeros((1, f, f, 2), np.float32)
    size[0, 2, 1] = [0.25, 0.5]
    offset = np.zeros((1, f, f, 2), np.float32)
    offset[0, 2, 1] = [0.5, 0.25]
    b = M.decode_boxes(jnp.asarray(score), jnp.asarray(size), jnp.asarray(offset))
    np.testing.assert_allclose(np.asarray(b.box[0]), [(1 + 0.5) / 4, (2 + 0.25) / 4, 0.25, 0.5])
    window = np.ones((f, f), np.float32)
    window[2, 1] = 0.0
    assert int(M.decode_boxes(jnp.asarray(score), jnp.asarray(size), jnp.asarray(offset), jnp.asarray(window)).index[0]) != 9


def test_giou_analytic():
    a = jnp.asarray([[0.0, 0, 1, 1], [0.0, 0, 2, 2], [0.0, 0, 1, 1]])
    b = jnp.asarray([[0.0, 0, 1, 1], [1.0, 1, 3, 3], [2.0, 0, 3, 1]])
    g, iou = losses.giou(a, b)
    np.testing.assert_allclose(np.asarray(iou), [1.0, 1 / 7, 0.0], atol=1e-6)
    # [0,0,2,2] vs [1,1,3,3]: union 7, enclosing 9 -> 1/7 - 2/9; disjoint unit boxes 2 apart: 0 - 1/3.
    np.testing.assert_allclose(np.asarray(g), [1.0, 1 / 7 - 2 / 9, -1 / 3], atol=1e-6)


def test_gaussian_heatmap_and_radius():
    box = jnp.asarray([[0.25, 0.5, 0.25, 0.25]])      # centre (0.375, 0.625) of the crop
    f = 16
    heat = np.asarray(losses.gaussian_heatmap(box, f))
    r, c = np.unravel_index(heat[0].argmax(), heat[0].shape)
    assert (r, c) == (10, 6) and heat[0, r, c] == 1.0
    assert (heat[0] == 1.0).sum() == 1
    # CenterNet's (and OSTrack's) radius for h=8, w=6, min_overlap=0.7, by hand: case 3 is the smallest,
    # a3 = 2.8, b3 = -19.6, c3 = -14.4: (b3 + sqrt(b3^2 - 4 a3 c3)) / 2 = (-19.6 + sqrt(545.44)) / 2.
    rad = float(losses.gaussian_radius(jnp.asarray(8.0), jnp.asarray(6.0), 0.7))
    np.testing.assert_allclose(rad, (-19.6 + np.sqrt(545.44)) / 2, rtol=1e-5)


def test_focal_loss_analytic():
    target = np.zeros((1, 2, 2), np.float32)
    target[0, 0, 0] = 1.0
    target[0, 0, 1] = 0.5
    pred = np.full((1, 2, 2), 0.25, np.float32)
    pred[0, 0, 0] = 0.8
    # pos: log(0.8) * 0.2^2; negs: log(0.75) * 0.25^2 * (1 - t)^4 with t = 0.5, 0, 0.
    expect = -(np.log(0.8) * 0.04 + np.log(0.75) * 0.0625 * (0.5 ** 4 + 1 + 1))
    np.testing.assert_allclose(float(losses.focal_loss(jnp.asarray(pred), jnp.asarray(target))), expect, rtol=1e-6)


def test_activeness_loss_is_per_sample_as_released():
    # Two samples whose mean activations are 0.93 and 0.47 (issue 55): the batch mean is 0.70.
    probs = jnp.asarray([[0.9, 0.96], [0.5, 0.44]])
    # released (avtrack.py:83-86): mean_b |m_b - 0.7| = (0.23 + 0.23) / 2
    np.testing.assert_allclose(float(losses.sparsity_loss(probs, 0.7)), 0.23, atol=1e-6)
    np.testing.assert_allclose(float(losses.batch_sparsity_loss(probs, 0.7)), 0.0, atol=1e-6)   # ours before
    # d/dp[b, i] = sign(m_b - 0.7) / (B * n_gated): sample 0 pushed down, sample 1 up
    np.testing.assert_allclose(np.asarray(jax.grad(lambda p: losses.sparsity_loss(p, 0.7))(probs)),
                               [[0.25, 0.25], [-0.25, -0.25]], atol=1e-6)
    assert float(losses.sparsity_loss(jnp.zeros((2, 0)), 0.7)) == 0.0
    with pytest.raises(ValueError, match="sparsity"):
        AVTrackTask(M.AVTrack(**SMALL), None, {}, sparsity="mean")


def test_jsd_values():
    z = jnp.zeros(4)
    np.testing.assert_allclose(float(losses.jsd_mi_loss(z, z)), 2 * np.log(2), rtol=1e-6)
    # A critic that separates joint (T large) from marginal (T small) drives the loss toward 0.
    assert float(losses.jsd_mi_loss(jnp.full(4, 20.0), jnp.full(4, -20.0))) < 1e-6


def test_mi_inputs_paste_the_overlap_of_the_two_boxes():
    gt, f, d = 4, 8, 1
    tfeat = jnp.arange(gt * gt, dtype=jnp.float32).reshape(1, gt, gt, d) + 100
    sfeat = jnp.arange(f * f, dtype=jnp.float32).reshape(1, f, f, d)
    # template cells x 1, y 1, w 2, h 2; search cells x 4, y 2, w 2, h 2: a 2 x 2 overlap
    x, y = losses.mi_inputs(tfeat, sfeat, jnp.asarray([[0.25, 0.25, 0.5, 0.5]]), jnp.asarray([[0.5, 0.25, 0.25, 0.25]]))
    x, y = np.asarray(x[0, :, :, 0]), np.asarray(y[0, :, :, 0])
    np.testing.assert_array_equal(x[1:3, 1:3], [[105, 106], [109, 110]])
    assert x.sum() == 105 + 106 + 109 + 110
    np.testing.assert_array_equal(y[1:3, 1:3], [[2 * 8 + 4, 2 * 8 + 5], [3 * 8 + 4, 3 * 8 + 5]])
    assert y.sum() == y[1:3, 1:3].sum()
    # template x round(0.3 * 4) = 1, y 0, w 3, h 3; search x round(0.625 * 8) = 5, y 1,
    # w 1, h round(0.3125 * 8) = round(2.5) = 2: the overlap is 2 rows x 1 column, and x is masked to it too
    x, y = losses.mi_inputs(tfeat, sfeat, jnp.asarray([[0.3, 0.0, 0.75, 0.75]]),
                            jnp.asarray([[0.625, 0.125, 0.125, 0.3125]]))
    x, y = np.asarray(x[0, :, :, 0]), np.asarray(y[0, :, :, 0])
    want_x = np.zeros((gt, gt))
    want_x[0:2, 1] = [101, 105]
    np.testing.assert_array_equal(x, want_x)
    want_y = np.zeros((gt, gt))
    want_y[0:2, 1] = [1 * 8 + 5, 2 * 8 + 5]
    np.testing.assert_array_equal(y, want_y)


def test_imagenet_normalisation_of_the_inputs():
    m = M.AVTrack(**SMALL)
    pix = jnp.asarray([[0.485, 0.456, 0.406], [0.0, 1.0, 0.5]])
    np.testing.assert_allclose(np.asarray(m.normalize(pix)),
                               [[0, 0, 0], [-0.485 / 0.229, 0.544 / 0.224, 0.094 / 0.225]], atol=1e-5)
    np.testing.assert_allclose(np.asarray(M.AVTrack(**SMALL, pixel_norm="symmetric").normalize(pix))[1], [-1, 1, 0])


def test_box_losses_use_the_ground_truth_clamped_to_the_crop(setup):
    m, params, t, s = setup
    task = AVTrackTask(m, None, {})
    # a target half outside the search crop: (x, y, w, h) = (-0.2, 0.7, 0.4, 0.5) -> clamped x1y1x2y2 (0, 0.7, 0.2, 1)
    box = jnp.tile(jnp.asarray([[-0.2, 0.7, 0.4, 0.5]]), (3, 1))
    batch = example_batch(m, 3) | {"template": t, "search": s, "search_box": box}
    _, metrics = jax.jit(task.loss)({"tracker": params}, batch, None)
    out = _forward(m, params, t, s, "hard")
    pred = np.asarray(M.decode_boxes(out["score"], out["size"], out["offset"]).box, np.float64)
    pred = np.stack([pred[:, 0] - pred[:, 2] / 2, pred[:, 1] - pred[:, 3] / 2,
                     pred[:, 0] + pred[:, 2] / 2, pred[:, 1] + pred[:, 3] / 2], 1)
    gt = np.array([0.0, 0.7, 0.2, 1.0])
    np.testing.assert_allclose(float(metrics["l1"]), np.abs(pred - gt).mean(), rtol=1e-5)


def test_bad_inputs_are_named():
    m = M.AVTrack(**SMALL)
    with pytest.raises(ValueError, match="search must be"):
        m.init(jax.random.key(0), jnp.zeros((1, 16, 16, 3)), jnp.zeros((1, 30, 30, 3)))
    with pytest.raises(ValueError, match="gating"):
        AVTrackTask(m, None, {}, gating="soft")
    with pytest.raises(ValueError, match="multiple of patch_size"):
        M.AVTrack(**(SMALL | {"search_size": 30})).init(jax.random.key(0), jnp.zeros((1, 16, 16, 3)),
                                                          jnp.zeros((1, 30, 30, 3)))


def test_detached_gate_input_keeps_the_sparsity_gradient_out_of_the_trunk(setup):
    _, _, t, s = setup
    only_spar = tuple({k: 0.0 for k in losses.WEIGHTS}.items()) + (("spar", 1.0),)
    for grad_in, expect in ((True, True), (False, False)):
        m = M.AVTrack(**(SMALL | dict(layers=3, hidden=16, heads=1, mlp_hidden=16, head_channels=8)),
                      gate_input_grad=grad_in)
        batch = example_batch(m, 3) | {"template": t, "search": s}
        task = AVTrackTask(m, None, {}, weights=only_spar)
        p = jax.jit(task.init)(jax.random.key(1), batch)

        def loss_of(embed, gate, p=p, task=task):
            return task.loss({"tracker": p["tracker"] | {"patch_embed": embed, "gates_0": gate}}, batch, None)[0]

        g_embed, g_gate = jax.jit(jax.grad(loss_of, argnums=(0, 1)))(p["tracker"]["patch_embed"], p["tracker"]["gates_0"])
        assert float(jnp.abs(g_gate["kernel"]).sum()) > 0            # the gate itself always learns from it
        assert (float(jnp.abs(g_embed["kernel"]).sum()) > 0) == expect, grad_in
