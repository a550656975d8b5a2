"""Retrieval splits: metric learning trains on some classes and retrieves among unseen ones.

    train_x, train_y, test_x, test_y = fashion_class_split()   # train: classes 0-4 of the 60k training
                                                               # images; retrieval: classes 5-9 of the 10k
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def class_split(images: np.ndarray, labels: np.ndarray, classes: Sequence[int], per_class: int = 0,
                seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The images of `classes` (all, or a seeded choice of `per_class` each; asking for more than a
    class has is an error), in their original order."""
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    keep = []
    for c in classes:
        idx = np.flatnonzero(labels == c)
        if per_class > 0:
            if per_class > len(idx):
                raise ValueError(f"class_split: per_class={per_class} but class {c} has {len(idx)} images")
            idx = rng.choice(idx, per_class, replace=False)
        if len(idx) == 0:
            raise ValueError(f"class_split: class {c} has no images")
        keep.append(idx)
    keep = np.sort(np.concatenate(keep))
    return images[keep], labels[keep]


def _check_disjoint(train_classes, test_classes) -> None:
    if set(train_classes) & set(test_classes):
        raise ValueError(f"train and test classes overlap: {sorted(set(train_classes) & set(test_classes))}")


def fashion_class_split(train_classes: Sequence[int] = (0, 1, 2, 3, 4), test_classes: Sequence[int] = (5, 6, 7, 8, 9),
                        train_per_class: int = 0, test_per_class: int = 0, seed: int = 0):
    """Fashion-MNIST for retrieval on unseen classes: `(train_x uint8 [n, 28, 28, 1], train_y, test_x,
    test_y)` with the training split's `train_classes` and the test split's `test_classes`."""
    from jaxml.data import fashion_mnist

    _check_disjoint(train_classes, test_classes)
    (xtr, ytr), (xte, yte) = fashion_mnist.read_raw("train"), fashion_mnist.read_raw("test")
    train = class_split(xtr[..., None], ytr.astype(np.int32), train_classes, train_per_class, seed)
    test = class_split(xte[..., None], yte.astype(np.int32), test_classes, test_per_class, seed)
    return (*train, *test)


def digits_class_split(train_classes: Sequence[int] = (0, 1, 2, 3, 4), test_classes: Sequence[int] = (5, 6, 7, 8, 9),
                       train_per_class: int = 0, test_per_class: int = 0, seed: int = 0):
    """scikit-learn's UCI digits (1797 8x8 images) for retrieval on unseen classes, as uint8
    [n, 8, 8, 1] images (0..16 scaled to 0..255): `(train_x, train_y, test_x, test_y)`."""
    from jaxml.data import digits

    _check_disjoint(train_classes, test_classes)
    images, labels = digits.load()
    images = np.round(images[..., None] * (255.0 / 16.0)).astype(np.uint8)
    return (*class_split(images, labels, train_classes, train_per_class, seed),
            *class_split(images, labels, test_classes, test_per_class, seed))


SPLITS = {"fashion": fashion_class_split, "digits": digits_class_split}


def load_split(name: str, train_per_class: int = 0, test_per_class: int = 0, seed: int = 0):
    """The retrieval split `name` (one of SPLITS): `(train_x, train_y, test_x, test_y)`."""
    if name not in SPLITS:
        raise ValueError(f"unknown retrieval split {name!r}; accepted: {sorted(SPLITS)}")
    return SPLITS[name](train_per_class=train_per_class, test_per_class=test_per_class, seed=seed)
