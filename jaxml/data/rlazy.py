"""Reading R's lazy-load data databases (`data/Rdata.rdx` + `Rdata.rdb`, as Debian's r-cran-*
packages ship them) with `rdata`, without R.

    objects = rlazy.load(base, names=("SLID",))    # {"SLID": pandas.DataFrame}
"""

from __future__ import annotations

import gzip
import pathlib
import warnings
import zlib
from collections.abc import Iterable


def _convert(raw: bytes):
    import rdata

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # rdata: "Unknown file type: assumed RDS"
        return rdata.conversion.convert(rdata.parser.parse_data(raw))


def load(base: "str | pathlib.Path", names: Iterable[str] | None = None) -> dict:
    """`{name: object}` for the objects `names` (all when None) of the database in directory `base`.

    Each record of `Rdata.rdb` is a 4-byte length header followed by a zlib stream of an RDS object;
    `Rdata.rdx` maps names to (offset, length)."""
    base = pathlib.Path(base)
    index = _convert(gzip.decompress((base / "Rdata.rdx").read_bytes()))["variables"]
    index = {str(k): v for k, v in index.items()}
    wanted = list(index) if names is None else list(names)
    missing = [n for n in wanted if n not in index]
    if missing:
        raise KeyError(f"{base}: no objects {missing}; the database has {sorted(index)}")
    blob = (base / "Rdata.rdb").read_bytes()
    out = {}
    for name in wanted:
        offset, length = (int(v) for v in index[name])
        out[name] = _convert(zlib.decompress(blob[offset + 4:offset + length]))
    return out
