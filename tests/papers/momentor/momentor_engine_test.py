"""The data engine: events known by construction, held-out sources, rendered instances where the
annotations say they are, and instructions in the engine's vocabulary."""

import numpy as np
import pytest

from jaxml.data import video
from jaxml.papers.momentor import engine, text


@pytest.fixture(scope="module")
def videos():
    return engine.make_videos("train", 12, seed=3, events_range=(2, 4))


def test_videos_are_deterministic_and_events_tile_the_video(videos):
    assert engine.make_video("train", 5, seed=3, events_range=(2, 4)) == videos[5]
    assert engine.make_video("train", 5, seed=4, events_range=(2, 4)) != videos[5]
    for v in videos:
        assert 20.0 <= v.duration <= 60.0 and 2 <= len(v.events) <= 4
        assert v.events[0].start == 0.0 and v.events[-1].end == v.duration
        for a, b in zip(v.events, v.events[1:]):
            assert a.end == b.start and a.background != b.background
        assert all(e.end - e.start >= 0.12 * v.duration - 0.11 for e in v.events)     # 0.1 s rounding per cut
        assert len({e.subject for e in v.events}) == len(v.events)     # a query names exactly one event
        k, hs, he = v.highlight
        assert v.events[k].start <= hs < he <= v.events[k].end


def test_saliency_levels(videos):
    v = videos[0]
    m = 40
    s = v.saliency(m)
    t = v.frame_times(m)
    k, hs, he = v.highlight
    e = v.events[k]
    for i in range(m):
        want = 2 if hs <= t[i] <= he else (1 if e.start <= t[i] < e.end or (t[i] == e.end == v.duration) else 0)
        assert s[i] == want


def test_train_and_test_use_disjoint_frames_and_items():
    for name in engine.BACKGROUNDS:
        a, b = engine._split_range(name, "train"), engine._split_range(name, "test")
        assert a[1] == b[0] and a[0] >= video.clip(name).first and b[1] == video.clip(name).num_frames
    tr = engine.make_videos("train", 4, events_range=(2, 2))
    te = engine.make_videos("test", 4, events_range=(2, 2))
    assert all(v.split == "train" for v in tr) and all(v.split == "test" for v in te)
    with pytest.raises(ValueError, match="accepted"):
        engine.make_video("val", 0)
    with pytest.raises(ValueError, match="cannot all fit"):
        engine.make_video("train", 0, events_range=(9, 9))


def test_render_pastes_the_tinted_object_on_its_track(videos):
    v = videos[1]
    m = 16
    frames, labels = engine.render(v, m)
    assert frames.shape == (m, engine.FRAME_SIZE, engine.FRAME_SIZE, 3) and frames.dtype == np.uint8
    for i, t in enumerate(v.frame_times(m)):
        e = v.events[v.event_at(float(t))]
        assert labels["item"][i] == e.item and engine.BACKGROUNDS[labels["background"][i]] == e.background
        size = engine.CLOSE_SIZE if labels["closeup"][i] else engine.OBJECT_SIZE
        y0 = int(round(labels["y"][i] * engine.FRAME_SIZE - size / 2))
        x0 = int(round(labels["x"][i] * engine.FRAME_SIZE - size / 2))
        alpha = engine._item_alpha(v.split, e.instance, size)
        dy, dx = np.unravel_index(np.argmax(alpha), alpha.shape)
        a = float(alpha[dy, dx])
        pixel = frames[i, y0 + dy, x0 + dx].astype(np.float32)
        colour = np.asarray(engine.COLOURS[e.colour], np.float32)
        # alpha blending: the most opaque pixel of the item is within (1 - alpha) * 255 of the tint
        assert a > 0.5 and (np.abs(pixel - colour) <= (1 - a) * 255 + 1).all(), (i, e, a, pixel)
    # the object moves the way the caption says over one event
    k = 0
    e = v.events[k]
    idx = [i for i, t in enumerate(v.frame_times(m)) if v.event_at(float(t)) == k and labels["closeup"][i] == 0]
    if len(idx) >= 2:
        dy = labels["y"][idx[-1]] - labels["y"][idx[0]]
        dx = labels["x"][idx[-1]] - labels["x"][idx[0]]
        want = {"left": dx < 0, "right": dx > 0, "up": dy < 0, "down": dy > 0}[e.direction]
        assert want


def test_instructions_are_in_the_vocabulary_and_answers_are_right(videos):
    vocab = text.Vocab.build()
    ex = engine.make_examples(videos, engine.TASKS + engine.STAGE_FORMATS, seed=0, every_event=True)
    for e in ex:
        vocab.ids([p for p in e.prompt + e.answer if isinstance(p, str)])          # no unknown word
    by = {}
    for e in ex:
        by.setdefault(e.task, []).append(e)
    n_events = sum(len(v.events) for v in videos)
    assert len(by["grounding"]) == len(by["captioning"]) == n_events
    assert len(by["sequencing"]) == n_events - len(videos)
    g = by["grounding"][0]
    first = videos[g.video].events[0]
    assert g.answer == (engine.Time(first.start), "to", engine.Time(first.end))
    assert first.caption in " ".join(p for p in g.prompt if isinstance(p, str))
    h = by["highlight"][0]
    _, hs, he = videos[h.video].highlight
    assert [t.seconds for t in h.answer] == pytest.approx([(hs + he) / 2, hs + (he - hs) / 4, hs + 3 * (he - hs) / 4])
    d = by["dense"][0]
    assert text.parse_events(d.answer) == [(e.start, e.end, e.caption) for e in videos[d.video].events]
    with pytest.raises(ValueError, match="accepted"):
        engine.video_examples(videos[0], 0, "summarise")
