"""AVTrack evaluation: metrics against hand-computed values, the tracking loop with an analytic
(network-free) predict on synthetic sequences, and the plots' files and legend numbers."""

import re

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.avtrack import crops, metrics, plots, tracker

# ----------------------------------------------------------------------------------------- metrics


def test_iou_hand_values():
    pred = np.array([[0, 0, 2, 2], [0, 0, 4, 4], [0, 0, 2, 2], [5, 5, 3, 3], [0, 0, 2, 1]], float)
    gt = np.array([[1, 1, 2, 2], [1, 1, 2, 2], [2, 0, 2, 2], [5, 5, 3, 3], [0, 0, 2, 2]], float)
    # overlap 1 / (4 + 4 - 1); contained 4 / 16; touching edges; identical; half.
    np.testing.assert_allclose(metrics.iou(pred, gt), [1 / 7, 0.25, 0.0, 1.0, 0.5], rtol=1e-12)
    np.testing.assert_allclose(metrics.iou(gt, pred), metrics.iou(pred, gt), rtol=1e-12)


def test_iou_and_center_error_accept_jax_arrays_under_jit():
    rng = np.random.default_rng(0)
    pred = np.concatenate([rng.uniform(0, 50, (6, 2)), rng.uniform(1, 20, (6, 2))], axis=1)
    gt = np.concatenate([rng.uniform(0, 50, (6, 2)), rng.uniform(1, 20, (6, 2))], axis=1)
    out = jax.jit(lambda p, g: (metrics.iou(p, g), metrics.center_error(p, g)))(jnp.asarray(pred), jnp.asarray(gt))
    chex.assert_shape(out, [(6,), (6,)])
    np.testing.assert_allclose(out[0], metrics.iou(pred, gt), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[1], metrics.center_error(pred, gt), rtol=1e-5)


def test_center_errors_hand_values():
    pred = np.array([[3, 4, 4, 4], [0, 0, 10, 20], [0, 0, 2, 2]], float)
    gt = np.array([[0, 0, 4, 4], [-5, -10, 10, 20], [0, 0, 4, 4]], float)  # 3-4-5; (5, 10); centres 1 vs 2
    np.testing.assert_allclose(metrics.center_error(pred, gt), [5.0, np.hypot(5, 10), np.sqrt(2)], rtol=1e-12)
    # Normalized: (3/4, 4/4) -> 1.25; (5/10, 10/20) -> sqrt(0.5); (1/4, 1/4) -> sqrt(2)/4.
    np.testing.assert_allclose(metrics.normalized_center_error(pred, gt), [1.25, np.sqrt(0.5), np.sqrt(2) / 4],
                               rtol=1e-12)


def test_valid_frames_excludes_nan_and_empty_ground_truth():
    gt = np.array([[0, 0, 5, 5], [np.nan] * 4, [0, 0, 0, 5], [0, 0, 5, -1], [1, np.nan, 5, 5], [2, 2, 0.5, 0.5]])
    np.testing.assert_array_equal(metrics.valid_frames(gt), [True, False, False, False, False, True])


def test_precision_and_success_curves_hand_values():
    errors = np.array([0.0, 5.0, 20.0, 20.5, 100.0])
    curve = metrics.precision_curve(errors)
    chex.assert_shape(curve, (51,))
    assert curve[0] == pytest.approx(1 / 5) and curve[20] == pytest.approx(3 / 5)
    assert curve[50] == pytest.approx(4 / 5) and curve[4] == pytest.approx(1 / 5) and curve[5] == pytest.approx(2 / 5)
    # The valid mask and NaN values both drop frames: 2 of the 3 kept frames are within 20 px.
    masked = metrics.precision_curve([0.0, np.nan, 30.0, 10.0, 1e9], [20.0], valid=[1, 1, 1, 1, 0])
    np.testing.assert_allclose(masked, [2 / 3])
    # Success counts IoU strictly above the threshold (OTB / pytracking).
    np.testing.assert_allclose(metrics.success_curve([0.5, 0.5, 0.8, 0.0], [0.0, 0.5, 0.75, 1.0]),
                               [3 / 4, 1 / 4, 1 / 4, 0.0])
    with pytest.raises(ValueError, match="no valid frames"):
        metrics.success_curve([0.5, 0.5], valid=[False, False])


@pytest.mark.parametrize("value, below", [(0.5, 10), (1.0, 20), (0.0, 0), (0.33, 7), (0.99, 20)])
def test_auc_of_constant_iou_is_fraction_of_thresholds_below(value, below):
    # gt 1 x 1 at the origin; pred 1 x v (contained) has IoU exactly v.
    n = 6
    gt = np.tile([0.0, 0.0, 1.0, 1.0], (n, 1))
    pred = gt.copy()
    pred[:, 3] = value if value > 0 else 0.0
    if value == 0.0:
        pred[:, 0] = 5.0  # disjoint
    np.testing.assert_allclose(metrics.iou(pred, gt), value, atol=1e-12)
    assert metrics.success_auc(pred, gt) == pytest.approx(100.0 * below / 21)


def test_nan_frames_are_excluded_from_every_metric():
    gt = np.array([[10, 10, 10, 10], [np.nan] * 4, [10, 10, 10, 10], [10, 10, 0, 0], [10, 10, 10, 10]], float)
    pred = np.array([[10, 10, 10, 10], [500, 500, 1, 1], [40, 10, 10, 10], [np.nan] * 4, [10, 10, 10, 5]], float)
    # Valid frames 0, 2, 4: errors 0, 30, 2.5; IoU 1, 0, 0.5.
    assert metrics.precision_at(pred, gt) == pytest.approx(100 * 2 / 3)
    assert metrics.success_auc(pred, gt) == pytest.approx(100 * (20 + 0 + 10) / (3 * 21))
    # Normalized errors 0, 3, 0.25 -> one within 0.2.
    assert metrics.normalized_precision_at(pred, gt) == pytest.approx(100 / 3)
    s = metrics.summarize([(pred, gt)])
    assert s["num_frames"] == 3 and s["avg_overlap"] == pytest.approx(50.0)
    bad = pred.copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match=r"not finite at frames \[2\]"):
        metrics.summarize([(bad, gt)])
    with pytest.raises(ValueError, match="no valid ground-truth"):
        metrics.summarize([(pred, np.full_like(gt, np.nan))])


def test_summarize_averages_curves_per_sequence():
    gt_a = np.tile([0.0, 0.0, 10.0, 10.0], (2, 1))
    gt_b = np.tile([0.0, 0.0, 10.0, 10.0], (8, 1))
    pred_a = gt_a.copy()  # perfect: precision 100, AUC 20/21
    pred_b = gt_b + [100.0, 0, 0, 0]  # lost: precision 0, AUC 0
    s = metrics.summarize([(pred_a, gt_a), (pred_b, gt_b)])
    assert s["precision"] == pytest.approx(50.0)  # frame-pooled would give 20
    assert s["auc"] == pytest.approx(0.5 * 100 * 20 / 21)
    assert s["norm_precision"] == pytest.approx(50.0)
    assert s["num_sequences"] == 2 and s["num_frames"] == 10
    chex.assert_shape([s["precision_curve"], s["success_curve"]], [(51,), (21,)])
    # The scores are the means of the per-sequence scores.
    rng = np.random.default_rng(1)
    results = []
    for t in (5, 17, 9):
        gt = np.concatenate([rng.uniform(0, 100, (t, 2)), rng.uniform(5, 30, (t, 2))], axis=1)
        results.append((gt + rng.normal(0, 6, (t, 4)), gt))
    s = metrics.summarize(results)
    assert s["precision"] == pytest.approx(np.mean([metrics.precision_at(p, g) for p, g in results]))
    assert s["auc"] == pytest.approx(np.mean([metrics.success_auc(p, g) for p, g in results]))


def test_metrics_reject_bad_shapes():
    with pytest.raises(ValueError, match=r"same shape"):
        metrics.iou(np.zeros((3, 4)), np.zeros((4, 4)))
    with pytest.raises(ValueError, match=r"\(3, 5\)"):
        metrics.center_error(np.zeros((3, 5)), np.zeros((3, 5)))
    with pytest.raises(TypeError, match="single pair"):
        metrics.summarize((np.zeros((3, 4)), np.ones((3, 4))))


# ----------------------------------------------------------------------------------------- tracker

F = 16


def _edges(profile):
    """Sub-pixel 0.5 crossings (left, right) of a [S] profile in [0, 1], in continuous pixels."""
    inside = np.flatnonzero(profile > 0.5)
    if inside.size == 0:
        return None
    a, b = inside[0], inside[-1]
    left = a - 0.5 + (0.5 - profile[a - 1]) / (profile[a] - profile[a - 1]) if a > 0 else 0.0
    right = (b + 0.5 + (profile[b] - 0.5) / (profile[b] - profile[b + 1]) if b + 1 < profile.size
             else float(profile.size))
    return left, right


def analytic_predict(template, search, as_jax=False):
    """Finds the bright rectangle in the search crop; writes a one-hot score and exact size/offset."""
    assert template.shape[0] == 1 and template.dtype == np.float32
    img = np.asarray(search[0]).mean(-1)
    s = img.shape[0]
    ex, ey = _edges(img.max(axis=0)), _edges(img.max(axis=1))
    score = np.zeros((1, F, F), np.float32)
    size = np.zeros((1, F, F, 2), np.float32)
    offset = np.zeros((1, F, F, 2), np.float32)
    if ex is None or ey is None:  # nothing seen: stay put
        cx = cy = s / 2
        w = h = s / 4
    else:
        cx, cy, w, h = (ex[0] + ex[1]) / 2, (ey[0] + ey[1]) / 2, ex[1] - ex[0], ey[1] - ey[0]
    gx, gy = cx / s * F, cy / s * F
    c, r = min(int(gx), F - 1), min(int(gy), F - 1)
    score[0, r, c] = 1.0
    size[0, r, c] = (w / s, h / s)
    offset[0, r, c] = (gx - c, gy - r)
    out = dict(score=score, size=size, offset=offset, active=np.array([[1.0, float(r), float(c)]], np.float32))
    return {k: jnp.asarray(v) for k, v in out.items()} if as_jax else out


def _sequence(n, hw, start, step, wh):
    frames = np.zeros((n,) + hw + (3,), np.uint8)
    gt = np.zeros((n, 4))
    for t in range(n):
        x, y = start[0] + step[0] * t, start[1] + step[1] * t
        frames[t, y:y + wh[1], x:x + wh[0]] = 255
        gt[t] = (x, y, wh[0], wh[1])
    return frames, gt


def test_tracks_a_moving_rectangle_with_analytic_predict():
    frames, gt = _sequence(20, (120, 160), start=(30, 40), step=(3, 2), wh=(12, 8))
    calls = []
    trk = tracker.Tracker(lambda t, s: analytic_predict(t, s, as_jax=True))
    out = tracker.run_sequence(trk, frames, gt[0], progress=lambda i, n: calls.append((i, n)))
    chex.assert_shape([out["boxes"], out["seconds"], out["extras"]["active"]], [(20, 4), (19,), (19, 3)])
    np.testing.assert_array_equal(out["boxes"][0], gt[0])
    overlaps = metrics.iou(out["boxes"], gt)
    assert overlaps.min() > 0.9, overlaps
    assert np.all(out["seconds"] > 0)
    assert calls == [(i, 20) for i in range(1, 21)]
    # The extras are the predict outputs of each tracked frame (batch axis dropped).
    np.testing.assert_array_equal(out["extras"]["active"][:, 0], 1.0)
    # The template is the crop of frame 0 around the init box.
    expected, _ = crops.sample_target(frames[0], gt[0], 2.0, 32)
    np.testing.assert_array_equal(trk.template[0], expected)


def test_box_decode_of_known_maps_gives_the_exact_frame_box():
    f = 4
    score = np.zeros((1, f, f), np.float32)
    size = np.full((1, f, f, 2), 0.9, np.float32)
    offset = np.full((1, f, f, 2), 0.9, np.float32)
    score[0, 1, 2] = 0.7
    size[0, 1, 2] = (0.5, 0.25)
    offset[0, 1, 2] = (0.25, 0.5)
    # In crop pixels (S = 64): centre ((2 + 0.25) / 4, (1 + 0.5) / 4) * 64 = (36, 24), size (32, 16).
    np.testing.assert_allclose(tracker.decode_box(score[0], size[0], offset[0], 64), [20, 16, 32, 16])
    trk = tracker.Tracker(lambda t, s: dict(score=score, size=size, offset=offset))
    trk.init(np.zeros((200, 300, 3), np.uint8), [100, 50, 20, 20])
    # Search crop: side ceil(20 * 4) = 80 around (110, 60) -> origin (70, 20), 64 / 80 = 0.8 crop px per px.
    np.testing.assert_allclose(trk.track(np.zeros((200, 300, 3), np.uint8)), [95, 40, 40, 20], rtol=1e-12)


def test_hann_window_matches_ostrack_and_prefers_the_central_peak():
    np.testing.assert_allclose(tracker.hann1d(3), [0.5, 1.0, 0.5], atol=1e-15)
    np.testing.assert_allclose(tracker.hann1d(1), [1.0])
    np.testing.assert_allclose(tracker.hann1d(F), np.hanning(F + 2)[1:-1], atol=1e-12)
    np.testing.assert_allclose(tracker.hann2d(F), np.outer(np.hanning(F + 2)[1:-1], np.hanning(F + 2)[1:-1]),
                               atol=1e-12)
    score = np.zeros((1, F, F), np.float32)
    score[0, 2, 3] = score[0, 8, 7] = 0.6  # equal peaks; the off-centre one comes first in row-major order
    size = np.full((1, F, F, 2), 0.25, np.float32)
    offset = np.full((1, F, F, 2), 0.5, np.float32)
    s = 64
    plain = tracker.decode_box(score[0], size[0], offset[0], s)
    windowed = tracker.decode_box(score[0], size[0], offset[0], s, window=tracker.hann2d(F))
    np.testing.assert_allclose(plain[:2] + plain[2:] / 2, [3.5 * 4, 2.5 * 4])
    np.testing.assert_allclose(windowed[:2] + windowed[2:] / 2, [7.5 * 4, 8.5 * 4])
    # Through the tracker: with the window the box stays near the previous centre.
    frame = np.zeros((300, 300, 3), np.uint8)
    boxes = {}
    for use in (False, True):
        trk = tracker.Tracker(lambda t, x: dict(score=score, size=size, offset=offset), hann_window=use)
        trk.init(frame, [140, 140, 16, 16])
        boxes[use] = trk.track(frame)
    centre = lambda b: b[:2] + b[2:] / 2  # noqa: E731
    assert np.linalg.norm(centre(boxes[True]) - 148) < np.linalg.norm(centre(boxes[False]) - 148)
    np.testing.assert_allclose(centre(boxes[True]), 148 + (np.array([7.5, 8.5]) * 4 - 32), rtol=1e-12)


def test_degenerate_init_boxes_and_small_frames():
    frames, gt = _sequence(4, (60, 80), start=(20, 20), step=(1, 0), wh=(10, 10))
    # Init box wholly outside the frame: the prediction is clipped back inside.
    trk = tracker.Tracker(analytic_predict)
    out = tracker.run_sequence(trk, frames, [200, 200, 10, 10])
    b = out["boxes"][1:]
    assert np.all(np.isfinite(b))
    cx, cy = b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2
    assert np.all((cx >= 0) & (cx <= 80) & (cy >= 0) & (cy <= 60))
    # Zero-size init box at the target's corner: finite boxes, w and h at least min_box_size.
    out = tracker.run_sequence(tracker.Tracker(analytic_predict), frames, [20, 20, 0, 0])
    assert np.all(np.isfinite(out["boxes"])) and np.all(out["boxes"][1:, 2:] >= 4.0)
    # Frame smaller than the search crop (side 40 > 24 px): crops pads, tracking still exact.
    small, gt = _sequence(5, (24, 24), start=(8, 8), step=(0, 0), wh=(8, 8))
    out = tracker.run_sequence(tracker.Tracker(analytic_predict), small, gt[0])
    assert metrics.iou(out["boxes"], gt).min() > 0.9
    with pytest.raises(ValueError, match="non-finite"):
        tracker.Tracker(analytic_predict).init(frames[0], [np.nan, 0, 5, 5])


def test_drifting_and_collapsing_predictions_are_clipped():
    f = 4
    score = np.zeros((1, f, f), np.float32)
    score[0, 0, 0] = 1.0
    for size_value, expected_wh in ((50.0, (80, 60)), (0.0, (4, 4))):
        trk = tracker.Tracker(lambda t, s: dict(score=score, size=np.full((1, f, f, 2), size_value, np.float32),
                                                offset=np.zeros((1, f, f, 2), np.float32)))
        frame = np.zeros((60, 80, 3), np.uint8)
        trk.init(frame, [2, 2, 10, 10])
        for _ in range(3):  # each step moves the box towards the top-left corner and out
            box = trk.track(frame)
            np.testing.assert_allclose(box[2:], expected_wh)
            assert 0 <= box[0] + box[2] / 2 <= 80 and 0 <= box[1] + box[3] / 2 <= 60


def test_bad_inputs_raise_clear_errors():
    trk = tracker.Tracker(analytic_predict)
    with pytest.raises(RuntimeError, match="before Tracker.init"):
        trk.track(np.zeros((20, 20, 3), np.uint8))
    with pytest.raises(ValueError, match=r"\(20, 20\)"):
        trk.init(np.zeros((20, 20), np.uint8), [1, 1, 5, 5])
    trk.init(np.zeros((20, 20, 3), np.uint8), [1, 1, 5, 5])
    with pytest.raises(ValueError, match=r"\(20, 20, 4\)"):
        trk.track(np.zeros((20, 20, 4), np.uint8))
    with pytest.raises(ValueError, match=r"\(5, 20, 20\)"):
        tracker.run_sequence(trk, np.zeros((5, 20, 20), np.uint8), [1, 1, 5, 5])
    ok = analytic_predict(np.zeros((1, 32, 32, 3), np.float32), np.zeros((1, 64, 64, 3), np.float32))
    for broken, pattern in (({k: v for k, v in ok.items() if k != "offset"}, "lacks"),
                            ({**ok, "size": ok["size"][..., :1]}, r"'size' must be \[1, 16, 16, 2\]"),
                            ({**ok, "score": ok["score"] - 1}, "non-negative")):
        bad = tracker.Tracker(lambda t, s, b=broken: b)
        bad.init(np.zeros((20, 20, 3), np.uint8), [1, 1, 5, 5])
        with pytest.raises(ValueError, match=pattern):
            bad.track(np.zeros((20, 20, 3), np.uint8))


# ------------------------------------------------------------------------------------------- plots


def test_plot_curves_writes_the_file_with_metric_legends(tmp_path):
    rng = np.random.default_rng(2)

    def seq(t, noise):
        gt = np.concatenate([rng.uniform(20, 200, (t, 2)), rng.uniform(10, 40, (t, 2))], axis=1)
        return gt + rng.normal(0, noise, (t, 4)), gt

    one = [seq(30, 4.0)]
    two = [seq(20, 12.0), seq(40, 25.0)]
    fig = plots.plot_curves({"ours": one, "baseline": two}, tmp_path / "curves" / "uav.png", title="toy")
    assert (tmp_path / "curves" / "uav.png").stat().st_size > 5000
    ax_p, ax_s = fig.axes

    def legend_numbers(ax):
        matches = [re.fullmatch(r"(.*) \[([\d.]+)\]", t.get_text()) for t in ax.get_legend().get_texts()]
        return {m.group(1): float(m.group(2)) for m in matches}

    prec, auc = legend_numbers(ax_p), legend_numbers(ax_s)
    assert prec["ours"] == pytest.approx(metrics.precision_at(*one[0]), abs=0.05)
    assert auc["ours"] == pytest.approx(metrics.success_auc(*one[0]), abs=0.05)
    assert prec["baseline"] == pytest.approx(np.mean([metrics.precision_at(*r) for r in two]), abs=0.05)
    assert auc["baseline"] == pytest.approx(np.mean([metrics.success_auc(*r) for r in two]), abs=0.05)
    # The plotted curve is the summary's curve in %.
    line = [ln for ln in ax_s.get_lines() if ln.get_label().startswith("ours")][0]
    np.testing.assert_allclose(line.get_ydata(), 100 * metrics.summarize(one)["success_curve"])


def test_draw_boxes_strip(tmp_path):
    frames, gt = _sequence(25, (40, 50), start=(5, 5), step=(1, 1), wh=(8, 6))
    pred = gt + 1.0
    gt_nan = gt.copy()
    gt_nan[10] = np.nan
    fig = plots.draw_boxes(frames, {"AVTrack": pred}, tmp_path / "strip.png", every=10, gt=gt_nan)
    assert (tmp_path / "strip.png").stat().st_size > 1000
    assert len(fig.axes) == 3  # frames 0, 10, 20
    for ax, i in zip(fig.axes, (0, 10, 20)):
        rects = {p.get_label(): p for p in ax.patches}
        np.testing.assert_allclose([*rects["AVTrack"].get_xy(), rects["AVTrack"].get_width(),
                                    rects["AVTrack"].get_height()], pred[i])
        assert ("ground truth" in rects) == (i != 10)
    with pytest.raises(ValueError, match=r"\[25, 4\]"):
        plots.draw_boxes(frames, {"x": pred[:3]}, tmp_path / "bad.png")
