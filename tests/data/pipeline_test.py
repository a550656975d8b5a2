import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jaxml.data import pipeline


@settings(max_examples=40, deadline=None)
@given(n=st.integers(4, 300), batch=st.integers(1, 64), seed=st.integers(0, 5))
def test_each_epoch_visits_distinct_examples(n, batch, seed):
    if batch > n:
        with pytest.raises(ValueError, match="larger than"):
            pipeline.train_indices(n, batch, seed, 0)
        return
    spe = pipeline.steps_per_epoch(n, batch)
    for epoch in range(2):
        seen = np.concatenate([pipeline.train_indices(n, batch, seed, epoch * spe + s) for s in range(spe)])
        assert len(seen) == spe * batch
        assert len(np.unique(seen)) == len(seen)          # no repeats within an epoch
        assert seen.min() >= 0 and seen.max() < n


def test_batches_are_a_pure_function_of_seed_and_step():
    a = pipeline.train_indices(100, 10, 3, 17)
    pipeline._PERM_CACHE.clear()
    np.testing.assert_array_equal(a, pipeline.train_indices(100, 10, 3, 17))
    assert not np.array_equal(a, pipeline.train_indices(100, 10, 4, 17))
    it = pipeline.train_batches(pipeline.ArraySource({"i": np.arange(100)}), 10, 3, start_step=17)
    np.testing.assert_array_equal(next(it)["i"], a)


@pytest.mark.parametrize("n, batch", [(10, 4), (12, 4), (1, 8)])
def test_eval_batches_cover_every_example_once(n, batch):
    source = pipeline.ArraySource({"i": np.arange(n) + 100})
    seen = []
    for b in pipeline.eval_batches(source, batch):
        assert b["i"].shape == (batch,) and b["mask"].shape == (batch,)
        seen += list(b["i"][b["mask"] > 0])
    assert seen == list(range(100, 100 + n))


def test_eval_batches_rows_split_between_processes():
    source = pipeline.ArraySource({"i": np.arange(8)})
    parts = [next(pipeline.eval_batches(source, 8, slice(k * 4, (k + 1) * 4)))["i"] for k in range(2)]
    np.testing.assert_array_equal(np.concatenate(parts), np.arange(8))


def test_array_source_checks_lengths():
    with pytest.raises(ValueError, match="share a leading dimension"):
        pipeline.ArraySource({"a": np.zeros(3), "b": np.zeros(4)})
    with pytest.raises(ValueError, match="at least one array"):
        pipeline.ArraySource({})


def test_first_takes_a_prefix_or_returns_the_source_itself():
    from jaxml.data.pipeline import ArraySource, first

    source = ArraySource({"x": np.arange(10) * 2})
    np.testing.assert_array_equal(first(source, 3)[np.arange(3)]["x"], [0, 2, 4])
    assert len(first(source, 3)) == 3
    assert first(source, 0) is source and first(source, 10) is source and first(source, -1) is source
