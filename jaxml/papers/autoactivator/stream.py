"""Class-incremental streams: a dataset split into task sessions by class.

    stream = fashion_mnist_stream(train_per_class=600, test_per_class=200)   # 5 sessions x 2 classes
    stream[0].classes, stream[0].x_train.shape        # (0, 1), (1200, 784)

Every session holds float32 inputs `[n, d]` (flattened, scaled to [0, 1]) and integer labels in the
*global* class numbering, so a classifier with one output per class of the whole stream predicts
over the classes seen so far by masking the rest (`seen_classes`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np


@dataclasses.dataclass(frozen=True)
class Session:
    """One task session of a class-incremental stream.

    Attributes:
      classes: the global class ids introduced in this session.
      x_train: float32 [n_train, d]; y_train: int32 [n_train] (global ids, all in `classes`).
      x_test: float32 [n_test, d]; y_test: int32 [n_test].
    """

    classes: tuple[int, ...]
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    @property
    def dim(self) -> int:
        return int(self.x_train.shape[1])


Stream = list  # list[Session], in learning order


def split_by_class(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray,
                   order: Sequence[Sequence[int]], train_per_class: int = 0, test_per_class: int = 0,
                   seed: int = 0) -> list[Session]:
    """Splits a labelled set into sessions holding the classes `order[t]` (a class appears once).

    `train_per_class` / `test_per_class` > 0 keep that many examples per class (a seeded random
    choice); a class with fewer examples than asked is an error, never silently cut.
    """
    flat = [int(c) for group in order for c in group]
    if len(set(flat)) != len(flat):
        raise ValueError(f"split_by_class: a class appears in more than one session: {order}")
    if any(len(group) == 0 for group in order):
        raise ValueError(f"split_by_class: empty session in {order}")
    x_train, x_test = _as_features(x_train), _as_features(x_test)
    rng = np.random.default_rng(seed)

    def pick(x, y, c, k, what):
        idx = np.flatnonzero(y == c)
        if len(idx) == 0:
            raise ValueError(f"split_by_class: class {c} has no {what} examples")
        if k > 0:
            if k > len(idx):
                raise ValueError(f"split_by_class: {what}_per_class={k} but class {c} has {len(idx)}")
            idx = np.sort(rng.choice(idx, size=k, replace=False))
        return idx

    sessions = []
    for group in order:
        tr = np.concatenate([pick(x_train, y_train, c, train_per_class, "train") for c in group])
        te = np.concatenate([pick(x_test, y_test, c, test_per_class, "test") for c in group])
        sessions.append(Session(tuple(int(c) for c in group), x_train[tr], y_train[tr].astype(np.int32),
                                x_test[te], y_test[te].astype(np.int32)))
    return sessions


def _as_features(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"inputs must be [n, ...], got shape {x.shape}")
    return x.reshape(len(x), -1).astype(np.float32)


def seen_classes(stream: Sequence[Session], upto: int) -> tuple[int, ...]:
    """The classes of sessions 0..upto (inclusive), in order."""
    return tuple(c for s in stream[:upto + 1] for c in s.classes)


def num_classes(stream: Sequence[Session]) -> int:
    """One more than the largest class id in the stream (the width of a stream-wide classifier)."""
    return 1 + max(c for s in stream for c in s.classes)


def fashion_mnist_stream(train_per_class: int = 0, test_per_class: int = 0, seed: int = 0) -> list[Session]:
    """Split Fashion-MNIST: 5 sessions of 2 classes in label order ({0,1}, {2,3}, ..., {8,9}),
    pixels scaled to [0, 1] (784 features). 0 per class: every image (6000 / 1000 per class)."""
    from jaxml.data import fashion_mnist

    (xtr, ytr), (xte, yte) = fashion_mnist.read_raw("train"), fashion_mnist.read_raw("test")
    order = [(2 * t, 2 * t + 1) for t in range(5)]
    return split_by_class(xtr / 255.0, ytr, xte / 255.0, yte, order, train_per_class, test_per_class, seed)


def digits_stream(test_fraction: float = 0.3, seed: int = 0) -> list[Session]:
    """Split digits (scikit-learn's 1797 8x8 UCI digits): 10 sessions of one class each, in label
    order, values scaled to [0, 1] (64 features); a stratified, seeded train/test split."""
    from jaxml.data import digits

    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"digits_stream: test_fraction must be in (0, 1), got {test_fraction}")
    images, labels = digits.load()
    rng = np.random.default_rng(seed)
    test = np.zeros(len(labels), bool)
    for c in range(10):
        idx = np.flatnonzero(labels == c)
        test[rng.choice(idx, size=int(round(test_fraction * len(idx))), replace=False)] = True
    x = images / 16.0
    return split_by_class(x[~test], labels[~test], x[test], labels[test], [(c,) for c in range(10)])
