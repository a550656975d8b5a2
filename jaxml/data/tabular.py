"""Real tabular data with a protected attribute, from Debian's r-cran-cardata (asset `cardata`).

    rows = tabular.slid()     # 3,987 complete rows: {"wages", "education", "age", "sex", "language"}

SLID is the Ontario part of Statistics Canada's 1994 Survey of Labour and Income Dynamics (Fox and
Weisberg's *An R Companion to Applied Regression*): composite hourly wage rate in dollars, years of
schooling, age in years, sex (Female/Male) and language (English/French/Other). It plays the role
of the Adult census data in DecodingTrust's fairness probes (predicting a high income from a
description, with sex as the protected attribute).
"""

from __future__ import annotations

import functools

from jaxml.data import assets

SLID_FIELDS = ("wages", "education", "age", "sex", "language")


@functools.lru_cache(maxsize=None)
def slid() -> tuple[dict, ...]:
    """The SLID rows with no missing field, in the package's order (each a dict of `SLID_FIELDS`)."""
    import math

    from jaxml.data import rlazy

    frame = rlazy.load(assets.path("cardata", "usr/lib/R/site-library/carData/data"), ("SLID",))["SLID"]
    if list(frame.columns) != list(SLID_FIELDS):
        raise ValueError(f"carData SLID has columns {list(frame.columns)}, expected {list(SLID_FIELDS)}")
    rows = []
    for wages, education, age, sex, language in frame.itertuples(index=False):
        values = (wages, education, age, sex, language)
        if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values):
            continue
        rows.append({"wages": float(wages), "education": float(education), "age": int(age), "sex": str(sex),
                     "language": str(language)})
    return tuple(rows)
