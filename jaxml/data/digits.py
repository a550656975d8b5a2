"""The UCI optdigits set as shipped in scikit-learn (`load_digits`), read from the wheel asset.

    images, labels = digits.load()     # float32 [1797, 8, 8] in 0..16, int32 [1797]
"""

from __future__ import annotations

import numpy as np

from jaxml.data import assets
from jaxml.data.pipeline import ArraySource


def load() -> tuple[np.ndarray, np.ndarray]:
    """`(images float32 [1797, 8, 8] with values 0..16, labels int32 [1797])`."""
    path = assets.path("sklearn-digits", "sklearn", "datasets", "data", "digits.csv.gz")
    table = np.loadtxt(path, delimiter=",", dtype=np.float32)
    if table.shape != (1797, 65):
        raise ValueError(f"{path}: expected a 1797 x 65 table, got {table.shape}")
    return table[:, :64].reshape(-1, 8, 8), table[:, 64].astype(np.int32)


def source() -> ArraySource:
    """All 1797 digits as `{"image": float32 [n, 8, 8, 1] in [0, 1], "label": int32 [n]}`."""
    images, labels = load()
    return ArraySource({"image": images[..., None] / 16.0, "label": labels})
