"""Template/search training pairs, sampled the way OSTrack (and AVTrack after it) samples them.

    batch = pairs.sample_pairs(seqs, 32, np.random.default_rng(0))
    batch["template"]    # float32 [32, 32, 32, 3]  crop of side 2 * sqrt(w * h) around the target
    batch["search"]      # float32 [32, 64, 64, 3]  crop of side 4 * sqrt(w' * h') around a jittered box
    batch["search_box"]  # float32 [32, 4]          target (x, y, w, h) in the search crop / search_size

Per pair: a sequence uniformly at random among those with at least two usable frames (visible >=
min_visible); a template frame among its usable frames that have a later usable one; a later search
frame in (template, template + max_gap) (OSTrack's 'causal' sampler, `lib/train/data/sampler.py`: when
none is usable the gap grows by 5 until one is). A sequence with fewer than two usable frames cannot
give a causal pair: it is skipped and counted (`skipped_sequences` in the batch; the release's
sampler draws another sequence), never paired with itself.
The template crop is centred on the true box. The search crop is taken around OSTrack's jittered box:

    jittered_size = size * exp(randn(2) * scale_jitter)
    max_offset = sqrt(prod(jittered_size)) * center_jitter
    jittered_centre = centre + max_offset * (rand(2) - 0.5)

(lib/train/data/processing.py, `_get_jittered_box`; OSTrack uses center_jitter 3, scale_jitter 0.25 for
search regions and no jitter for templates).
"""

from __future__ import annotations

import numpy as np

from jaxml.papers.avtrack import crops


def _check_sequences(sequences) -> None:
    if not isinstance(sequences, (list, tuple)) or not sequences:
        raise ValueError("sample_pairs: sequences must be a non-empty list of dicts with frames, boxes, visible")
    for i, s in enumerate(sequences):
        missing = {"frames", "boxes", "visible"} - set(s)
        if missing:
            raise ValueError(f"sample_pairs: sequence {i} has no {sorted(missing)}")
        t = len(s["frames"])
        if np.shape(s["boxes"]) != (t, 4) or np.shape(s["visible"]) != (t,):
            raise ValueError(f"sample_pairs: sequence {i}: frames of length {t} but boxes {np.shape(s['boxes'])} "
                             f"and visible {np.shape(s['visible'])}")


def jittered_box(box, rng: np.random.Generator, center_jitter: float, scale_jitter: float) -> np.ndarray:
    """OSTrack's `_get_jittered_box`: box float [4] (x, y, w, h) -> jittered box float64 [4]."""
    b = np.asarray(box, np.float64)
    size = b[2:] * np.exp(rng.standard_normal(2) * scale_jitter)
    max_offset = np.sqrt(np.prod(np.maximum(size, crops.MIN_SIZE))) * center_jitter
    centre = b[:2] + 0.5 * b[2:] + max_offset * (rng.uniform(size=2) - 0.5)
    return np.concatenate([centre - 0.5 * size, size])


def sample_pairs(sequences, batch: int, rng: np.random.Generator, *, template_size: int = 32,
                 search_size: int = 64, template_factor: float = 2.0, search_factor: float = 4.0,
                 max_gap: int = 200, center_jitter: float = 3.0, scale_jitter: float = 0.25,
                 min_visible: float = 0.5) -> dict:
    """A batch of training pairs from rendered sequences.

    Args:
      sequences: list of dicts with frames uint8 [T, H, W, 3], boxes float [T, 4] (x, y, w, h), visible float [T].
      batch: number of pairs B.
      rng: numpy Generator (all randomness).
      template_size, search_size: output sides in pixels.
      template_factor, search_factor: crop side / sqrt(w * h) (AVTrack: 2 and 4).
      max_gap: search frames lie in (template, template + max_gap) before the gap is widened (the
        release's MAX_SAMPLE_INTERVAL, 200).
      center_jitter, scale_jitter: OSTrack's search-region jitter (see the module docstring).
      min_visible: frames whose visible fraction is below this are used neither as template nor search.
    Returns:
      dict(template float32 [B, ts, ts, 3] and search float32 [B, ss, ss, 3] in [0, 1],
           template_box float32 [B, 4] and search_box float32 [B, 4]: the target (x, y, w, h) in the
             crop, divided by the crop's side in pixels,
           search_crop_box float64 [B, 4]: the jittered frame box the search crop was cut around,
           sequence int32 [B], template_frame int32 [B], search_frame int32 [B],
           skipped_sequences int: how many sequences had fewer than two usable frames).
    Raises:
      ValueError: bad sequences or parameters, or no sequence with two frames at visible >= min_visible.
    """
    _check_sequences(sequences)
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"sample_pairs: batch={batch!r}; accepted an int >= 1")
    if template_size < 1 or search_size < 1 or template_factor <= 0 or search_factor <= 0:
        raise ValueError(f"sample_pairs: sizes ({template_size}, {search_size}) must be >= 1 and factors "
                         f"({template_factor}, {search_factor}) > 0")
    if max_gap < 1 or center_jitter < 0 or scale_jitter < 0:
        raise ValueError(f"sample_pairs: max_gap={max_gap} must be >= 1, center_jitter={center_jitter} and "
                         f"scale_jitter={scale_jitter} >= 0")
    valid = [np.flatnonzero(np.asarray(s["visible"]) >= min_visible) for s in sequences]
    usable = np.array([i for i, v in enumerate(valid) if len(v) >= 2])
    if not len(usable):
        raise ValueError(f"sample_pairs: no sequence has two frames with visible >= {min_visible} (a template "
                         "needs a later search frame)")
    out = dict(template=np.empty((batch, template_size, template_size, 3), np.float32),
               search=np.empty((batch, search_size, search_size, 3), np.float32),
               template_box=np.empty((batch, 4), np.float32), search_box=np.empty((batch, 4), np.float32),
               search_crop_box=np.empty((batch, 4), np.float64), sequence=np.empty(batch, np.int32),
               template_frame=np.empty(batch, np.int32), search_frame=np.empty(batch, np.int32),
               skipped_sequences=len(sequences) - len(usable))
    for b in range(batch):
        si = int(usable[rng.integers(len(usable))])
        seq, frames_ok = sequences[si], valid[si]
        bases = frames_ok[:-1]                     # usable frames with a later usable frame (causal)
        ti = int(bases[rng.integers(len(bases))])
        gap, later = max_gap, np.empty(0, np.int64)
        while not len(later):                      # OSTrack widens the gap by 5 until it finds one
            later = frames_ok[(frames_ok > ti) & (frames_ok < ti + gap)]
            gap += 5
        fi = int(later[rng.integers(len(later))])
        t_box = np.asarray(seq["boxes"][ti], np.float64)
        s_box = np.asarray(seq["boxes"][fi], np.float64)
        crop, tt = crops.sample_target(seq["frames"][ti], t_box, template_factor, template_size)
        out["template"][b] = crop
        out["template_box"][b] = tt.frame_to_crop(t_box) / template_size
        jbox = jittered_box(s_box, rng, center_jitter, scale_jitter)
        crop, ts = crops.sample_target(seq["frames"][fi], jbox, search_factor, search_size)
        out["search"][b] = crop
        out["search_box"][b] = ts.frame_to_crop(s_box) / search_size
        out["search_crop_box"][b] = jbox
        out["sequence"][b], out["template_frame"][b], out["search_frame"][b] = si, ti, fi
    return out
