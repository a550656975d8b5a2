"""Examples as token arrays for one timestamp encoding, and generated tokens back to answers.

A row is `<bos> <frame>*M prompt <sep> answer <eos>`, right-padded. Arrays per row [L]:

  tokens        int    word ids; `<frame>` at the frame slots, `<time>` where a timestamp is read
  frame_index   int    0..M-1 at the frame slots, -1 elsewhere
  time_pos      float  the temporal position p at `<time>` slots (0 elsewhere)
  target_kind   int    what position i predicts (token i+1): 0 nothing (no loss), 1 a word, 2 a time
  target_id     int    the word id (kind 1)
  target_pos    float  the position p (kind 2)

With the 'text' encoding a timestamp is written in seconds with one decimal, one token per
character ("12.5" -> 1 2 . 5), and `<time>` never occurs. Decimal words in a prompt (the video's
duration) are always written that way.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Sequence

import numpy as np

from jaxml.papers.momentor import engine, tpm

SPECIALS = ("<pad>", "<bos>", "<eos>", "<sep>", "<frame>", "<time>")
PAD, BOS, EOS, SEP, FRAME, TIME = range(len(SPECIALS))
_NUMBER = re.compile(r"^\d+(\.\d+)?$")


@dataclasses.dataclass(frozen=True)
class Vocab:
    words: tuple[str, ...]

    @classmethod
    def build(cls) -> "Vocab":
        return cls(SPECIALS + engine.vocabulary())

    def __len__(self) -> int:
        return len(self.words)

    @functools.cached_property
    def index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.words)}

    def ids(self, words: Sequence[str]) -> list[int]:
        index = self.index
        out = []
        for w in words:
            if w in index:
                out.append(index[w])
            elif _NUMBER.match(w):
                out.extend(index[ch] for ch in w)
            else:
                raise ValueError(f"word {w!r} is not in the Momentor vocabulary ({len(self)} words)")
        return out


def _pieces(pieces, vocab: Vocab, encoding: str, duration: float, num_frames: int):
    """(ids, time positions or None per id) of prompt/answer pieces."""
    ids, times = [], []
    for piece in pieces:
        if isinstance(piece, engine.Time):
            if encoding == "text":
                new = vocab.ids([f"{piece.seconds:.1f}"])
                ids.extend(new)
                times.extend([None] * len(new))
            else:
                ids.append(TIME)
                times.append(float(tpm.position(piece.seconds, duration, num_frames)))
        else:
            new = vocab.ids([piece])
            ids.extend(new)
            times.extend([None] * len(new))
    return ids, times


def encode(examples: Sequence[engine.Example], videos: Sequence[engine.Video], vocab: Vocab, encoding: str,
           num_frames: int, length: int | None = None, multiple: int = 8) -> dict[str, np.ndarray]:
    """Training rows (see the module docstring), plus `video` int [N]. `length` (default: the longest
    row rounded up to `multiple`) must hold every row: a longer row is an error, never truncated."""
    tpm.check_encoding(encoding)
    rows = []
    for ex in examples:
        v = videos[ex.video]
        p_ids, p_t = _pieces(ex.prompt, vocab, encoding, v.duration, num_frames)
        a_ids, a_t = _pieces(ex.answer, vocab, encoding, v.duration, num_frames)
        ids = [BOS] + [FRAME] * num_frames + p_ids + [SEP] + a_ids + [EOS]
        ts = [None] * (1 + num_frames) + p_t + [None] + a_t + [None]
        first_target = 1 + num_frames + len(p_ids)        # position of <sep>: it predicts the answer
        rows.append((ids, ts, first_target))
    longest = max(len(r[0]) for r in rows)
    if length is None:
        length = -(-longest // multiple) * multiple
    elif longest > length:
        raise ValueError(f"encode: a row has {longest} tokens but length={length}")
    n = len(rows)
    out = {"tokens": np.full((n, length), PAD, np.int32), "frame_index": np.full((n, length), -1, np.int32),
           "time_pos": np.zeros((n, length), np.float32), "target_kind": np.zeros((n, length), np.int32),
           "target_id": np.zeros((n, length), np.int32), "target_pos": np.zeros((n, length), np.float32),
           "video": np.asarray([ex.video for ex in examples], np.int32)}
    for r, (ids, ts, first) in enumerate(rows):
        out["tokens"][r, :len(ids)] = ids
        out["frame_index"][r, 1:1 + num_frames] = np.arange(num_frames)
        for i, t in enumerate(ts):
            if t is not None:
                out["time_pos"][r, i] = t
        for i in range(first, len(ids) - 1):
            nxt, t = ids[i + 1], ts[i + 1]
            if t is None:
                out["target_kind"][r, i], out["target_id"][r, i] = 1, nxt
            else:
                out["target_kind"][r, i], out["target_pos"][r, i] = 2, t
    return out


def prompts(examples: Sequence[engine.Example], videos: Sequence[engine.Video], vocab: Vocab, encoding: str,
            num_frames: int) -> dict[str, np.ndarray]:
    """Left-padded prompts `<bos> <frame>*M prompt <sep>` for generation: tokens, frame_index,
    time_pos, positions (0 at the first real token), key_valid [N, P]."""
    tpm.check_encoding(encoding)
    rows = []
    for ex in examples:
        v = videos[ex.video]
        p_ids, p_t = _pieces(ex.prompt, vocab, encoding, v.duration, num_frames)
        rows.append(([BOS] + [FRAME] * num_frames + p_ids + [SEP], [None] * (1 + num_frames) + p_t + [None]))
    p = max(len(r[0]) for r in rows)
    n = len(rows)
    out = {"tokens": np.full((n, p), PAD, np.int32), "frame_index": np.full((n, p), -1, np.int32),
           "time_pos": np.zeros((n, p), np.float32), "positions": np.zeros((n, p), np.int32),
           "key_valid": np.zeros((n, p), bool)}
    for r, (ids, ts) in enumerate(rows):
        pad = p - len(ids)
        out["tokens"][r, pad:] = ids
        out["frame_index"][r, pad + 1:pad + 1 + num_frames] = np.arange(num_frames)
        out["positions"][r, pad:] = np.arange(len(ids))
        out["key_valid"][r, pad:] = True
        for i, t in enumerate(ts):
            if t is not None:
                out["time_pos"][r, pad + i] = t
    return out


def decode(ids: Sequence[int], times: Sequence[float], vocab: Vocab, encoding: str, duration: float,
           num_frames: int) -> list[engine.Piece]:
    """Generated ids (stopping at <eos>) and the positions decoded at `<time>` ids -> pieces, with
    times in seconds. With 'text', runs of digits and '.' become one Time (unparseable runs are
    dropped)."""
    pieces: list[engine.Piece] = []
    number = ""

    def flush():
        nonlocal number
        if number:
            try:
                pieces.append(engine.Time(float(number)))
            except ValueError:
                pass
            number = ""

    for i, t in zip(ids, times):
        if i == EOS:
            break
        if i == TIME:
            flush()
            pieces.append(engine.Time(float(tpm.seconds(t, duration, num_frames))))
            continue
        w = vocab.words[i]
        if encoding == "text" and (w.isdigit() or w == "."):
            number += w
            continue
        flush()
        if i in (PAD, BOS, SEP, FRAME):
            continue
        pieces.append(w)
    flush()
    return pieces


def times_of(pieces) -> list[float]:
    return [p.seconds for p in pieces if isinstance(p, engine.Time)]


def words_of(pieces) -> str:
    return " ".join(p for p in pieces if isinstance(p, str))


def parse_span(pieces) -> tuple[float, float]:
    """The first two times as a (start, end) span, ordered; NaNs if fewer than two."""
    ts = times_of(pieces)
    if len(ts) < 2:
        return (float("nan"), float("nan"))
    return (min(ts[0], ts[1]), max(ts[0], ts[1]))


def parse_events(pieces) -> list[tuple[float, float, str]]:
    """Dense captions: `t to t : caption ; ...` -> [(start, end, caption)]; malformed parts dropped."""
    events, part = [], []
    for p in list(pieces) + [";"]:
        if p == ";":
            ts = times_of(part)
            if len(ts) >= 2:
                words = [w for w in part if isinstance(w, str) and w not in ("to", ":")]
                events.append((min(ts[0], ts[1]), max(ts[0], ts[1]), " ".join(words)))
            part = []
        else:
            part.append(p)
    return events
