"""DiPmark experiments: unbiasedness, quality/detectability/resilience from one set of generations,
cost, and `reproduce` (all of them at one scale).

`dipmark/watermark` generates continuations of held-out prompts with SmolLM2-135M-Instruct at
temperature 1 (no top-k by default; `top_k` cuts before the watermark, which keeps DiPmark unbiased
for the top-k distribution) for no watermark, DiPmark over an alpha grid and KGW over a delta grid,
with the same sampling keys for every configuration; the token ids are cached in the workdir
(`generations.npz`), so a rerun resumes. From them, through the pure functions of
`jaxml.papers.dipmark.metrics`: the expected NLL shift of each watermark and the perplexity under
the unwatermarked model (bootstrap CIs, paired differences against no watermark), TPR at 1% FPR
against length (the empirical threshold on the unwatermarked generations' scores, and Hoeffding's),
TPR under random token substitution, and the throughput of the warm batches. Each experiment
returns the paper's claims with verdicts computed from those numbers.

`config.mode` ('ours' by default, or 'official': the release's permutation family, seeds, green
rule, history rule and top-k 50 before the reweight, see `official.py`) selects the watermark and
detector family; every detection metric carries it in its name (`tpr_emp/<mode>/L200/...`).
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import pathlib
import random
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxml import progress
from jaxml.core import registry
from jaxml.core.benchmark import median_ms
from jaxml.core.experiment import Claim, Result, gather_parts, make_workdir, pyplot, save_figure, verdict
from jaxml.papers.dipmark import data, detect, keys, official, reweight
from jaxml.papers.dipmark import metrics as metrics_lib

NONE = "none"
CONTROL = "none_s"   # a second unwatermarked sample with other sampling keys: the noise floor of quality


def _unmarked(label: str) -> bool:
    return label == NONE or label.startswith(CONTROL)


def experiment_key(seed: int = 42, mode: str = "ours") -> bytes:
    """The private key of the experiments: 1024 random bits from `random.Random(seed)`, 128 bytes,
    little-endian in mode 'ours' (the runs measured so far) and big-endian in 'official' (the
    release's `random.seed(42); random.getrandbits(1024).to_bytes(128, "big")`, the same key bytes)."""
    return random.Random(seed).getrandbits(1024).to_bytes(128, "big" if reweight.check_mode(mode) == "official"
                                                          else "little")


def mode_of(config) -> str:
    """The config's watermark mode ('ours' when unset), checked."""
    return reweight.check_mode(config.get("mode", "ours"))


def top_k_of(config) -> int:
    """The config's top-k: `config.top_k`, or for -1 the mode's default (ours: 0 = none; official:
    50, transformers' default in every run of the release)."""
    top_k = config.get("top_k", 0)
    if top_k == -1:
        return official.TOP_K if mode_of(config) == "official" else 0
    return top_k


def load_model(config):
    """`(model, params, tokenizer or None)`: SmolLM2-135M-Instruct, or a tiny random Llama for tests."""
    if config.model == "smollm2":
        from jaxml.models.llama import load_smollm2
        return load_smollm2()
    if config.model != "tiny":
        raise ValueError(f"model {config.model!r}; accepted: 'smollm2', 'tiny'")
    return (*tiny_model(int(config.vocab_size)), None)


@functools.lru_cache(maxsize=4)
def tiny_model(vocab_size: int, max_len: int = 256):
    """`(model, params)`: a 2-layer Llama with random weights drawn in NumPy (shapes from
    `jax.eval_shape`: no op-by-op compilation of an eager `init`), one per process and size, at
    flax's default scales: N(0, 1 / fan_in) for the embedding (fan_in = its width) and the
    kernels, norm scales 1. Its next-token distributions are broad (a watermark has room to act)."""
    from jaxml.models.llama import Llama, LlamaConfig

    model = Llama(LlamaConfig(vocab_size=vocab_size, hidden=32, layers=2, heads=4, kv_heads=2, mlp_hidden=64,
                              max_len=max_len, rope_theta=100.0))
    x = jnp.zeros((1, 4), jnp.int32)
    shapes = jax.eval_shape(model.init, jax.random.PRNGKey(0), x, x)["params"]
    rng = np.random.default_rng(0)

    def draw(path, leaf):
        name = jax.tree_util.keystr(path)
        if leaf.ndim == 1:
            return jnp.ones(leaf.shape, leaf.dtype)
        scale = 1 / math.sqrt(leaf.shape[1] if "embed" in name else leaf.shape[0])
        return jnp.asarray(rng.standard_normal(leaf.shape) * scale, leaf.dtype)

    return model, jax.tree_util.tree_map_with_path(draw, shapes)


def load_prompts(config, tokenizer) -> data.Prompts:
    if tokenizer is None:   # tiny model: random token prompts
        rng = np.random.default_rng(config.seed)
        n = config.n_continuation + config.n_summarisation
        return data.Prompts([rng.integers(0, config.vocab_size, 8).tolist() for _ in range(n)],
                            ["continuation"] * n, ["random"] * n)
    return data.make_prompts(tokenizer, tuple(config.corpora), config.n_continuation, config.n_summarisation,
                             config.prompt_tokens, seed=config.seed)


def watermarks(config, key: bytes, vocab_size: int) -> dict[str, reweight.Watermark | None]:
    """label -> processor (None for no watermark): DiPmark over `alphas`, KGW over `deltas`, in the
    config's mode."""
    mode = mode_of(config)
    dip = {f"dipmark_a{a:g}": reweight.dipmark(key, vocab_size, alpha=a, mode=mode) for a in config.alphas}
    soft = {f"kgw_d{d:g}": reweight.kgw(key, vocab_size, delta=d, gamma=0.5, mode=mode) for d in config.deltas}
    # interleaved from the largest alpha and delta down, so a partial run has both methods
    dip_labels, soft_labels = sorted(dip, reverse=True), sorted(soft, reverse=True)
    out = {NONE: None}
    out.update({f"{CONTROL}{s}": None for s in config.get("control_seeds", ())})
    for i in range(max(len(dip), len(soft))):
        for labels, table in ((dip_labels, dip), (soft_labels, soft)):
            if i < len(labels):
                out[labels[i]] = table[labels[i]]
    return out


def sampling_options(config):
    """Temperature `config.temperature`; top-k `top_k_of(config)` (0: none) cut *before* the
    watermark (`filter_order='before_processor'`, also the release's order), so that DiPmark stays
    unbiased for the top-k distribution."""
    from jaxml.llm.base import SamplingOptions

    return SamplingOptions(temperature=config.temperature, top_k=top_k_of(config), filter_order="before_processor")


def generate_all(config, model, params, tokenizer, prompts: data.Prompts, wms: dict, workdir: pathlib.Path
                 ) -> tuple[dict[str, list[np.ndarray]], dict[str, list[float]]]:
    """Generated token ids (stop token excluded) per label, cached in `workdir/generations.npz`.

    Prompts of one task are batched together (similar lengths); batch b uses the same PRNG key for
    every label. The loop runs batches outer and labels inner, so from the second batch on each
    label's program is compiled and the labels of one batch are timed back to back (a paired
    measurement of the processors' cost). Returns `(ids per label, seconds per decode step of
    each batch, per label)` (an empty list for labels read from the cache).
    """
    from jaxml.llm import generate as generate_lib

    cache = workdir / "generations.npz"
    fingerprint = _fingerprint(config, prompts)
    stored = {}
    if cache.exists():
        with np.load(cache, allow_pickle=False) as f:
            if str(f["fingerprint"]) == fingerprint:
                stored = {k: f[k] for k in f.files if k != "fingerprint"}
    options = sampling_options(config)
    stop_ids = tokenizer.stop_ids if tokenizer is not None else ()
    pad_id = tokenizer.pad_id if tokenizer is not None else 0
    order = sorted(range(len(prompts.tokens)), key=lambda i: (prompts.task[i], len(prompts.tokens[i])))
    batches = [order[start:start + config.batch_size] for start in range(0, len(order), config.batch_size)]
    for label in wms:
        if f"{label}/done" not in stored:
            stored[f"{label}/tokens"] = np.zeros((len(order), config.max_new_tokens), np.int32)
            stored[f"{label}/lengths"] = np.zeros(len(order), np.int32)
            stored[f"{label}/done"] = np.zeros(len(batches), bool)
    seconds = {label: [] for label in wms}
    for b, idx in enumerate(batches):
        todo = [label for label in wms if not stored[f"{label}/done"][b]]
        for label in todo:
            sample_seed = config.seed + (7919 * int(label[len(CONTROL):]) if label.startswith(CONTROL) else 0)
            t0 = time.perf_counter()
            res = generate_lib.generate(model, params, [prompts.tokens[i] for i in idx],
                                        max_new_tokens=config.max_new_tokens, sampling=options, stop_ids=stop_ids,
                                        pad_id=pad_id, key=jax.random.PRNGKey(1000 * sample_seed + b),
                                        logits_processor=wms[label])
            seconds[label].append((time.perf_counter() - t0) / res.steps)
            stored[f"{label}/tokens"][idx], stored[f"{label}/lengths"][idx] = res.tokens, res.lengths
            stored[f"{label}/done"][b] = True
        if todo:
            np.savez(cache, fingerprint=np.array(fingerprint), **stored)
            progress.log(f"dipmark: generated batch {b + 1}/{len(batches)} ({len(idx)} x {config.max_new_tokens} "
                         f"tokens) for {len(todo)} configurations")
    out = {label: [row[:n] for row, n in zip(stored[f"{label}/tokens"], stored[f"{label}/lengths"])] for label in wms}
    return out, seconds


def _fingerprint(config, prompts: data.Prompts) -> str:
    mode = [] if mode_of(config) == "ours" else [mode_of(config)]   # ours: the caches of the runs before modes
    return json.dumps([config.model, config.max_new_tokens, config.temperature, top_k_of(config), config.seed,
                       config.batch_size, *mode,
                       [list(map(int, t)) for t in prompts.tokens]])


def perplexities(model, params, prompts: data.Prompts, generations: list[np.ndarray], pad_id: int) -> np.ndarray:
    """Per-text perplexity [n] of each generation given its prompt under the unwatermarked model
    (NaN for an empty generation)."""
    from jaxml.llm import generate as generate_lib

    keep = [i for i, g in enumerate(generations) if len(g)]
    logps = generate_lib.score(model, params, [prompts.tokens[i] for i in keep], [generations[i] for i in keep],
                               pad_id=pad_id, batch_size=16)
    out = np.full(len(generations), np.nan)
    out[keep] = [math.exp(-float(np.mean(lp))) for lp in logps]
    return out


def expected_nll_shift(model, params, prompts: data.Prompts, generations: list[np.ndarray], wms: dict,
                       key: bytes, rows_per_pass: int = 4, options=None) -> dict[str, np.ndarray]:
    """Per-text mean over generated positions of E_{x~P'}[-log P(x)] - E_{x~P}[-log P(x)] (nats),
    `metrics.nll_shift`.

    Teacher-forced on unwatermarked generations: at each position the model's next-token
    distribution P and its reweight P' under each processor (the context code of that position,
    the repeated-code rule ignored). The shift is linear in P', so distribution preservation
    (E_key P' = P) makes its mean over positions (fresh seeds) zero, with far less noise than the
    perplexity of sampled text; KGW's is positive. With `options` (SamplingOptions) that cut top-k
    or top-p, P is the filtered distribution, as the processor sees it with filters before it.
    The seeds are the watermarks' own (their mode's); `key` is kept for the callers.
    Returns label -> float [n texts] (NaN if empty).
    """
    from jaxml.llm.generate import filter_logits

    width = keys.CONTEXT_WIDTH
    rows = [i for i, g in enumerate(generations) if len(g)]
    out = {label: np.full(len(generations), np.nan) for label, wm in wms.items() if wm is not None}
    if not rows or not out:
        return out
    max_new = max(len(g) for g in generations)
    longest = max(len(prompts.tokens[i]) + len(generations[i]) for i in rows)
    length = min(-(-longest // 16) * 16, model.config.max_len)   # one padded length for all passes

    @jax.jit
    def forward(params, tokens, valid):   # params an argument: closed over, XLA would fold them as constants
        positions = jnp.maximum(jnp.cumsum(valid, axis=1) - 1, 0)
        return model.apply({"params": params}, tokens, positions, key_valid=valid)[0]

    def shift(logits, seeds, mask, wm):
        if options is not None:
            logits = filter_logits(logits, options)
        return metrics_lib.nll_shift(logits, wm.apply(logits, seeds), mask)

    fns = {label: jax.jit(functools.partial(shift, wm=wm)) for label, wm in wms.items() if wm is not None}
    seeder = next(wm for wm in wms.values() if wm is not None)   # one key and mode for all
    for start in range(0, len(rows), rows_per_pass):
        chunk = rows[start:start + rows_per_pass]
        tokens = np.zeros((rows_per_pass, length), np.int32)
        valid = np.zeros((rows_per_pass, length), bool)
        valid[:, 0] = True   # filler rows of the last pass: one token
        for r, i in enumerate(chunk):
            seq = np.concatenate([np.asarray(prompts.tokens[i]), generations[i]]).astype(np.int32)
            tokens[r, :len(seq)], valid[r, :len(seq)] = seq, True
        logits = forward(params, jnp.asarray(tokens), jnp.asarray(valid))
        for r, i in enumerate(chunk):
            plen, n = len(prompts.tokens[i]), len(generations[i])
            at = np.clip(np.arange(plen - 1, plen - 1 + max_new), 0, length - 1)    # predicting generated token t
            padded = np.concatenate([np.full(width, -1), tokens[r]])                  # -1: no token before the start
            codes = np.stack([padded[at + 1 + j] for j in range(width)], axis=1)      # tokens at[t]-4 .. at[t]
            seeds = seeder.seeds(jnp.asarray(codes, jnp.int32))
            mask = jnp.arange(max_new) < n
            for label, fn in fns.items():
                out[label][i] = float(fn(logits[r, at], seeds, mask))
    return out


def _score_at(detector: detect.Detector, positions: np.ndarray, rows: np.ndarray, length: int) -> detect.Scores:
    """Scores of the first `length` tokens (length - first_scored scored) of the selected rows."""
    green, n = detector.green_counts(positions[rows], upto=length - detector.first_scored)
    return detector.statistics(green, n)


def quality_metrics(ppl: dict[str, np.ndarray], shifts: dict[str, np.ndarray],
                    lengths: dict[str, np.ndarray]) -> dict[str, float]:
    """Perplexity and NLL (mean, bootstrap CI, paired difference to no watermark) per label of `ppl`
    (may be empty), and the expected NLL shift (mean, CI) per watermark."""
    out = {}
    for label, values in ppl.items():
        mean, lo, hi = metrics_lib.mean_ci(values)
        out.update({f"ppl/{label}": mean, f"ppl_ci_low/{label}": lo, f"ppl_ci_high/{label}": hi})
        # log-perplexity (mean NLL per token of each text): less dominated by a few outlying texts
        mean, lo, hi = metrics_lib.mean_ci(np.log(values))
        out.update({f"nll/{label}": mean, f"nll_ci_low/{label}": lo, f"nll_ci_high/{label}": hi})
        if label == NONE:
            continue
        for name, transform in (("ppl", lambda x: x), ("nll", np.log)):
            mean, lo, hi = metrics_lib.paired_difference_ci(transform(values), transform(ppl[NONE]))
            out.update({f"{name}_diff_vs_none/{label}": mean, f"{name}_diff_ci_low/{label}": lo,
                        f"{name}_diff_ci_high/{label}": hi})
    out.update({f"mean_length/{label}": float(np.mean(n)) for label, n in lengths.items()})
    for label, values in shifts.items():
        mean, lo, hi = metrics_lib.mean_ci(values)
        out.update({f"nll_shift/{label}": mean, f"nll_shift_ci_low/{label}": lo, f"nll_shift_ci_high/{label}": hi})
        _, lo, hi = metrics_lib.mean_ci(values, level=0.99)   # the claim's test: a percentile bootstrap over few
        out.update({f"nll_shift_ci99_low/{label}": lo, f"nll_shift_ci99_high/{label}": hi})   # texts undercovers
    return out


Z_NORMAL_1PCT = 2.3263478740408408   # one-sided N(0, 1) quantile for KGW's z-test


def detection_metrics(detector: detect.Detector, positions: dict[str, np.ndarray], lengths: dict[str, np.ndarray],
                      human: np.ndarray | None, text_lengths, fpr: float = 0.01) -> dict[str, float]:
    """Per length L: the empirical threshold at `fpr` on the unwatermarked generations (gamma 0.5),
    the FPR of it and of the Hoeffding threshold on human text and a second unwatermarked sample,
    and per watermark the TPR at both thresholds, the KGW z-test's and the official min-p's.
    Every name carries the detector's mode: `<stem>/<mode>/L<length>[/<label>]`."""
    col = list(detector.gammas).index(0.5)
    rate = metrics_lib.detection_rate
    out = {}
    for length in text_lengths:
        tag = f"{detector.mode}/L{length}"
        null = _score_at(detector, positions[NONE], np.flatnonzero(lengths[NONE] >= length), length)
        threshold = metrics_lib.empirical_threshold(null.score[:, col], fpr)
        out[f"threshold_emp/{tag}"] = threshold
        out[f"n_null/{tag}"] = float(len(null.n))
        out[f"fpr_hoeffding_gen/{tag}"] = rate(
            null.score[:, col], detect.HOEFFDING_THRESHOLD_1PCT, strict=False)
        out[f"fpr_minp_gen/{tag}"] = rate(-null.min_p_value_uncorrected, -fpr, strict=False)
        for label in positions:   # an independent unwatermarked sample at the same threshold
            if label.startswith(CONTROL):
                control = _score_at(detector, positions[label], np.flatnonzero(lengths[label] >= length), length)
                out[f"fpr_emp_control/{tag}/{label}"] = rate(control.score[:, col], threshold)
        if human is not None:
            h = _score_at(detector, human, np.arange(len(human)), length)
            out[f"fpr_emp_human/{tag}"] = rate(h.score[:, col], threshold)
            out[f"fpr_hoeffding_human/{tag}"] = rate(
                h.score[:, col], detect.HOEFFDING_THRESHOLD_1PCT, strict=False)
            out[f"fpr_kgw_z_human/{tag}"] = rate(h.kgw_z[:, col], Z_NORMAL_1PCT, strict=False)
            out[f"fpr_minp_human/{tag}"] = rate(-h.min_p_value_uncorrected, -fpr, strict=False)
        for label in positions:
            rows = np.flatnonzero(lengths[label] >= length)
            if _unmarked(label) or not len(rows):
                continue
            s = _score_at(detector, positions[label], rows, length)
            out[f"n/{tag}/{label}"] = float(len(rows))
            out[f"tpr_emp/{tag}/{label}"] = rate(s.score[:, col], threshold)
            out[f"tpr_hoeffding/{tag}/{label}"] = rate(
                s.score[:, col], detect.HOEFFDING_THRESHOLD_1PCT, strict=False)
            out[f"tpr_kgw_z/{tag}/{label}"] = rate(s.kgw_z[:, col], Z_NORMAL_1PCT, strict=False)
            out[f"tpr_minp/{tag}/{label}"] = rate(-s.min_p_value_uncorrected, -fpr, strict=False)
            out[f"mean_score/{tag}/{label}"] = float(s.score[:, col].mean())
    return out


def attack_metrics(detector: detect.Detector, gens: dict[str, list[np.ndarray]], length: int, threshold: float,
                   epsilons, vocab: int, seed: int) -> dict[str, float]:
    """TPR after random substitution at each epsilon of the first `length` tokens of the texts
    that reached it, at the unattacked empirical threshold and at Hoeffding's (gamma 0.5); names
    `<stem>/<mode>/...` as `detection_metrics`."""
    col = list(detector.gammas).index(0.5)
    mode = detector.mode
    out = {}
    for label, g in gens.items():
        texts = [x[:length] for x in g if len(x) >= length]
        if _unmarked(label) or not texts:
            continue
        out[f"n_attack/{mode}/{label}"] = float(len(texts))
        for eps in epsilons:
            s = detector.score(detect.substitute(texts, eps, vocab, seed=seed))
            out[f"tpr_attack_emp/{mode}/eps{eps:g}/{label}"] = metrics_lib.detection_rate(s.score[:, col], threshold)
            out[f"tpr_attack_hoeffding/{mode}/eps{eps:g}/{label}"] = metrics_lib.detection_rate(
                s.score[:, col], detect.HOEFFDING_THRESHOLD_1PCT, strict=False)
    for eps in epsilons:
        out[f"untouched_fraction/{mode}/eps{eps:g}"] = metrics_lib.untouched_fraction(eps, detector.context_width)
    return out


def throughput_metrics(seconds: dict[str, list[float]]) -> dict[str, float]:
    """Generation throughput of each watermark relative to none, from the warm batches (the second
    on) of `generate_all`, timed back to back: `metrics.throughput_ratio` of seconds per step."""
    out = {}
    plain = seconds.get(NONE, [])[1:]
    for label, values in seconds.items():
        if _unmarked(label) or len(values) < 2 or len(plain) != len(values) - 1:
            continue
        out[f"generation_throughput_ratio/{label}"] = metrics_lib.throughput_ratio(values[1:], plain)
        out[f"n_timed_batches/{label}"] = float(len(plain))
    return out


MIN_TEXTS = 10   # fewer texts per configuration: a claim's verdict is 'not comparable'
MIN_TIMED_ROUNDS = 3   # fewer paired timings: the throughput ratio is too noisy for a verdict


def _fmt_ci(metrics: dict, stem: str, label: str, digits: int = 3, ci: str = "_ci") -> str:
    return (f"{metrics[f'{stem}/{label}']:+.{digits}f} [{metrics[f'{stem}{ci}_low/{label}']:+.{digits}f}, "
            f"{metrics[f'{stem}{ci}_high/{label}']:+.{digits}f}]")


def watermark_claims(m: dict[str, float], config, n_texts: int) -> list[Claim]:
    """The paper's claims on quality, detectability and resilience, from the metrics of `watermark`."""
    comparable = config.model != "tiny" and n_texts >= MIN_TEXTS
    mode = mode_of(config)
    scale = (f"{config.model}, {n_texts} prompts x {config.max_new_tokens} new tokens, T = {config.temperature:g}"
             if config.model != "tiny" else f"tiny random Llama, {n_texts} random prompts") + f"; mode {mode}"
    dips = [f"dipmark_a{a:g}" for a in config.alphas]
    kgws = [f"kgw_d{d:g}" for d in config.deltas]
    head = f"dipmark_a{config.headline_alpha:g}"
    claims = []
    contains_zero = [m[f"nll_shift_ci99_low/{k}"] <= 0 <= m[f"nll_shift_ci99_high/{k}"] for k in dips]
    kgw_positive = [m[f"nll_shift_ci99_low/{k}"] > 0 for k in kgws]
    ours = "; ".join([f"DiPmark alpha {k[len('dipmark_a'):]}: {_fmt_ci(m, 'nll_shift', k, 4, '_ci99')}" for k in dips]
                     + [f"KGW delta {k[len('kgw_d'):]}: {_fmt_ci(m, 'nll_shift', k, 4, '_ci99')}" for k in kgws])
    claims.append(Claim(
        text=("DiPmark preserves the text distribution (E_key[P'] = P): its expected NLL shift under the "
              "unwatermarked model is 0 (the 99% CI contains 0) while KGW's is positive"),
        ours=f"expected NLL shift, nats/token [99% CI]: {ours} ({scale})",
        verdict=verdict(all(contains_zero) and all(kgw_positive) and bool(kgws) if comparable else None)))
    longest = max(config.lengths)
    if f"tpr_hoeffding/{mode}/L{longest}/{head}" in m:
        tpr, emp = m[f"tpr_hoeffding/{mode}/L{longest}/{head}"], m[f"tpr_emp/{mode}/L{longest}/{head}"]
        n, n_null = int(m[f"n/{mode}/L{longest}/{head}"]), int(m[f"n_null/{mode}/L{longest}"])
        human = f"fpr_emp_human/{mode}/L{longest}" in m
        hoeffding_fpr = (f" (its FPR on {config.n_human} human text windows: "
                         f"{m[f'fpr_hoeffding_human/{mode}/L{longest}']:.3f})" if human else "")
        emp_fpr = f"; its FPR on the human windows: {m[f'fpr_emp_human/{mode}/L{longest}']:.3f}" if human else ""
        claims.append(Claim(
            text=("DiPmark is detectable from the key alone (no model, no prompt): high TPR at 1% FPR "
                  "(we require >= 0.9 at Hoeffding's threshold, whose FPR is <= 1% by theory)"),
            ours=(f"TPR at {longest} tokens, alpha {config.headline_alpha:g}, gamma 0.5: {tpr:.2f} at Hoeffding's "
                  f"threshold{hoeffding_fpr}; {emp:.2f} at the empirical threshold (99th percentile of {n_null} "
                  f"unwatermarked generations{emp_fpr}); n = {n} ({scale})"),
            verdict=verdict(tpr >= 0.9 if comparable and n >= MIN_TEXTS else None)))
    eps = config.claim_epsilon
    key = f"tpr_attack_hoeffding/{mode}/eps{eps:g}/{head}"
    if key in m:
        n = int(m[f"n_attack/{mode}/{head}"])
        kgw = "; ".join(f"KGW delta {k[len('kgw_d'):]}: {m[f'tpr_attack_hoeffding/{mode}/eps{eps:g}/{k}']:.2f}"
                        for k in kgws if f"tpr_attack_hoeffding/{mode}/eps{eps:g}/{k}" in m)
        claims.append(Claim(
            text=(f"DiPmark is resilient: it stays detectable after {eps:.0%} of the tokens are replaced at random "
                  f"(we require TPR >= 0.8 at Hoeffding's 1% threshold)"),
            ours=(f"TPR after substitution at eps = {eps:g}, first {config.attack_length} tokens: DiPmark alpha "
                  f"{config.headline_alpha:g} {m[key]:.2f} "
                  f"(unattacked {m[f'tpr_hoeffding/{mode}/L{config.attack_length}/{head}']:.2f})"
                  + (f"; {kgw}" if kgw else "")
                  + f"; n = {n}; {m[f'untouched_fraction/{mode}/eps{eps:g}']:.0%} of the scored "
                  f"tokens keep token and context ({scale})"),
            verdict=verdict(m[key] >= 0.8 if comparable and n >= MIN_TEXTS else None)))
    ratio_key = f"generation_throughput_ratio/{head}"
    if config.throughput_claim and ratio_key in m:
        kgw = "; ".join(f"KGW delta {k[len('kgw_d'):]}: {m[f'generation_throughput_ratio/{k}']:.3f}x"
                        for k in kgws if f"generation_throughput_ratio/{k}" in m)
        rounds = int(m[f"n_timed_batches/{head}"])
        claims.append(cost_claim(m[ratio_key], kgw, f"{rounds} warm batch(es) of {config.batch_size} timed back to "
                                 f"back during the watermark generation ({scale})",
                                 comparable and rounds >= MIN_TIMED_ROUNDS))
    return claims


def cost_claim(ratio: float, others: str, setting: str, comparable: bool) -> Claim:
    """The efficiency claim from a throughput ratio (watermarked / unwatermarked tokens per second)."""
    return Claim(
        text=("DiPmark is efficient: generating with it costs little over generating without it "
              "(we require a throughput ratio >= 0.85)"),
        ours=f"throughput with DiPmark {ratio:.3f}x of without" + (f" ({others})" if others else "") + f"; {setting}",
        verdict=verdict(ratio >= 0.85 if comparable else None))


@registry.experiment("dipmark/watermark")
def watermark(config, workdir) -> Result:
    """Perplexity, TPR at 1% FPR against length, and TPR under substitution, per watermark."""
    workdir = make_workdir(workdir)
    mode = mode_of(config)
    key = experiment_key(config.key_seed, mode)
    model, params, tok = load_model(config)
    vocab = model.config.vocab_size
    prompts = load_prompts(config, tok)
    wms = watermarks(config, key, vocab)
    gens, seconds = generate_all(config, model, params, tok, prompts, wms, workdir)
    pad_id = tok.pad_id if tok is not None else 0
    lengths = {label: np.array([len(x) for x in g]) for label, g in gens.items()}

    # Quality: the expected NLL shift on the unwatermarked texts' contexts (no sampling noise), and the
    # perplexity of the sampled texts under the unwatermarked model (scoring is slow on CPU: optional,
    # and cached for the same generations).
    ppl = {}
    if config.sampled_perplexity:
        ppl_cache = workdir / "perplexities.json"
        fingerprint = _fingerprint(config, prompts)
        cached = json.loads(ppl_cache.read_text()) if ppl_cache.exists() else {}
        if cached.get("fingerprint") != fingerprint:
            cached = {}
        ppl = {label: np.asarray(cached[label], np.float64) if label in cached
               else perplexities(model, params, prompts, g, pad_id) for label, g in gens.items()}
        ppl_cache.write_text(json.dumps({"fingerprint": fingerprint, **{k: v.tolist() for k, v in ppl.items()}}))
    shifts = expected_nll_shift(model, params, prompts, gens[NONE], wms, key, options=sampling_options(config))
    metrics = quality_metrics(ppl, shifts, lengths)

    # Detection at gamma = 0.5 (the DiPmark score Phi; KGW's z is a monotone transform of it at fixed gamma).
    detector = detect.Detector(key, vocab, gammas=tuple(config.gammas), mode=mode)
    first = detector.first_scored
    positions = {label: detector.positions([x if len(x) > first else np.zeros(first + 1, np.int64) for x in g])[0]
                 for label, g in gens.items()}   # too short: never scored below
    human = None
    if tok is not None and config.n_human:
        windows = data.human_windows(tok, tuple(config.corpora), n=config.n_human, length=max(config.lengths))
        human = detector.positions(windows)[0]
    metrics.update(detection_metrics(detector, positions, lengths, human, config.lengths))
    metrics.update(attack_metrics(detector, gens, config.attack_length,
                                  metrics[f"threshold_emp/{mode}/L{config.attack_length}"], config.epsilons, vocab,
                                  config.seed))
    metrics.update(throughput_metrics(seconds))
    metrics.update({f"seconds_per_step/{k}": float(np.median(v[1:])) for k, v in seconds.items() if len(v) > 1})
    (workdir / "metrics.json").write_text(json.dumps(metrics, indent=1))
    figures = [_plot_watermark(workdir / "dipmark_watermark.png", metrics, list(gens), config)]
    headline = f"nll_shift/dipmark_a{config.headline_alpha:g}"
    return Result(metrics=metrics, headline=headline, figures=figures,
                  claims=watermark_claims(metrics, config, len(prompts.tokens)),
                  notes=(f"{len(prompts.tokens)} prompts ({config.n_continuation} continuation, {config.n_summarisation} "
                         f"summarisation) x {config.max_new_tokens} new tokens, {config.model}, temperature "
                         f"{config.temperature:g}, top-k {top_k_of(config) or 'none'} (before the watermark); "
                         f"mode {mode} "
                         f"(permutation family, seeds, green and history rules); gamma = 0.5; FPR threshold = 99th "
                         f"percentile of the unwatermarked generations' scores, or Hoeffding's."))


def _plot_watermark(path, metrics, labels, config) -> str:
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    marked = [lab for lab in labels if not _unmarked(lab)]
    for lab in marked:
        axes[0].plot(config.lengths, [metrics.get(f"tpr_emp/{mode_of(config)}/L{L}/{lab}", np.nan)
                                      for L in config.lengths], marker="o", label=lab)
    axes[0].set(xlabel="generated tokens", ylabel="TPR at 1% FPR (empirical threshold)",
                title=f"detectability (mode {mode_of(config)})")
    axes[0].legend(fontsize=7)
    scored = [lab for lab in labels if f"ppl/{lab}" in metrics]
    means = [metrics[f"ppl/{lab}"] for lab in scored]
    err = np.array([[m - metrics[f"ppl_ci_low/{lab}"], metrics[f"ppl_ci_high/{lab}"] - m]
                    for m, lab in zip(means, scored)]).T.reshape(2, -1)
    axes[1].bar(range(len(scored)), means, yerr=err, capsize=3)
    axes[1].set_xticks(range(len(scored)), scored, rotation=45, ha="right", fontsize=7)
    axes[1].set(ylabel="perplexity (unwatermarked model), 95% CI",
                title="quality of sampled text" if scored else "sampled-text perplexity: not run at this scale")
    shifts = [metrics[f"nll_shift/{lab}"] for lab in marked]
    err = np.array([[s - metrics[f"nll_shift_ci_low/{lab}"], metrics[f"nll_shift_ci_high/{lab}"] - s]
                    for s, lab in zip(shifts, marked)]).T.reshape(2, -1)
    axes[2].bar(range(len(marked)), shifts, yerr=err, capsize=3)
    axes[2].axhline(0, color="k", lw=0.8)
    axes[2].set_xticks(range(len(marked)), marked, rotation=45, ha="right", fontsize=7)
    axes[2].set(ylabel="expected NLL shift, nats/token, 95% CI", title="distribution preservation")
    return save_figure(fig, path)


# --- Unbiasedness --------------------------------------------------------------------------------

UNBIASED_TOLERANCE = 1e-5   # float32 rounding of sums of V <= 5 probabilities is ~1e-7; a bias is >= 1e-3


@registry.experiment("dipmark/unbiased")
def unbiased(config, workdir) -> Result:
    """Distribution preservation: the reweight averaged over all permutations of a small vocabulary,
    and over keys of the real permutation family (a key and its reversed twin) at V = 49,152."""
    del workdir
    rng = np.random.default_rng(config.seed)
    metrics = {}
    v = config.small_vocab
    orders = jnp.asarray(list(itertools.permutations(range(v))), jnp.int32)           # [V!, V]
    worst = 0.0
    for alpha in config.alphas:
        probs = rng.dirichlet(np.ones(v), size=config.n_distributions).astype(np.float32)
        p = jnp.broadcast_to(jnp.asarray(probs)[:, None], (len(probs), len(orders), v))
        new = reweight.dipmark_reweight(p, jnp.broadcast_to(orders[None], p.shape), alpha)   # one program, any alpha
        err = float(jnp.max(jnp.abs(new.mean(axis=1) - probs)))
        metrics[f"exhaustive_max_abs_err/alpha{alpha:g}"] = err
        worst = max(worst, err)
        if alpha == 0.5:   # the gamma-reweight: F' = max(2F - 1, 0), in float64 per permutation
            perm = np.asarray(orders)
            ref = []
            for q in probs.astype(np.float64):
                f = np.cumsum(q[perm], axis=1)
                d = np.diff(np.concatenate([np.zeros((len(perm), 1)), np.maximum(2 * f - 1, 0)], axis=1), axis=1)
                back = np.zeros_like(d)
                np.put_along_axis(back, perm, d, axis=1)
                ref.append(back)
            metrics["gamma_reweight_max_abs_err"] = float(np.max(np.abs(np.asarray(new) - np.stack(ref))))
    metrics["exhaustive_max_abs_err"] = worst

    # The real family at V: P'(key) + P'(reversed twin) = 2P, so the mean over keys is P exactly.
    vocab = config.vocab
    logits = jnp.asarray(rng.standard_normal((config.n_pairs, vocab)) * config.logit_scale, jnp.float32)
    base = jnp.asarray(rng.integers(0, 2 ** 31 - 1, config.n_pairs), jnp.uint32) * 2
    p = jax.nn.softmax(logits, axis=-1)
    pair_err = 0.0
    for alpha in config.pair_alphas:   # one compiled processor per alpha: the few the scale affords
        wm = reweight.dipmark(b"k", vocab, alpha=alpha)
        marked = jax.jit(lambda x, seeds, wm=wm: jax.nn.softmax(wm.apply(x, seeds), -1))   # x: an argument, not a constant
        one = marked(logits, base)
        twin = (one + marked(logits, base + 1)) / 2
        err = float(jnp.max(jnp.abs(twin - p)))
        metrics[f"pair_max_abs_err/alpha{alpha:g}"] = err
        pair_err = max(pair_err, err)
        metrics[f"tv_moved_per_key/alpha{alpha:g}"] = 0.5 * float(jnp.abs(one - p).sum(-1).mean())   # one key's change
    metrics["pair_max_abs_err"] = pair_err
    alphas = ", ".join(f"{a:g}" for a in config.alphas)
    claim = Claim(
        text="DiPmark's reweight is distribution-preserving: averaged over keys (permutations) it gives back P exactly",
        ours=(f"max |mean over all {math.factorial(v)} permutations of P' - P| = {worst:.1e} (float32) for "
              f"{config.n_distributions} random distributions on V = {v} per alpha in {{{alphas}}}; over the key pairs "
              f"of our Feistel family at V = {vocab} ({config.n_pairs} logit vectors, alpha in "
              f"{{{', '.join(f'{a:g}' for a in config.pair_alphas)}}}): {pair_err:.1e}; one key alone moves total "
              f"variation {metrics[f'tv_moved_per_key/alpha{max(config.pair_alphas):g}']:.3f} at alpha "
              f"{max(config.pair_alphas):g}"),
        verdict=verdict(worst < UNBIASED_TOLERANCE and pair_err < UNBIASED_TOLERANCE))
    return Result(metrics=metrics, headline="exhaustive_max_abs_err", claims=[claim],
                  notes=(f"mean of the DiPmark reweight over all {math.factorial(v)} permutations of V = {v} for "
                         f"{config.n_distributions} random distributions per alpha; and over key pairs of the "
                         f"Feistel family at V = {vocab} ({config.n_pairs} random logit vectors)."))


# --- Cost ------------------------------------------------------------------------------------------

@registry.experiment("dipmark/cost")
def cost(config, workdir) -> Result:
    """Generation tokens/s with and without the processors at the same batch; detection tokens/s."""
    from jaxml.llm import generate as generate_lib
    from jaxml.llm.base import SamplingOptions

    del workdir
    mode = mode_of(config)
    key = experiment_key(config.key_seed, mode)
    model, params, tok = load_model(config)
    vocab = model.config.vocab_size
    prompts = load_prompts(config, tok).tokens[:config.batch_size]
    wms = {NONE: None, "dipmark": reweight.dipmark(key, vocab, alpha=0.45, mode=mode),
           "kgw": reweight.kgw(key, vocab, delta=2.0, mode=mode)}
    wms = {k: v for k, v in wms.items() if k == NONE or k in config.processors}
    # the watermark part's options: equal shapes, options and processors share its compiled programs
    options = SamplingOptions(temperature=1.0, top_k=official.TOP_K if mode == "official" else 0,
                              filter_order="before_processor")

    def run(wm):   # no stop tokens: every configuration decodes exactly max_new_tokens steps
        return generate_lib.generate(model, params, prompts, max_new_tokens=config.max_new_tokens, sampling=options,
                                     key=jax.random.PRNGKey(0), logits_processor=wm)

    outputs = {k: run(wm) for k, wm in wms.items()}   # compile
    seconds = {k: [] for k in wms}
    for _ in range(config.repeats):   # interleaved rounds, so a load change affects all alike
        for k, wm in wms.items():
            seconds[k].append(median_ms(lambda wm=wm: run(wm).tokens, 1) / 1e3)
    tokens = outputs[NONE].tokens.size
    metrics = {f"tokens_per_s/{k}": tokens / float(np.median(v)) for k, v in seconds.items()}
    for k in config.processors:
        metrics[f"throughput_ratio/{k}"] = metrics_lib.throughput_ratio(seconds[k], seconds[NONE])
    texts = outputs["dipmark"].sequences()
    detector = detect.Detector(key, vocab, mode=mode)
    scored = int(detector.score(texts).n.sum())   # compile
    metrics[f"detect_tokens_per_s/{mode}"] = scored / (median_ms(lambda: detector.score(texts).n, config.repeats) / 1e3)
    others = f"KGW delta 2: {metrics['throughput_ratio/kgw']:.3f}x" if "kgw" in config.processors else ""
    setting = (f"batch {config.batch_size}, {config.max_new_tokens} new tokens, {config.model}, median of "
               f"{config.repeats} interleaved rounds, mode {mode}")
    return Result(metrics=metrics, headline="throughput_ratio/dipmark",
                  claims=[cost_claim(metrics["throughput_ratio/dipmark"], others, setting,
                                     config.model != "tiny" and config.repeats >= MIN_TIMED_ROUNDS)],
                  notes=(f"{setting}; detection scores 5 gammas."))


@registry.experiment("dipmark/reproduce")
def reproduce(config, workdir) -> Result:
    """unbiased, watermark and cost at one scale; the first claim is distribution preservation."""
    return gather_parts("dipmark", config, pathlib.Path(__file__).parent / "configs", workdir,
                        headline_part="watermark")
