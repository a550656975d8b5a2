"""StrokeNUWA's data from real icon sets (offline assets): Tabler's outline icons and KanjiVG's kanji,
parsed to rows (`svg.to_rows`), with keyword captions and deterministic splits.

    icons = load_icons("tabler", max_rows=128)          # list[Icon], the skipped ones in icons.skipped
    batch = pad_batch([i.rows for i in icons], multiple=4)   # {"rows": [N, T, 9], "length": [N]}

Captions (keywords, lower case, space separated, as FIGR-8's keyword captions):
  * tabler: the icon's category, the words of its file name (digits and the "off" variant marker
    kept) and its tags from the file's header comment, each once, in that order;
  * kanjivg: the character itself, then the distinct component elements of its `kvg:element`
    groups in document order (KanjiVG has no meanings; the components are its only metadata).

Splits (`split_of`): a stable hash (sha1) of the icon's group decides: 5% test, 5% validation, the rest
train. The group keeps variants together: a Tabler name without a trailing "-off", "-<digits>" or
"-filled", a KanjiVG code point without its "-Variant" suffix, so no variant of a test icon is trained on.

Icons that fail to parse (`svg.SvgError`) or have more rows than `max_rows` are not dropped silently:
`load_icons` returns them in `.skipped` with the reason, and the experiments report their counts.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import pathlib
import re

import numpy as np

from jaxml.data import assets
from jaxml.papers.strokenuwa import svg

SOURCES = ("tabler", "kanjivg")
SPLITS = ("train", "validation", "test")


@dataclasses.dataclass(frozen=True)
class Icon:
    """One icon: `name` (file stem), `source`, `caption` (keywords), `rows` int16 [R, 9], `split`."""

    name: str
    source: str
    caption: str
    rows: np.ndarray
    split: str


class IconList(list):
    """A list of Icons with `.skipped`: [(name, reason)] for the files not loaded."""

    skipped: list


def icon_dir(source: str) -> pathlib.Path:
    """The folder of the source's SVG files (the asset, fetched on first use)."""
    if source == "tabler":
        return assets.fetch("tabler-icons") / "pytablericons" / "icons" / "outline"
    if source == "kanjivg":
        return assets.fetch("kanjivg") / "kanji"
    raise ValueError(f"icon source {source!r}; accepted {SOURCES}")


@functools.lru_cache(maxsize=4)
def icon_files(source: str) -> tuple[pathlib.Path, ...]:
    """The source's SVG files, sorted by name."""
    files = tuple(sorted(icon_dir(source).glob("*.svg")))
    if not files:
        raise FileNotFoundError(f"no SVG files under {icon_dir(source)}; delete the asset folder to refetch it")
    return files


def _unique(words) -> list[str]:
    seen, out = set(), []
    for w in words:
        w = w.strip().lower()
        if w and w not in seen:
            seen.add(w)
            out.append(w)
    return out


def tabler_caption(name: str, text: str) -> str:
    """Category, name words and tags of a Tabler icon (its file stem and SVG text)."""
    header = re.search(r"<!--(.*?)-->", text, re.S)
    header = header.group(1) if header else ""
    category = re.search(r"^\s*category:\s*(.+)$", header, re.M | re.I)
    tags = re.search(r"^\s*tags?:\s*\[(.*)\]", header, re.M | re.I)
    words = []
    if category:
        words += category.group(1).split()
    words += name.split("-")
    if tags:
        for tag in tags.group(1).split(","):
            words += tag.strip().strip("\"'").split()
    return " ".join(_unique(words))


def kanji_caption(text: str) -> str:
    """The character and its component elements (KanjiVG's `kvg:element` attributes, in order)."""
    return " ".join(_unique(re.findall(r'kvg:element="([^"]+)"', text)))


def group_of(source: str, name: str) -> str:
    """The split group: variants of one icon share it (see the module docstring)."""
    if source == "tabler":
        base = re.sub(r"(-off|-filled|-\d+)+$", "", name)
    else:
        base = name.split("-")[0]
    return f"{source}/{base}"


def split_of(source: str, name: str) -> str:
    """'train', 'validation' or 'test' from a stable hash of the icon's group."""
    h = int(hashlib.sha1(group_of(source, name).encode()).hexdigest()[:8], 16) % 100
    return "test" if h < 5 else "validation" if h < 10 else "train"


def load_icons(source: str, *, max_rows: int = 128, limit: int | None = None, every: int = 1) -> IconList:
    """Parses the source's icons (every `every`-th file, at most `limit`) into `Icon`s with rows of at most
    `max_rows` rows. Files that fail to parse or are longer land in `.skipped` with the reason."""
    if source not in SOURCES:
        raise ValueError(f"icon source {source!r}; accepted {SOURCES}")
    if max_rows < 2:
        raise ValueError(f"max_rows={max_rows}; accepted >= 2")
    out, skipped = IconList(), []
    for path in icon_files(source)[::every]:
        if limit is not None and len(out) >= limit:
            break
        name, text = path.stem, path.read_text(encoding="utf-8")
        try:
            rows = svg.to_rows(svg.parse_svg(text), max_rows=max_rows)
        except svg.SvgError as e:
            skipped.append((name, str(e)))
            continue
        caption = tabler_caption(name, text) if source == "tabler" else kanji_caption(text)
        out.append(Icon(name, source, caption, rows.astype(np.int16), split_of(source, name)))
    out.skipped = skipped
    return out


def pad_batch(rows: list[np.ndarray], multiple: int = 4, length: int | None = None) -> dict[str, np.ndarray]:
    """Variable-length rows -> {"rows": int32 [N, T, 9] zero-padded, "length": int32 [N]}; T is `length`
    (must fit every item) or the longest rounded up to `multiple`."""
    longest = max((len(r) for r in rows), default=0)
    t = -(-max(longest, 1) // multiple) * multiple if length is None else length
    if t % multiple or t < longest:
        raise ValueError(f"pad_batch: length {t} must be a multiple of {multiple} and >= the longest item ({longest})")
    out = np.zeros((len(rows), t, svg.ROW), np.int32)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return {"rows": out, "length": np.array([len(r) for r in rows], np.int32)}


def caption_vocab(captions: list[str], min_count: int = 1) -> dict[str, int]:
    """Keyword vocabulary from (training) captions: {"<pad>": 0, "<unk>": 1, words by frequency...}."""
    counts: dict[str, int] = {}
    for c in captions:
        for w in c.split():
            counts[w] = counts.get(w, 0) + 1
    words = sorted((w for w, n in counts.items() if n >= min_count), key=lambda w: (-counts[w], w))
    return {"<pad>": 0, "<unk>": 1} | {w: i + 2 for i, w in enumerate(words)}


def encode_captions(captions: list[str], vocab: dict[str, int], length: int) -> np.ndarray:
    """Captions -> int32 [N, length] keyword ids (unknown -> <unk>), zero-padded; longer captions
    raise (captions are never cut silently)."""
    out = np.zeros((len(captions), length), np.int32)
    for i, c in enumerate(captions):
        ids = [vocab.get(w, 1) for w in c.split()]
        if len(ids) > length:
            raise ValueError(f"caption {i} has {len(ids)} keywords > length {length}: {c!r}")
        out[i, :len(ids)] = ids
    return out
