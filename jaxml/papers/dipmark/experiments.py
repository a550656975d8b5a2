"""DiPmark experiments: unbiasedness, quality/detectability/resilience from one set of generations,
cost, and `reproduce` (all of them at one scale).

`dipmark/watermark` generates continuations of held-out prompts with SmolLM2-135M-Instruct at
temperature 1 (no top-k: a top-k cut after the reweight would bias it) for no watermark, DiPmark
over an alpha grid and KGW over a delta grid, with the same sampling keys for every configuration;
the token ids are cached in the workdir (`generations.npz`), so a rerun resumes. From them:
perplexity under the unwatermarked model (bootstrap CIs, and the paired difference against no
watermark), TPR at 1% FPR against length (threshold: the 99th percentile of the unwatermarked
generations' scores), TPR under random token substitution.
"""

from __future__ import annotations

import itertools
import json
import math
import pathlib
import random
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.core import registry
from jaxml.core.experiment import Result, gather_parts, make_workdir, pyplot
from jaxml.papers.dipmark import data, detect, keys, reweight

NONE = "none"
CONTROL = "none_s"   # a second unwatermarked sample with other sampling keys: the noise floor of quality


def _unmarked(label: str) -> bool:
    return label == NONE or label.startswith(CONTROL)


def experiment_key(seed: int = 42) -> bytes:
    """The private key of the experiments: 1024 random bits from `random.Random(seed)`, 128 bytes
    (as the official code's `random.getrandbits(1024)` after seeding with 42)."""
    return random.Random(seed).getrandbits(1024).to_bytes(128, "little")


def load_model(config):
    """`(model, params, tokenizer or None)`: SmolLM2-135M-Instruct, or a tiny random Llama for tests."""
    if config.model == "smollm2":
        from jaxml.models.llama import load_smollm2
        return load_smollm2()
    if config.model != "tiny":
        raise ValueError(f"model {config.model!r}; accepted: 'smollm2', 'tiny'")
    from jaxml.models.llama import Llama, LlamaConfig
    cfg = LlamaConfig(vocab_size=config.vocab_size, hidden=32, layers=2, heads=4, kv_heads=2, mlp_hidden=64,
                      max_len=256, rope_theta=100.0)
    model = Llama(cfg)
    params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 4), jnp.int32), jnp.zeros((1, 4), jnp.int32))["params"]
    return model, params, None


def load_prompts(config, tokenizer) -> data.Prompts:
    if tokenizer is None:   # tiny model: random token prompts
        rng = np.random.default_rng(config.seed)
        n = config.n_continuation + config.n_summarisation
        return data.Prompts([rng.integers(0, config.vocab_size, 8).tolist() for _ in range(n)],
                            ["continuation"] * n, ["random"] * n)
    return data.make_prompts(tokenizer, tuple(config.corpora), config.n_continuation, config.n_summarisation,
                             config.prompt_tokens, seed=config.seed)


def watermarks(config, key: bytes, vocab_size: int) -> dict[str, reweight.Watermark | None]:
    """label -> processor (None for no watermark): DiPmark over `alphas`, KGW over `deltas`."""
    dip = {f"dipmark_a{a:g}": reweight.dipmark(key, vocab_size, alpha=a) for a in config.alphas}
    soft = {f"kgw_d{d:g}": reweight.kgw(key, vocab_size, delta=d, gamma=0.5) for d in config.deltas}
    # interleaved from the largest alpha and delta down, so a partial run has both methods
    dip_labels, soft_labels = sorted(dip, reverse=True), sorted(soft, reverse=True)
    out = {NONE: None}
    out.update({f"{CONTROL}{s}": None for s in config.get("control_seeds", ())})
    for i in range(max(len(dip), len(soft))):
        for labels, table in ((dip_labels, dip), (soft_labels, soft)):
            if i < len(labels):
                out[labels[i]] = table[labels[i]]
    return out


def generate_all(config, model, params, tokenizer, prompts: data.Prompts, wms: dict, workdir: pathlib.Path
                 ) -> tuple[dict[str, list[np.ndarray]], dict[str, float]]:
    """Generated token ids (stop token excluded) per label, cached in `workdir/generations.npz`.

    Prompts of one task are batched together (similar lengths); every label uses the same PRNG
    keys. Returns `(ids per label, seconds per label)` (seconds 0 for labels read from the cache).
    """
    from jaxml.llm import generate as generate_lib
    from jaxml.llm.base import SamplingOptions

    cache = workdir / "generations.npz"
    fingerprint = _fingerprint(config, prompts)
    stored = {}
    if cache.exists():
        with np.load(cache, allow_pickle=False) as f:
            if str(f["fingerprint"]) == fingerprint:
                stored = {k: f[k] for k in f.files if k != "fingerprint"}
    options = SamplingOptions(temperature=config.temperature)
    stop_ids = tokenizer.stop_ids if tokenizer is not None else ()
    pad_id = tokenizer.pad_id if tokenizer is not None else 0
    order = sorted(range(len(prompts.tokens)), key=lambda i: (prompts.task[i], len(prompts.tokens[i])))
    out, seconds = {}, {}
    for label, wm in wms.items():
        if f"{label}/tokens" not in stored:
            tokens = np.zeros((len(order), config.max_new_tokens), np.int32)
            lengths = np.zeros(len(order), np.int32)
            t0 = time.perf_counter()
            sample_seed = config.seed + (7919 * int(label[len(CONTROL):]) if label.startswith(CONTROL) else 0)
            for b, start in enumerate(range(0, len(order), config.batch_size)):
                idx = order[start:start + config.batch_size]
                res = generate_lib.generate(model, params, [prompts.tokens[i] for i in idx],
                                            max_new_tokens=config.max_new_tokens, sampling=options, stop_ids=stop_ids,
                                            pad_id=pad_id, key=jax.random.PRNGKey(1000 * sample_seed + b),
                                            logits_processor=wm)
                tokens[idx], lengths[idx] = res.tokens, res.lengths
            seconds[label] = time.perf_counter() - t0
            stored[f"{label}/tokens"], stored[f"{label}/lengths"] = tokens, lengths
            np.savez(cache, fingerprint=np.array(fingerprint), **stored)
            print(f"[dipmark] generated {label}: {len(order)} x {config.max_new_tokens} tokens in "
                  f"{seconds[label]:.0f} s", flush=True)
        out[label] = [row[:n] for row, n in zip(stored[f"{label}/tokens"], stored[f"{label}/lengths"])]
    return out, seconds


def _fingerprint(config, prompts: data.Prompts) -> str:
    return json.dumps([config.model, config.max_new_tokens, config.temperature, config.seed,
                       [list(map(int, t)) for t in prompts.tokens]])


def bootstrap_ci(values: np.ndarray, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of `values` [n]."""
    values = np.asarray(values, np.float64)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), (n_boot, len(values)))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


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
                       key: bytes) -> dict[str, np.ndarray]:
    """Per-text mean over generated positions of E_{x~P'}[-log P(x)] - E_{x~P}[-log P(x)] (nats).

    Teacher-forced on unwatermarked generations: at each position the model's next-token
    distribution P and its reweight P' under each processor (the context code of that position,
    the repeated-code rule ignored). The shift is linear in P', so distribution preservation
    (E_key P' = P) makes its mean over positions (fresh seeds) zero, with far less noise than the
    perplexity of sampled text; KGW's is positive. Returns label -> float [n texts] (NaN if empty).
    """
    width = keys.CONTEXT_WIDTH
    rows = [i for i, g in enumerate(generations) if len(g)]
    max_new = max(len(g) for g in generations)
    length = int(math.ceil(max(len(prompts.tokens[i]) + len(generations[i]) for i in rows) / 16) * 16)

    @jax.jit
    def forward(tokens, valid):
        positions = jnp.maximum(jnp.cumsum(valid) - 1, 0)[None]
        return model.apply({"params": params}, tokens[None], positions, key_valid=valid[None])[0][0]

    fns = {}
    for label, wm in wms.items():
        if wm is None:
            continue

        def shift(logits, seeds, mask, wm=wm):
            logp = jax.nn.log_softmax(logits, -1)
            new = jax.nn.softmax(wm.apply(logits, seeds), -1)
            per = jnp.sum((new - jnp.exp(logp)) * -logp, -1)
            return jnp.sum(jnp.where(mask, per, 0.0)) / jnp.maximum(mask.sum(), 1)
        fns[label] = jax.jit(shift)
    out = {label: np.full(len(generations), np.nan) for label in fns}
    for i in rows:
        seq = np.concatenate([np.asarray(prompts.tokens[i]), generations[i]]).astype(np.int32)
        plen, n = len(prompts.tokens[i]), len(generations[i])
        tokens = np.zeros(length, np.int32)
        tokens[:len(seq)] = seq
        valid = np.arange(length) < len(seq)
        logits = forward(jnp.asarray(tokens), jnp.asarray(valid))
        at = np.clip(np.arange(plen - 1, plen - 1 + max_new), 0, length - 1)    # predicting generated token t
        padded = np.concatenate([np.full(width, -1), tokens])                     # -1: no token before the start
        codes = np.stack([padded[at + 1 + j] for j in range(width)], axis=1)      # tokens at[t]-4 .. at[t]
        seeds = keys.context_seeds(jnp.asarray(codes, jnp.int32), key)
        mask = jnp.arange(max_new) < n
        for label, fn in fns.items():
            out[label][i] = float(fn(logits[at], seeds, mask))
    return out


def _score_at(detector: detect.Detector, positions: np.ndarray, rows: np.ndarray, length: int) -> detect.Scores:
    """Scores of the first `length` tokens (length - width scored) of the selected rows."""
    green, n = detector.green_counts(positions[rows], upto=length - detector.context_width)
    return detect.statistics(green, n, detector.gammas)


@registry.experiment("dipmark/watermark")
def watermark(config, workdir) -> Result:
    """Perplexity, TPR at 1% FPR against length, and TPR under substitution, per watermark."""
    workdir = make_workdir(workdir)
    key = experiment_key(config.key_seed)
    model, params, tok = load_model(config)
    vocab = model.config.vocab_size
    prompts = load_prompts(config, tok)
    wms = watermarks(config, key, vocab)
    gens, seconds = generate_all(config, model, params, tok, prompts, wms, workdir)
    pad_id = tok.pad_id if tok is not None else 0
    metrics, table = {}, {}

    # Quality: perplexity under the unwatermarked model, CIs and the paired difference to no watermark.
    ppl_cache = workdir / "perplexities.json"   # scoring is slow on CPU: reuse it for the same generations
    fingerprint = _fingerprint(config, prompts)
    cached = json.loads(ppl_cache.read_text()) if ppl_cache.exists() else {}
    if cached.get("fingerprint") != fingerprint:
        cached = {}
    ppl = {label: np.asarray(cached[label], np.float64) if label in cached
           else perplexities(model, params, prompts, g, pad_id) for label, g in gens.items()}
    for label, values in ppl.items():
        ok = np.isfinite(values)
        lo, hi = bootstrap_ci(values[ok])
        both = ok & np.isfinite(ppl[NONE])
        diff = values[both] - ppl[NONE][both]
        dlo, dhi = bootstrap_ci(diff) if label != NONE else (0.0, 0.0)
        metrics.update({f"ppl/{label}": float(values[ok].mean()), f"ppl_ci_low/{label}": lo, f"ppl_ci_high/{label}": hi,
                        f"ppl_diff_vs_none/{label}": float(diff.mean()), f"ppl_diff_ci_low/{label}": dlo,
                        f"ppl_diff_ci_high/{label}": dhi, f"mean_length/{label}": float(np.mean([len(x) for x in gens[label]]))})
        # log-perplexity (mean NLL per token of each text): less dominated by a few outlying texts
        logs, log_none = np.log(values), np.log(ppl[NONE])
        lo, hi = bootstrap_ci(logs[ok])
        ldiff = logs[both] - log_none[both]
        dlo, dhi = bootstrap_ci(ldiff) if label != NONE else (0.0, 0.0)
        metrics.update({f"nll/{label}": float(logs[ok].mean()), f"nll_ci_low/{label}": lo, f"nll_ci_high/{label}": hi,
                        f"nll_diff_vs_none/{label}": float(ldiff.mean()), f"nll_diff_ci_low/{label}": dlo,
                        f"nll_diff_ci_high/{label}": dhi})

    # Quality without sampling noise: the expected NLL shift on the unwatermarked texts' contexts.
    shifts = expected_nll_shift(model, params, prompts, gens[NONE], wms, key)
    for label, values in shifts.items():
        ok = np.isfinite(values)
        lo, hi = bootstrap_ci(values[ok])
        metrics.update({f"nll_shift/{label}": float(values[ok].mean()), f"nll_shift_ci_low/{label}": lo,
                        f"nll_shift_ci_high/{label}": hi})

    # Detection: gamma = 0.5 fixed (the DiPmark score Phi; KGW's z is a monotone transform of it at fixed gamma).
    detector = detect.Detector(key, vocab, gammas=tuple(config.gammas))
    col = list(detector.gammas).index(0.5)
    width = detector.context_width
    pos = {}
    for label, g in gens.items():
        rows = [x if len(x) > width else np.zeros(width + 1, np.int64) for x in g]   # too short: never scored below
        pos[label] = detector.positions(rows)[0]
    lens = {label: np.array([len(x) for x in g]) for label, g in gens.items()}
    human = None
    if tok is not None:
        windows = data.human_windows(tok, tuple(config.corpora), n=config.n_human, length=max(config.lengths))
        human = detector.positions(windows)[0]
    z_normal_1pct = 2.3263478740408408   # one-sided N(0, 1) quantile for KGW's z-test
    for length in config.lengths:
        null_rows = np.flatnonzero(lens[NONE] >= length)
        null = _score_at(detector, pos[NONE], null_rows, length)
        threshold = float(np.quantile(null.score[:, col], 0.99, method="higher"))
        metrics[f"threshold_emp/L{length}"] = threshold
        metrics[f"n_null/L{length}"] = float(len(null_rows))
        metrics[f"fpr_hoeffding_gen/L{length}"] = float(np.mean(null.score[:, col] >= detect.HOEFFDING_THRESHOLD_1PCT))
        metrics[f"fpr_minp_gen/L{length}"] = float(np.mean(null.min_p_value_uncorrected <= 0.01))
        for label in gens:   # an independent unwatermarked sample at the same threshold
            if label.startswith(CONTROL):
                rows = np.flatnonzero(lens[label] >= length)
                control = _score_at(detector, pos[label], rows, length)
                metrics[f"fpr_emp_control/L{length}/{label}"] = float(np.mean(control.score[:, col] > threshold))
        if human is not None:
            h = _score_at(detector, human, np.arange(len(human)), length)
            metrics[f"fpr_emp_human/L{length}"] = float(np.mean(h.score[:, col] > threshold))
            metrics[f"fpr_hoeffding_human/L{length}"] = float(np.mean(h.score[:, col] >= detect.HOEFFDING_THRESHOLD_1PCT))
            metrics[f"fpr_kgw_z_human/L{length}"] = float(np.mean(h.kgw_z[:, col] >= z_normal_1pct))
            metrics[f"fpr_minp_human/L{length}"] = float(np.mean(h.min_p_value_uncorrected <= 0.01))
        for label in gens:
            if _unmarked(label):
                continue
            rows = np.flatnonzero(lens[label] >= length)
            s = _score_at(detector, pos[label], rows, length)
            metrics[f"n/L{length}/{label}"] = float(len(rows))
            metrics[f"tpr_emp/L{length}/{label}"] = float(np.mean(s.score[:, col] > threshold)) if len(rows) else 0.0
            metrics[f"tpr_hoeffding/L{length}/{label}"] = float(np.mean(s.score[:, col] >= detect.HOEFFDING_THRESHOLD_1PCT)) if len(rows) else 0.0
            metrics[f"tpr_kgw_z/L{length}/{label}"] = float(np.mean(s.kgw_z[:, col] >= z_normal_1pct)) if len(rows) else 0.0
            metrics[f"tpr_minp/L{length}/{label}"] = float(np.mean(s.min_p_value_uncorrected <= 0.01)) if len(rows) else 0.0
            metrics[f"mean_score/L{length}/{label}"] = float(s.score[:, col].mean()) if len(rows) else 0.0

    # Resilience: random substitution of the first `attack_length` tokens, thresholds from unattacked text.
    length = config.attack_length
    threshold = metrics[f"threshold_emp/L{length}"]
    for label, g in gens.items():
        if _unmarked(label):
            continue
        texts = [x[:length] for x in g if len(x) >= length]
        for eps in config.epsilons:
            if not texts:
                metrics[f"tpr_attack_emp/eps{eps:g}/{label}"] = metrics[f"tpr_attack_hoeffding/eps{eps:g}/{label}"] = 0.0
                continue
            s = detector.score(detect.substitute(texts, eps, vocab, seed=config.seed))
            metrics[f"tpr_attack_emp/eps{eps:g}/{label}"] = float(np.mean(s.score[:, col] > threshold))
            metrics[f"tpr_attack_hoeffding/eps{eps:g}/{label}"] = float(np.mean(s.score[:, col] >= detect.HOEFFDING_THRESHOLD_1PCT))
    metrics.update({f"generate_seconds/{k}": v for k, v in seconds.items()})
    (workdir / "metrics.json").write_text(json.dumps(metrics, indent=1))
    ppl_cache.write_text(json.dumps({"fingerprint": fingerprint, **{k: v.tolist() for k, v in ppl.items()}}))
    figures = [_plot_watermark(workdir / "dipmark_watermark.png", metrics, list(gens), config)]
    headline = f"tpr_emp/L{max(config.lengths)}/dipmark_a{config.headline_alpha:g}"
    return Result(metrics=metrics, headline=headline, figures=figures,
                  notes=(f"{len(prompts.tokens)} prompts ({config.n_continuation} continuation, {config.n_summarisation} "
                         f"summarisation) x {config.max_new_tokens} new tokens, {config.model}, temperature "
                         f"{config.temperature:g}, no top-k; gamma = 0.5; FPR threshold = 99th percentile of the "
                         f"unwatermarked generations' scores."))


def _plot_watermark(path, metrics, labels, config) -> str:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    marked = [lab for lab in labels if not _unmarked(lab)]
    for lab in marked:
        axes[0].plot(config.lengths, [metrics[f"tpr_emp/L{L}/{lab}"] for L in config.lengths], marker="o", label=lab)
    axes[0].set(xlabel="generated tokens", ylabel="TPR at 1% FPR (empirical threshold)", title="detectability")
    axes[0].legend(fontsize=7)
    means = [metrics[f"ppl/{lab}"] for lab in labels]
    err = np.array([[m - metrics[f"ppl_ci_low/{lab}"], metrics[f"ppl_ci_high/{lab}"] - m] for m, lab in zip(means, labels)]).T
    axes[1].bar(range(len(labels)), means, yerr=err, capsize=3)
    axes[1].set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=7)
    axes[1].set(ylabel="perplexity (unwatermarked model), 95% CI", title="quality")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


# --- Unbiasedness --------------------------------------------------------------------------------

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
        new = reweight.dipmark_reweight(p, jnp.broadcast_to(orders[None], p.shape), alpha)
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
    pair_err = 0.0
    for alpha in config.alphas:
        wm = reweight.dipmark(b"k", vocab, alpha=alpha)
        p = jax.nn.softmax(logits, axis=-1)
        twin = (jax.nn.softmax(wm.apply(logits, base), -1) + jax.nn.softmax(wm.apply(logits, base + 1), -1)) / 2
        err = float(jnp.max(jnp.abs(twin - p)))
        metrics[f"pair_max_abs_err/alpha{alpha:g}"] = err
        pair_err = max(pair_err, err)
        moved = 0.5 * float(jnp.abs(jax.nn.softmax(wm.apply(logits, base), -1) - p).sum(-1).mean())
        metrics[f"tv_moved_per_key/alpha{alpha:g}"] = moved   # how much one key changes the distribution
    metrics["pair_max_abs_err"] = pair_err
    return Result(metrics=metrics, headline="exhaustive_max_abs_err",
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
    key = experiment_key(config.key_seed)
    model, params, tok = load_model(config)
    vocab = model.config.vocab_size
    prompts = load_prompts(config, tok).tokens[:config.batch_size]
    wms = {NONE: None, "dipmark": reweight.dipmark(key, vocab, alpha=0.45), "kgw": reweight.kgw(key, vocab, delta=2.0)}
    wms = {k: v for k, v in wms.items() if k == NONE or k in config.processors}
    options = SamplingOptions(temperature=1.0)

    def run(wm):   # no stop tokens: every configuration decodes exactly max_new_tokens steps
        t0 = time.perf_counter()
        out = generate_lib.generate(model, params, prompts, max_new_tokens=config.max_new_tokens, sampling=options,
                                    key=jax.random.PRNGKey(0), logits_processor=wm)
        return out.tokens.size / (time.perf_counter() - t0), out

    rates = {k: [] for k in wms}
    for k, wm in wms.items():
        run(wm)   # compile
    for _ in range(config.repeats):   # interleaved, so machine load affects all alike
        for k, wm in wms.items():
            rates[k].append(run(wm)[0])
    metrics = {f"tokens_per_s/{k}": float(np.median(v)) for k, v in rates.items()}
    for k in config.processors:
        metrics[f"throughput_ratio/{k}"] = metrics[f"tokens_per_s/{k}"] / metrics[f"tokens_per_s/{NONE}"]
    texts = run(wms["dipmark"])[1].sequences()
    detector = detect.Detector(key, vocab)
    detector.score(texts)   # compile
    t0 = time.perf_counter()
    for _ in range(config.repeats):
        s = detector.score(texts)
    metrics["detect_tokens_per_s"] = float(s.n.sum() * config.repeats / (time.perf_counter() - t0))
    return Result(metrics=metrics, headline="throughput_ratio/dipmark",
                  notes=(f"batch {config.batch_size}, {config.max_new_tokens} new tokens, {config.model}, median of "
                         f"{config.repeats} interleaved runs; detection scores 5 gammas."))


@registry.experiment("dipmark/reproduce")
def reproduce(config, workdir) -> Result:
    """unbiased, watermark and cost at one scale."""
    return gather_parts("dipmark", config, pathlib.Path(__file__).parent / "configs", workdir,
                        headline_part="watermark")
