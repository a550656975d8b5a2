"""AVTrack's losses beside the official `wuyou3474/AVTrack` code, on the same inputs (marker `official_ref`).

The official `AVTrack` class (`lib/models/avtrack/avtrack.py`) computes the activeness loss in `forward`
and the MI loss (the masked template map x, the pasted search map y, `GlobalStatisticsNetwork`,
`DJSLoss`) in `forward_head`. Its module imports the backbone builders (deit, vision_transformer, eva:
timm) and `lib.utils.box_ops` (torchvision) at the top; the class itself uses none of them, so they are
replaced by empty modules here, and the class runs with a stand-in backbone that returns given token
features and gate probabilities, and a stand-in head. timm needs torchvision, whose PyPI wheel is built
against CUDA torch, so the Activation Module itself (`vision_transformer.py::forward_features`) does not
import with the CPU torch: no test of it here.

    JAXML_RELEASES=/work/releases python -m pytest -m official_ref tests/papers/avtrack
"""

import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.avtrack import losses

pytestmark = pytest.mark.official_ref

_TIMM_MODULES = ("lib.models.avtrack.deit", "lib.models.avtrack.vision_transformer", "lib.models.avtrack.eva",
                 "lib.models.layers.head", "lib.utils.box_ops")


def _official_avtrack(official_module, monkeypatch):
    for name in [m for m in sys.modules if m == "lib" or m.startswith("lib.")]:
        monkeypatch.delitem(sys.modules, name)           # another checkout's `lib` package, if any
    for name in _TIMM_MODULES:
        stub = types.ModuleType(name)
        stub.__getattr__ = lambda attr: None              # the builders' names, never called here
        monkeypatch.setitem(sys.modules, name, stub)
    return official_module("AVTrack", "lib.models.avtrack.avtrack")


# Boxes (x, y, w, h) as fractions of the crops, chosen to exercise the release's cell reading:
#   0: both boxes inside, 4 x 4 cells each;
#   1: search x < 0 (raised to 0), search w capped at 8, the search rows clipped at the map's edge, the
#      template 3 rows high: the overlap is 3 x 4;
#   2: the search box right of the crop: an empty overlap (x and y all zero);
#   3: halves rounded to even (2.5 -> 2, 0.5 -> 0, 8.5 -> 8, 6.5 -> 6), template 7 x 6 cells, search 8 x 8.
TEMPLATE_BOXES = np.array([[0.25, 0.25, 0.5, 0.5], [0.2, 0.3, 0.55, 0.4], [0.25, 0.25, 0.5, 0.5],
                           [0.3125, 0.0625, 0.75, 0.9]], np.float32)
SEARCH_BOXES = np.array([[0.375, 0.375, 0.25, 0.25], [-0.05, 0.7, 0.6, 0.5], [1.1, 0.2, 0.2, 0.2],
                         [0.53125, 0.40625, 0.5, 0.6]], np.float32)


def test_activeness_and_mi_losses_match_the_official_avtrack(official_module, monkeypatch):
    mod = _official_avtrack(official_module, monkeypatch)
    import torch

    b, c, gt, f, n_gated = 4, 3, 8, 16, 6
    rng = np.random.default_rng(0)
    feats = rng.standard_normal((b, gt * gt + f * f, c)).astype(np.float32)
    # per-sample mean activations 0.93, 0.47, 0.85, 0.55: their batch mean is 0.70, so the two readings differ
    means = np.array([0.93, 0.47, 0.85, 0.55], np.float32)
    offsets = rng.uniform(-0.04, 0.04, (b, n_gated)).astype(np.float32)
    probs = means[:, None] + offsets - offsets.mean(1, keepdims=True)

    class Backbone(torch.nn.Module):
        embed_dim = c

        def __init__(self):
            super().__init__()
            self.probs = [torch.tensor(probs[:, i:i + 1], requires_grad=True) for i in range(n_gated)]

        def forward(self, z, x, return_last_attn=False, is_distill=False):
            return torch.tensor(feats), {"probs_active": self.probs}

    class Head(torch.nn.Module):
        feat_sz, feat_sz_t = f, gt

        def forward(self, fmap, gt_score_map=None):
            n = fmap.shape[0]
            return torch.zeros(n, 1, f, f), torch.zeros(n, 4), torch.zeros(n, 2, f, f), torch.zeros(n, 2, f, f)

    torch.manual_seed(0)
    backbone = Backbone()
    net = mod.AVTrack(backbone, Head(), head_type="CENTER")
    net.train()
    seen = []
    net.global_stat_x.register_forward_hook(lambda m, inp, out: seen.append([t.detach().numpy() for t in inp]))
    out = net(torch.zeros(b, 3, 128, 128), torch.zeros(b, 3, 256, 256),
              torch.tensor(TEMPLATE_BOXES)[None], torch.tensor(SEARCH_BOXES)[None])
    official_spar = out["activeness_loss"]
    official_spar.backward()
    official_grad = np.concatenate([p.grad.numpy() for p in backbone.probs], axis=1)

    # The activeness loss and its gradient.
    ours = float(losses.sparsity_loss(jnp.asarray(probs), 0.7))
    np.testing.assert_allclose(ours, float(official_spar.detach()), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ours, np.mean(np.abs(means - 0.7)), rtol=1e-5)   # 0.18 by hand
    assert float(losses.batch_sparsity_loss(jnp.asarray(probs), 0.7)) < 1e-6   # the batch reading gives ~0
    ours_grad = np.asarray(jax.grad(lambda p: losses.sparsity_loss(p, 0.7))(jnp.asarray(probs)))
    np.testing.assert_allclose(ours_grad, official_grad, atol=1e-7)
    np.testing.assert_allclose(ours_grad[:, 0], np.sign(means - 0.7) / (b * n_gated), atol=1e-7)

    # The MI inputs: x (the masked template map) and y (the pasted search cells), as the statistics network saw them.
    (x_off, y_off), (x_neg_off, _) = seen
    tf = jnp.asarray(feats[:, :gt * gt].reshape(b, gt, gt, c))
    sf = jnp.asarray(feats[:, gt * gt:].reshape(b, f, f, c))
    x, y = losses.mi_inputs(tf, sf, jnp.asarray(TEMPLATE_BOXES), jnp.asarray(SEARCH_BOXES))
    np.testing.assert_array_equal(np.asarray(x), x_off.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(np.asarray(y), y_off.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(np.asarray(jnp.roll(x, -1, axis=0)), x_neg_off.transpose(0, 2, 3, 1))
    region = (np.abs(np.asarray(y)).sum(-1) > 0).sum((1, 2))
    np.testing.assert_array_equal(region, [16, 12, 0, 42])          # 4x4, 3x4, empty, 7x6 cells

    # The MI loss through our statistics network with the official weights (our flatten is (h, w, c), theirs (c, h, w)).
    sd = {k: v.detach().numpy() for k, v in net.global_stat_x.state_dict().items()}
    hw = np.arange(gt * gt * c).reshape(c, gt, gt).transpose(1, 2, 0).reshape(-1)   # ours -> official index
    perm = np.concatenate([hw, hw + gt * gt * c])
    params = {"Dense_0": {"kernel": sd["dense1.weight"].T[perm], "bias": sd["dense1.bias"]},
              "Dense_1": {"kernel": sd["dense2.weight"].T, "bias": sd["dense2.bias"]},
              "Dense_2": {"kernel": sd["dense3.weight"].T, "bias": sd["dense3.bias"]}}
    stat = losses.StatisticsNetwork(512)
    joint = stat.apply({"params": params}, x, y)
    marginal = stat.apply({"params": params}, jnp.roll(x, -1, axis=0), y)
    np.testing.assert_allclose(float(losses.jsd_mi_loss(joint, marginal)), float(out["mine_loss"]), rtol=1e-5)


def test_jsd_loss_matches_the_official_djs_loss(official_module, monkeypatch):
    mod = _official_avtrack(official_module, monkeypatch)
    import torch

    rng = np.random.default_rng(1)
    t, t_prime = rng.standard_normal((2, 16, 1)).astype(np.float32) * 3
    official = float(mod.DJSLoss()(T=torch.tensor(t), T_prime=torch.tensor(t_prime)))
    np.testing.assert_allclose(float(losses.jsd_mi_loss(jnp.asarray(t[:, 0]), jnp.asarray(t_prime[:, 0]))),
                               official, rtol=1e-6)
