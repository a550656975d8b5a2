"""AVTrack's data: real clips, rendered sequences with exact boxes, OSTrack pair sampling, the TFDS set."""

import math

import numpy as np
import pytest

from jaxml.papers.avtrack import crops, pairs, sequences, tfds_builder, video


# --- video ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["tree", "carphone"])
def test_clip_is_cached_decode_at_working_size(name):
    frames = video.load_clip(name)
    assert frames.dtype == np.uint8 and frames.shape == (video.CLIPS[name].num_frames, 144, 192, 3)
    np.testing.assert_array_equal(frames, video.decode_clip(name))       # the .npy cache == a fresh decode
    np.testing.assert_array_equal(video.load_clip(name, max_frames=5), frames[:5])
    assert frames.std() > 20                                              # real images, not blank


def test_working_geometry_maps_original_boxes():
    # carphone 176x144 -> 176x144 with 8-px black bars; bigbuckbunny 1280x720 -> 256x144 cropped by 32.
    scale, offset = video.scale_and_offset("carphone")
    np.testing.assert_allclose(scale, [1, 1])
    np.testing.assert_allclose(offset, [8, 0])
    carphone = video.load_clip("carphone", max_frames=3)
    assert carphone[:, :, :8].max() == 0 and carphone[:, :, -8:].max() == 0 and carphone[:, :, 8:-8].max() > 0
    scale, offset = video.scale_and_offset("bigbuckbunny")
    np.testing.assert_allclose(scale, [0.2, 0.2])
    np.testing.assert_allclose(offset, [-32, 0])
    # A white square at a known original box lands on to_working_boxes' box (bikes: 640x272 -> 339x144).
    frame = np.zeros((272, 640, 3), np.uint8)
    frame[100:160, 300:380] = 255
    work = video.to_working_frame(frame, "bikes")
    x, y, w, h = video.to_working_boxes("bikes", [300, 100, 80, 60])
    ys, xs = np.nonzero(work[..., 0] > 127)
    np.testing.assert_allclose([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], [x, y, x + w, y + h], atol=1.0)


def test_annotated_sequence_reads_csv_in_working_pixels(tmp_path, monkeypatch):
    monkeypatch.setattr(video, "ANNOTATION_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match="vtest_person"):
        video.load_annotated("vtest_person")
    (tmp_path / "vtest_person.csv").write_text("frame,x,y,w,h\n3,100,200,40,80\n7,104,204,40,84\n")
    seq = video.load_annotated("vtest_person")        # vtest: 768x576 -> 192x144, scale 1/4
    np.testing.assert_allclose(seq["boxes"], [[25, 50, 10, 20], [26, 51, 10, 21]])
    np.testing.assert_array_equal(seq["frames"], video.load_clip("vtest")[[3, 7]])
    (tmp_path / "vtest_person.csv").write_text("3,100,200,40,80\n900,1,1,4,4\n")
    with pytest.raises(ValueError, match="frame indices"):
        video.load_annotated("vtest_person")
    with pytest.raises(ValueError, match="accepted"):
        video.load_annotated("vtest_car")


@pytest.mark.skipif(not (video.ANNOTATION_DIR / "vtest_person.csv").exists(), reason="no hand annotation yet")
def test_real_annotation_lies_in_the_frame():
    seq = video.load_annotated("vtest_person")
    n = len(seq["frame_index"])
    assert seq["frames"].shape == (n, 144, 192, 3) and seq["boxes"].shape == (n, 4) and n > 10
    x, y, w, h = seq["boxes"].T
    assert (x >= -1).all() and (y >= -1).all() and (x + w <= 193).all() and (y + h <= 145).all()
    assert (w > 2).all() and (h > 2).all()
    centres = seq["boxes"][:, :2] + seq["boxes"][:, 2:] / 2            # a walking person: a smooth track
    steps = np.linalg.norm(np.diff(centres, axis=0), axis=1) / np.diff(seq["frame_index"])
    assert np.median(steps) < 2.0


def test_unknown_clips_are_refused():
    with pytest.raises(ValueError, match="accepted"):
        video.load_clip("Vtest")
    with pytest.raises(ValueError, match="max_frames"):
        video.load_clip("tree", max_frames=0)
    assert not set(video.TRAIN_CLIPS) & set(video.TEST_CLIPS)


# --- rendering --------------------------------------------------------------------------------------

def _opaque_sprite(h=20, w=30):
    rgb = np.zeros((h, w, 3), np.uint8)
    rgb[..., 1] = 255
    return sequences.Sprite("test/green", "photo", rgb, np.ones((h, w), np.float32))


def _changed(seq, background):
    return np.any(seq["frames"] != background[None], axis=-1)          # [T, H, W]


@pytest.mark.parametrize("family,seed", [("photo", 0), ("fashion", 1), ("photo", 2)])
def test_box_encloses_and_fits_the_pasted_pixels(family, seed):
    rng = np.random.default_rng(seed)
    bg = np.ascontiguousarray(np.broadcast_to(video.load_clip("tree", max_frames=1), (40, 144, 192, 3)))
    sprite = sequences.random_sprite("train", family, rng)
    seq = sequences.render_sequence(bg, sprite, rng, length=40, view=1.0, rotation=45.0)
    changed = _changed(seq, bg[0])
    for t in range(40):
        ys, xs = np.nonzero(changed[t])
        x, y, w, h = seq["boxes"][t]
        # every changed pixel centre lies in the box (1 px of bilinear spread allowed) ...
        assert xs.min() + 0.5 >= x - 1 and xs.max() + 0.5 <= x + w + 1, (t, xs.min(), xs.max(), x, w)
        assert ys.min() + 0.5 >= y - 1 and ys.max() + 0.5 <= y + h + 1, (t, ys.min(), ys.max(), y, h)
        # ... and the box is tight (its edges touch changed pixels)
        assert xs.min() <= x + 2 and xs.max() + 1 >= x + w - 2 and ys.min() <= y + 2 and ys.max() + 1 >= y + h - 2
        if 0 < x and x + w < 192 and 0 < y and y + h < 144:
            assert seq["visible"][t] == pytest.approx(1.0, abs=1e-5)


def test_no_view_no_rotation_gives_the_scaled_sprite_box():
    bg = np.full((40, 144, 192, 3), 90, np.uint8)
    sprite = _opaque_sprite(20, 30)
    seq = sequences.render_sequence(bg, sprite, np.random.default_rng(3), length=40, view=0.0, rotation=0.0,
                                    scale_change=0.3, size=20.0)
    k = 20.0 / math.sqrt(600) * seq["scale"]                           # frame pixels per sprite pixel
    np.testing.assert_allclose(seq["boxes"][:, 2], 30 * k, rtol=1e-5)
    np.testing.assert_allclose(seq["boxes"][:, 3], 20 * k, rtol=1e-5)
    np.testing.assert_allclose(seq["boxes"][:, :2] + seq["boxes"][:, 2:] / 2, seq["centre"], atol=1e-3)
    assert seq["scale"].max() / seq["scale"].min() > 1.1                 # the size did change
    # interior pixels are exactly the sprite's colour; the box is the coverage's bounding box
    for t in range(40):
        x, y, w, h = seq["boxes"][t]
        inner = seq["frames"][t, math.ceil(y) + 1:math.floor(y + h) - 1, math.ceil(x) + 1:math.floor(x + w) - 1]
        assert (inner == [0, 255, 0]).all()


def test_view_strength_tilts_corners_and_changes_nothing_else():
    bg = np.full((30, 144, 192, 3), 90, np.uint8)
    sprite = _opaque_sprite(24, 24)
    kw = dict(length=30, size=24.0, rotation=20.0, scale_change=0.2)
    flat = sequences.render_sequence(bg, sprite, np.random.default_rng(5), view=0.0, **kw)
    tilted = sequences.render_sequence(bg, sprite, np.random.default_rng(5), view=1.0, **kw)
    np.testing.assert_array_equal(flat["centre"], tilted["centre"])
    np.testing.assert_array_equal(flat["scale"], tilted["scale"])
    corners = np.array([[0, 0, 1], [24, 0, 1], [24, 24, 1], [0, 24, 1]], np.float64)
    def project(h):
        q = corners @ h.T
        return q[:, :2] / q[:, 2:]
    side = 24.0 * flat["scale"]
    moved = np.array([np.abs(project(a) - project(b)).max() for a, b in zip(flat["homography"], tilted["homography"])])
    assert 0.15 < (moved / side).max() < 0.4                          # view=1: corners move up to ~1/3 side
    assert (moved / side).min() > 0.02
    # with view=0 the object is a similarity transform: opposite sides keep equal lengths
    p = project(flat["homography"][7])
    assert np.linalg.norm(p[1] - p[0]) == pytest.approx(np.linalg.norm(p[2] - p[3]), rel=1e-5)


def test_visible_fraction_matches_the_occluded_area():
    bg = np.full((40, 144, 192, 3), 90, np.uint8)
    occluder = np.zeros((144, 192, 3), np.uint8)
    occluder[..., 0] = 255                                           # a red patch crosses the green object
    seq = sequences.render_sequence(bg, _opaque_sprite(24, 24), np.random.default_rng(11), length=40, view=0.0,
                                    rotation=0.0, scale_change=0.0, size=24.0, occlusion=True,
                                    occluder_image=occluder)
    assert seq["visible"].min() < 0.5 and seq["visible"].max() == pytest.approx(1.0)
    for t in range(40):
        x, y, w, h = seq["boxes"][t]
        region = seq["frames"][t, int(round(y)):int(round(y + h)), int(round(x)):int(round(x + w))]
        red = (region == [255, 0, 0]).all(-1).mean()
        assert 1 - seq["visible"][t] == pytest.approx(red, abs=0.05), t


def test_make_split_is_deterministic_and_splits_are_disjoint():
    a = sequences.make_split("test", 3, 6, 0.5, seed=4)
    b = sequences.make_split("test", 2, 6, 0.5, seed=4)
    for x, y in zip(a, b):                                             # a prefix: same first sequences
        np.testing.assert_array_equal(x["frames"], y["frames"])
        np.testing.assert_array_equal(x["boxes"], y["boxes"])
    c = sequences.make_split("test", 3, 6, 1.0, seed=4)
    assert [(s["clip"], s["object"]) for s in a] == [(s["clip"], s["object"]) for s in c]
    assert any(not np.array_equal(x["boxes"], y["boxes"]) for x, y in zip(a, c))
    train = sequences.make_split("train", 6, 6, 0.5, seed=4)
    assert {s["clip"] for s in train} <= set(video.TRAIN_CLIPS) and {s["clip"] for s in a} <= set(video.TEST_CLIPS)
    for split, seqs in (("train", train), ("test", a)):
        for s in seqs:
            assert s["frames"].shape == (6, 144, 192, 3) and s["boxes"].shape == (6, 4) and s["visible"].shape == (6,)
            family, rest = s["object"].split("/", 1)
            assert (rest in sequences.PHOTOS[split]) if family == "photo" else rest.startswith(split + "/")
            assert 8 < np.median(np.sqrt(s["boxes"][:, 2] * s["boxes"][:, 3])) < 60


def test_render_errors_name_the_problem():
    bg = np.zeros((4, 144, 192, 3), np.uint8)
    with pytest.raises(ValueError, match="view"):
        sequences.render_sequence(bg, _opaque_sprite(), np.random.default_rng(0), length=4, view=1.5)
    with pytest.raises(ValueError, match="length"):
        sequences.render_sequence(bg, _opaque_sprite(), np.random.default_rng(0), length=0, view=0.5)
    with pytest.raises(ValueError, match="uint8"):
        sequences.render_sequence(bg.astype(np.float32), _opaque_sprite(), np.random.default_rng(0), length=4, view=0.5)
    with pytest.raises(ValueError, match="split"):
        sequences.make_split("val", 2, 4, 0.5, 0)
    with pytest.raises(ValueError, match="photo"):
        sequences.photo_sprite("banana")


# --- pairs ------------------------------------------------------------------------------------------

def test_pairs_map_back_to_the_frame_boxes():
    seqs = sequences.make_split("train", 3, 12, 0.5, seed=1)
    seqs[0]["visible"] = seqs[0]["visible"].copy()
    seqs[0]["visible"][::2] = 0.3                                       # these frames may not be used
    batch = pairs.sample_pairs(seqs, 24, np.random.default_rng(0), max_gap=4)
    assert batch["template"].shape == (24, 32, 32, 3) and batch["search"].shape == (24, 64, 64, 3)
    for b in range(24):
        s, ti, si = batch["sequence"][b], batch["template_frame"][b], batch["search_frame"][b]
        seq = seqs[s]
        assert seq["visible"][ti] >= 0.5 and seq["visible"][si] >= 0.5 and ti < si
        if si >= ti + 4:   # the gap was widened (by 5 at a time) only because (ti, ti + 4) had no usable frame
            assert (np.asarray(seq["visible"][ti + 1:ti + 4]) < 0.5).all() and si < ti + 4 + 5 * 20
        crop, t = crops.sample_target(seq["frames"][si], batch["search_crop_box"][b], 4.0, 64)
        np.testing.assert_array_equal(crop, batch["search"][b])
        np.testing.assert_allclose(t.crop_to_frame(batch["search_box"][b] * 64), seq["boxes"][si], atol=1e-3)
        crop, t = crops.sample_target(seq["frames"][ti], seq["boxes"][ti], 2.0, 32)
        np.testing.assert_array_equal(crop, batch["template"][b])
        np.testing.assert_allclose(t.crop_to_frame(batch["template_box"][b] * 32), seq["boxes"][ti], atol=1e-3)
    # OSTrack's jitter keeps the target centre within 1.5 sqrt(w'h') of the crop centre: 3/8 of the side
    centre = batch["search_box"][:, :2] + batch["search_box"][:, 2:] / 2
    assert np.abs(centre - 0.5).max() <= 0.375 + 1 / 64


def test_unjittered_pairs_are_centred_with_analytic_size():
    seqs = sequences.make_split("train", 2, 8, 0.0, seed=2)
    batch = pairs.sample_pairs(seqs, 8, np.random.default_rng(1), center_jitter=0.0, scale_jitter=0.0)
    for b in range(8):
        w, h = seqs[batch["sequence"][b]]["boxes"][batch["search_frame"][b], 2:].astype(np.float64)
        side = math.ceil(math.sqrt(w * h) * 4.0)
        np.testing.assert_allclose(batch["search_box"][b], [0.5 - w / side / 2, 0.5 - h / side / 2, w / side, h / side],
                                   atol=1e-5)


def test_jitter_follows_ostrack():
    rng = np.random.default_rng(0)
    box = np.array([10.0, 20.0, 16.0, 9.0])
    j = np.stack([pairs.jittered_box(box, rng, 3.0, 0.25) for _ in range(4000)])
    log_ratio = np.log(j[:, 2:] / box[2:])
    assert abs(log_ratio.mean()) < 0.02 and log_ratio.std() == pytest.approx(0.25, abs=0.015)
    offset = (j[:, :2] + j[:, 2:] / 2 - (box[:2] + box[2:] / 2)) / np.sqrt(j[:, 2:].prod(-1, keepdims=True))
    assert np.abs(offset).max() <= 1.5 and np.abs(offset).max() > 1.45  # uniform in +-center_jitter / 2
    with pytest.raises(ValueError, match="visible"):
        pairs.sample_pairs([dict(frames=np.zeros((3, 8, 8, 3), np.uint8), boxes=np.ones((3, 4)),
                                 visible=np.zeros(3))], 2, rng)
    with pytest.raises(ValueError, match="batch"):
        pairs.sample_pairs([dict(frames=np.zeros((3, 8, 8, 3), np.uint8), boxes=np.ones((3, 4)),
                                 visible=np.ones(3))], 0, rng)


# --- TFDS -------------------------------------------------------------------------------------------

def test_tiny_tfds_round_trips_make_split(tmp_path):
    config = tfds_builder.config_for("tiny")
    b = tfds_builder.builder("tiny", tmp_path)
    assert set(b.info.splits) == {"train", "test", "test_view0", "test_view100"}
    for split, (name, n, length, view) in tfds_builder.split_specs(config).items():
        got = tfds_builder.load(split, "tiny", tmp_path)
        ref = sequences.make_split(name, n, length, view, config.seed)
        assert len(got) == len(ref) == n
        for g, r in zip(got, ref):
            assert g["clip"] == r["clip"] and g["object"] == r["object"]
            for key in ("frames", "boxes", "visible"):
                assert g[key].dtype == r[key].dtype
                np.testing.assert_array_equal(g[key], r[key])


def test_tfds_config_names_and_errors():
    assert tfds_builder.config_for("tiny").name == "tr6x24-te3x40-v0-100-d50-s0"
    assert tfds_builder.config_for("tiny", views=(0.0, 0.25), seed=3).name == "tr6x24-te3x40-v0-25-d50-s3"
    assert tfds_builder.view_split(0.5) == "test_view50"
    with pytest.raises(ValueError, match="accepted"):
        tfds_builder.config_for("huge")
    with pytest.raises(ValueError, match="n_train"):
        tfds_builder.config_for("tiny", n_train=0)
    with pytest.raises(ValueError, match="distinct"):
        tfds_builder.config_for("tiny", views=(0.5, 0.501))
    with pytest.raises(ValueError, match="unknown parameters"):
        tfds_builder.config_for("tiny", n_val=3)
    with pytest.raises(ValueError, match="split"):
        tfds_builder.load("test_view50", "tiny")


def test_pairs_are_causal_and_sequences_without_two_usable_frames_are_skipped_and_counted():
    rng = np.random.default_rng(3)
    frames = np.zeros((5, 24, 24, 3), np.uint8)
    boxes = np.tile([8.0, 8.0, 6.0, 6.0], (5, 1))
    one_usable = dict(frames=frames, boxes=boxes, visible=np.array([0.0, 1.0, 0.0, 0.0, 0.0]))
    late = dict(frames=frames, boxes=boxes, visible=np.array([0.0, 0.0, 0.0, 1.0, 1.0]))
    batch = pairs.sample_pairs([one_usable, late], 16, rng, template_size=8, search_size=16)
    assert batch["skipped_sequences"] == 1
    np.testing.assert_array_equal(batch["sequence"], 1)              # never the one-frame sequence
    np.testing.assert_array_equal(batch["template_frame"], 3)        # the only usable frame with a later one
    np.testing.assert_array_equal(batch["search_frame"], 4)          # never the template frame itself
    with pytest.raises(ValueError, match="two frames"):
        pairs.sample_pairs([one_usable], 2, rng)


def test_crops_pad_with_black_as_released_or_with_the_mean():
    frame = np.full((20, 20, 3), 200, np.uint8)
    box = [-30.0, -30.0, 4.0, 4.0]                                   # the crop lies wholly outside the frame
    crop, _ = crops.sample_target(frame, box, 2.0, 8)
    np.testing.assert_array_equal(crop, 0.0)
    crop, _ = crops.sample_target(frame, box, 2.0, 8, pad="mean")
    np.testing.assert_allclose(crop, 200 / 255, atol=1e-6)
    with pytest.raises(ValueError, match="pad"):
        crops.sample_target(frame, box, 2.0, 8, pad="edge")
