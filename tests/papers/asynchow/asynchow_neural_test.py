"""The graph-vs-text critical-parent models: targets on a hand-worked plan, the oracle decode against the
exact solver, the jitted decode against the host one, the encodings, the graph attention's locality, and
the loop's plan score against the host decode (learning itself: the tiny `asynchow/graph_vs_text` run in
tests/core/experiments_test.py)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.asynchow import generator, neural
from jaxml.papers.asynchow.plan import Interval, Plan, critical_path, critical_steps

N = neural.NUM_NODES
END = neural.END_NODE

# f_hi in minutes: 1: 120, 2: 30, 3: 60 + 120 = 180, 4: 45 + 30 = 75, 5: 10 + max(180, 75) = 190.
HAND = Plan("How to test", ("a", "b", "c", "d", "e"),
            ("2 hours", "30 minutes", "1 hour", "45 minutes", "10 minutes"),
            ((1, 3), (2, 3), (2, 4), (3, 5), (4, 5)))


def _expected(pairs):
    out = np.full(N, -1)
    for v, u in pairs.items():
        out[v] = u
    return out


def test_pointer_targets_hand_worked():
    np.testing.assert_array_equal(neural.pointer_targets(HAND), _expected({1: 0, 2: 0, 3: 1, 4: 2, 5: 3, END: 5}))
    assert neural.decode_chain(HAND, neural.pointer_targets(HAND)) == [5, 3, 1]
    assert neural.decode_answer(HAND, neural.pointer_targets(HAND)) == Interval(190 * 60, 190 * 60)
    # Ties go to the smallest id: step 3 after two 1-hour steps; END of a parallel plan with two maxima.
    tie = Plan("t", ("a", "b", "c"), ("1 hour", "60 minutes", "5 minutes"), ((1, 3), (2, 3)))
    np.testing.assert_array_equal(neural.pointer_targets(tie), _expected({1: 0, 2: 0, 3: 1, END: 3}))
    par = Plan("p", ("a", "b", "c"), ("5 minutes", "2 days", "48 hours"))
    np.testing.assert_array_equal(neural.pointer_targets(par), _expected({1: 0, 2: 0, 3: 0, END: 2}))


def test_oracle_pointers_reproduce_the_critical_path():
    plans = generator.generate_plans(300, seed=0, text_source="synthetic")
    assert sum(not critical_path(p).exact for p in plans) > 5        # month/year intervals are exercised
    for plan in plans:
        targets = neural.pointer_targets(plan)
        assert neural.decode_answer(plan, targets) == critical_path(plan)
        assert neural.decode_chain(plan, targets)[::-1] == critical_steps(plan, "hi")
        assert neural.is_correct_chain(neural.decode_answer(plan, targets), critical_path(plan))


def test_correctness_rule():
    gold = Interval(30 * 86400, 31 * 86400)
    assert neural.is_correct_chain(Interval(30 * 86400, 31 * 86400), gold)
    assert neural.is_correct_chain(Interval(30.5 * 86400, 31 * 86400), gold)
    assert not neural.is_correct_chain(Interval(28 * 86400, 31 * 86400), gold)   # lo below the gold interval
    assert not neural.is_correct_chain(Interval(30 * 86400, 30 * 86400), gold)   # hi differs
    # The documented edge case: the hi-critical chain (1 month = [28, 31] days) has a smaller lo end than
    # the other path (30 days), so even the true pointers fail the lo condition.
    edge = Plan("e", ("a", "b"), ("1 month", "30 days"))
    assert critical_path(edge) == gold
    assert neural.decode_answer(edge, neural.pointer_targets(edge)) == Interval(28 * 86400, 31 * 86400)


def test_jitted_decode_matches_host_decode():
    plans = generator.generate_plans(200, seed=1, text_source="synthetic")
    arrays = neural.encode_plans(plans, "graph")
    rng = np.random.default_rng(0)
    pointers = np.where(arrays["targets"] >= 0, arrays["targets"], 0)
    flip = rng.random(pointers.shape) < 0.08                            # some wrong, some cycles
    pointers = np.where(flip, rng.integers(0, arrays["n_steps"][:, None] + 1, pointers.shape), pointers)
    lo, hi = jax.jit(neural.decode_minutes)(jnp.asarray(pointers), arrays["dur_lo"], arrays["dur_hi"],
                                            arrays["n_steps"])
    host = [neural.decode_answer(p, ptr) for p, ptr in zip(plans, pointers)]
    np.testing.assert_array_equal(np.asarray(lo) * 60, [a.lo for a in host])
    np.testing.assert_array_equal(np.asarray(hi) * 60, [a.hi for a in host])
    correct = [neural.is_correct_chain(a, critical_path(p)) for a, p in zip(host, plans)]
    assert 0.2 < np.mean(correct) < 0.95
    jit_correct = (np.asarray(hi) == arrays["gold_hi"]) & (np.asarray(lo) >= arrays["gold_lo"]) & (
        np.asarray(lo) <= arrays["gold_hi"])
    np.testing.assert_array_equal(jit_correct, correct)


def test_encodings():
    text = neural.encode_text(HAND, template_idx=1, max_len=80)
    chex.assert_shape(text["tokens"], (80,))
    chex.assert_shape(text["node_pos"], (N,))
    assert neural.render_tokens(text["tokens"]) == (
        "START step 1 ( 2 hour ) step 2 ( 30 minute ) step 3 ( 1 hour ) step 4 ( 45 minute ) step 5 ( 10 minute ) "
        ". step 1 must precede step 3 . step 2 must precede step 3 . step 2 must precede step 4 . "
        "step 3 must precede step 5 . step 4 must precede step 5 . END")
    words = [neural.VOCAB[t] for t in text["tokens"]]
    assert [words[i] for i in text["node_pos"][1:6]] == [f"id:{i}" for i in range(1, 6)]
    assert words[text["node_pos"][0]] == "START" and words[text["node_pos"][END]] == "END"
    first = neural.render_tokens(neural.encode_text(HAND, template_idx=8)["tokens"])
    assert "sequence the tasks : firstly step 1 , then step 3 ." in first
    with pytest.raises(ValueError, match="more than max_len"):
        neural.encode_text(HAND, max_len=20)

    graph = neural.encode_graph(HAND)
    chex.assert_shape(graph["node_tokens"], (N, 3))
    rel = graph["relations"]
    chex.assert_shape(rel, (N, N))
    np.testing.assert_array_equal(rel == neural.REL_PRED, (rel == neural.REL_SUCC).T)
    preds = {v: sorted(np.flatnonzero(rel[v] == neural.REL_PRED).tolist()) for v in (1, 3, 5, END)}
    assert preds == {1: [0], 3: [1, 2], 5: [3, 4], END: [5]}
    assert (rel[6:END] == neural.REL_PAD).all() and (rel[:, 6:END] == neural.REL_PAD).all()
    # A step's graph input holds the tokens its text listing shows.
    assert [neural.VOCAB[t] for t in graph["node_tokens"][2]] == ["id:2", "count:30", "minute"]


def test_models_mask_candidates_and_graph_attention_is_local():
    plans = [Plan("s", tuple("abcdefg"), ("1 hour",) * 7, tuple((i, i + 1) for i in range(1, 7))), HAND]
    g = neural.encode_plans(plans, "graph")
    model = neural.PlanGraphModel(width=16, depth=2, heads=2, attention="mask")
    inputs = [jnp.asarray(g[k]) for k in ("node_tokens", "node_type", "relations", "candidates")]
    params = jax.jit(model.init)(jax.random.PRNGKey(0), *inputs)
    apply = jax.jit(model.apply)
    logits = apply(params, *inputs)
    chex.assert_shape(logits, (2, N, N))
    assert (logits[1, :, 6:] <= -1e29).all() and (logits[1, :, :6] > -1e29).all()
    # Depth 2 with attention restricted to neighbours: step 7 and step 6 are more than 2 hops from step 1,
    # so the logit of "6 is the parent of 7" ignores step 1's duration; step 3's logits do not.
    changed = g["node_tokens"].copy()
    changed[0, 1, 1:] = (neural.TOKEN_ID["count:3"], neural.TOKEN_ID["week"])
    logits2 = apply(params, jnp.asarray(changed), *inputs[1:])
    assert float(logits2[0, 7, 6]) == float(logits[0, 7, 6])
    assert float(logits2[0, 3, 2]) != float(logits[0, 3, 2])

    t = neural.encode_plans(plans, "text", max_text_len=128)
    text_model = neural.PlanTextModel(width=16, depth=1, heads=2, max_len=128)
    text_inputs = [jnp.asarray(t[k]) for k in ("tokens", "node_pos", "candidates")]
    text_params = jax.jit(text_model.init)(jax.random.PRNGKey(0), *text_inputs)
    chex.assert_shape(jax.eval_shape(text_model.apply, text_params, *text_inputs), (2, N, N))
    assert text_params["params"]["token_embed"]["embedding"].shape == params["params"]["token_embed"]["embedding"].shape


def test_accuracy_by():
    table = neural.accuracy_by(["b", "a", "b", "b"], [1, 0, 0, 1], order=("b", "c", "a"))
    assert list(table) == ["b", "a"]
    assert table["b"] == (pytest.approx(2 / 3), 3) and table["a"] == (0.0, 1)
    with pytest.raises(ValueError, match="2 keys but 3"):
        neural.accuracy_by(["a", "b"], [1, 0, 1])


@pytest.mark.parametrize("kind", neural.KINDS)
def test_the_loops_plan_score_equals_the_host_decode(kind):
    """`PlanPointerTask.evaluate` (jitted, in minutes) scores plans as `evaluate_models` (host decode, exact
    intervals) does, here at random initial parameters (learning is checked by the tiny experiment's run)."""
    config = neural.neural_config("tiny", kind, **{"data.train_plans": 64, "data.eval_plans": 32})
    task = neural.make_task(config)
    held_out = generator.split("validation", config.data.eval_plans)
    held_out = [p for p, f in zip(held_out, neural.fits_text(held_out, config.model.max_text_len, 1)) if f]
    encoded = neural.encode_plans(held_out, kind, max_text_len=config.model.max_text_len, template_seed=1)
    params = task.init(jax.random.PRNGKey(3), encoded)
    metrics = jax.jit(task.evaluate)(params, {k: jnp.asarray(v) for k, v in encoded.items()})
    scored = neural.evaluate_models({kind: (task, params)}, held_out, template_seed=1)[kind]
    np.testing.assert_array_equal(np.asarray(metrics["plan_correct"]) > 0.5, scored["correct"])
    np.testing.assert_allclose(np.asarray(metrics["pointer_accuracy"]), scored["pointer_accuracy"], atol=1e-6)
