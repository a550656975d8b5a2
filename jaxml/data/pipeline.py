"""Random-access data sources and deterministic batching for the training loop.

A *source* is anything with `len(source)` and `source[indices] -> dict[str, np.ndarray]` for an
int array of indices (an `ArraySource` over in-memory arrays, or `TFDSSource` over a TFDS
`array_record` data source). Training batches are a pure function of `(seed, step)`: epoch
`e = step // steps_per_epoch` is a fresh permutation drawn from `(seed, e)`, so a resumed run sees
exactly the batches an uninterrupted one would. Evaluation covers every example once: the last
batch is padded and carries a `mask` (1 for real rows, 0 for padding).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import numpy as np

Batch = dict[str, np.ndarray]


class Source(Protocol):
    def __len__(self) -> int: ...

    def __getitem__(self, indices: np.ndarray) -> Batch: ...


class ArraySource:
    """A source over in-memory arrays that share their leading dimension.

    Args:
      arrays: `{name: array[num_examples, ...]}`.
    """

    def __init__(self, arrays: Mapping[str, Any]):
        if not arrays:
            raise ValueError("ArraySource needs at least one array")
        self.arrays = {k: np.asarray(v) for k, v in arrays.items()}
        lengths = {k: v.shape[0] if v.ndim else None for k, v in self.arrays.items()}
        if None in lengths.values() or len(set(lengths.values())) != 1:
            raise ValueError(f"ArraySource: arrays must share a leading dimension, got {lengths}")
        self._len = next(iter(lengths.values()))

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, indices) -> Batch:
        indices = np.asarray(indices)
        return {k: v[indices] for k, v in self.arrays.items()}


def first(source: Source, n: int) -> Source:
    """The first `n` examples of `source` as an ArraySource (n <= 0 or n >= len: `source` itself).

    A config choice for tiny and quick runs (`config.data.train_examples`)."""
    if n <= 0 or n >= len(source):
        return source
    return ArraySource(source[np.arange(n)])


class TFDSSource:
    """Wraps a TFDS random-access data source (`builder.as_data_source(split)`) as a Source.

    With `in_memory=True` (the default for small sets) the whole split is read once into numpy
    arrays, which makes batching as fast as an ArraySource; `arrays` passes a split read before.
    """

    def __init__(self, data_source, in_memory: bool = True, chunk: int = 4096,
                 arrays: Mapping[str, np.ndarray] | None = None):
        self._ds = data_source
        self._len = len(data_source)
        self._arrays = None
        if arrays is not None:   # the split already read into memory (shared by the caller)
            lengths = {k: len(v) for k, v in arrays.items()}
            if set(lengths.values()) != {self._len}:
                raise ValueError(f"TFDSSource: arrays of lengths {lengths} for a source of {self._len} records")
            self._arrays = dict(arrays)
        elif in_memory:
            parts = [self._read(np.arange(i, min(i + chunk, self._len))) for i in range(0, self._len, chunk)]
            self._arrays = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def _read(self, indices: np.ndarray) -> Batch:
        keys = [int(i) for i in indices]
        records = self._ds.__getitems__(keys) if hasattr(self._ds, "__getitems__") else [self._ds[i] for i in keys]
        return {k: np.stack([np.asarray(r[k]) for r in records]) for k in records[0]}

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, indices) -> Batch:
        indices = np.asarray(indices)
        if self._arrays is not None:
            return {k: v[indices] for k, v in self._arrays.items()}
        return self._read(indices)

    def to_arrays(self) -> Batch:
        return self[np.arange(self._len)]


def steps_per_epoch(num_examples: int, batch_size: int) -> int:
    if batch_size <= 0:
        raise ValueError(f"batch_size={batch_size} must be positive")
    if num_examples < batch_size:
        raise ValueError(f"batch_size={batch_size} is larger than the {num_examples} training examples")
    return num_examples // batch_size


def train_indices(num_examples: int, batch_size: int, seed: int, step: int) -> np.ndarray:
    """The example indices of training batch `step` (a pure function of its arguments).

    Each epoch is a permutation from `np.random.default_rng([seed, epoch])`; the `num_examples %
    batch_size` examples left over at the end of one epoch's permutation are seen in other epochs.
    """
    spe = steps_per_epoch(num_examples, batch_size)
    epoch, within = divmod(step, spe)
    perm = _permutation(num_examples, seed, epoch)
    return perm[within * batch_size:(within + 1) * batch_size]


_PERM_CACHE: dict[tuple[int, int, int], np.ndarray] = {}


def _permutation(n: int, seed: int, epoch: int) -> np.ndarray:
    key = (n, seed, epoch)
    if key not in _PERM_CACHE:
        if len(_PERM_CACHE) > 4:
            _PERM_CACHE.clear()
        _PERM_CACHE[key] = np.random.default_rng([seed, epoch]).permutation(n)
    return _PERM_CACHE[key]


def train_batches(source: Source, batch_size: int, seed: int, start_step: int = 0,
                  rows: slice = slice(None)) -> Iterator[Batch]:
    """Yields training batches from `start_step` on; `rows` selects this process's part."""
    step = start_step
    while True:
        yield source[train_indices(len(source), batch_size, seed, step)[rows]]
        step += 1


def eval_batches(source: Source, batch_size: int, rows: slice = slice(None)) -> Iterator[Batch]:
    """Yields every example once in order; the last batch is padded, with `mask` 0 on padding."""
    n = len(source)
    if n == 0:
        raise ValueError("eval_batches: the evaluation source is empty")
    for start in range(0, n, batch_size):
        idx = np.arange(start, start + batch_size)
        mask = (idx < n).astype(np.float32)
        idx = np.where(idx < n, idx, 0)
        batch = source[idx[rows]]
        batch["mask"] = mask[rows]
        yield batch
