"""AttnLRP experiments: faithfulness on SmolLM2, MiniLM and a Fashion-MNIST ViT, and cost.

Registered: `attnlrp/faithfulness_llm`, `attnlrp/faithfulness_minilm`, `attnlrp/faithfulness_vit`,
`attnlrp/cost`, `attnlrp/reproduce` (all of them at one scale). Configs in `configs/<name>.py`.

Every batch has the same shape (the last one is padded), so each program compiles once; IG with
`ig_chunk=1` runs Gradient x Input's compiled program once per path point. At the quick scale the
cost claim comes from warm calls inside `faithfulness_llm` (`cost` is not run). Tiny configs cut
the models to their first layers (`model_layers`): their claims are "not comparable".
"""

from __future__ import annotations

import dataclasses
import functools
import json
import pathlib

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxml.core import registry
from jaxml.core.benchmark import call_seconds, median_ms, timed
from jaxml.core.experiment import Result, Rows, gather_parts, make_workdir, pyplot, save_figure
from jaxml.models.vit import ViT
from jaxml.nn.ops import DEFAULT_OPS, Ops
from jaxml.papers.attnlrp import baselines, claims, data, explain, faithfulness, heatmap

LLM_METHODS = ("attnlrp", "cp_lrp", "gradient_x_input", "integrated_gradients", "smoothgrad",
               "attention_rollout", "atman", "kernel_shap", "random")
VIT_METHODS = ("attnlrp_gamma", "attnlrp", "cp_lrp_gamma", "gradient_x_input", "integrated_gradients",
               "smoothgrad", "random")


def explain_scores(method: str, model, params, args, kwargs, target, position, config, point="embeddings",
                   seed=0, shape=None, values=None, removable=None, query_position=None) -> np.ndarray:
    """Relevance per position [batch, len] from one method (sum over the feature axis).

    `shape` ([batch, len] at `point`) is needed by the random baseline only, `values` (the
    activations at `point`) by KernelSHAP only (config.shap_budget coalitions, replacement zero;
    its players are the `removable` positions [batch, len], default all). `position` indexes the
    model's logits; `query_position` (default `position`) is the sequence position whose attention
    rollout explains it (they differ for `Llama(last_logits_only=True)`, whose logits have length 1).
    """
    common = dict(target=target, position=position, model_kwargs=kwargs)
    if method in ("attnlrp_gamma", "cp_lrp_gamma"):   # the gamma rule on every Linear layer (ViT)
        return explain.relevance(model, params, args, rules=method.removesuffix("_gamma"), points=(point,),
                                 gamma=config.gamma, **common).per_token(point)
    if method in ("attnlrp", "cp_lrp", "gradient_x_input"):
        rules = "gradient" if method == "gradient_x_input" else method
        return explain.relevance(model, params, args, rules=rules, points=(point,), **common).per_token(point)
    if method == "integrated_gradients":
        return baselines.integrated_gradients(model, params, args, point=point, steps=config.ig_steps,
                                              chunk=config.ig_chunk, **common).sum(-1)
    if method == "smoothgrad":
        return baselines.smoothgrad(model, params, args, point=point, samples=config.smoothgrad_samples,
                                    noise=config.smoothgrad_noise, seed=seed, chunk=config.ig_chunk, **common).sum(-1)
    if method == "attention_rollout":
        return baselines.attention_rollout(model, params, args, model_kwargs=kwargs,
                                           position=position if query_position is None else query_position)
    if method == "atman":
        return baselines.atman(model, params, args, target=target, position=position,
                               suppression=config.atman_suppression, model_kwargs=kwargs)
    if method == "kernel_shap":
        if values is None:
            raise ValueError("KernelSHAP needs values= (the activations at the explanation point)")
        return baselines.kernel_shap(model, params, args, values, target=target, position=position,
                                     budget=config.shap_budget, seed=seed, point=point, model_kwargs=kwargs,
                                     features=removable, chunk=getattr(config, "curve_chunk", 64))
    if method == "random":
        if shape is None:
            raise ValueError("the random baseline needs shape=[batch, len]")
        return baselines.random_relevance(tuple(shape), seed=seed)
    raise ValueError(f"unknown method {method!r}; accepted: {sorted(set(LLM_METHODS + VIT_METHODS))}")


def _plot_curves(path, curves: dict[str, dict[str, np.ndarray]], title: str, ylabel: str) -> str:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for name, c in curves.items():
        axes[0].plot(c["fractions"], c["morf"].mean(0), label=claims.NAMES.get(name, name))
        axes[1].plot(c["fractions"], c["lerf"].mean(0), label=claims.NAMES.get(name, name))
    axes[0].set(title=f"{title}: MoRF (most relevant removed first)", xlabel="fraction of inputs zeroed", ylabel=ylabel)
    axes[1].set(title="LeRF (least relevant first)", xlabel="fraction of inputs zeroed")
    axes[1].legend(fontsize=7)
    return save_figure(fig, path)


def _batches(n: int, batch_size: int):
    """(slice of the real rows, take-indices padded to batch_size by repeating the last row)."""
    for start in range(0, n, batch_size):
        stop = min(start + batch_size, n)
        take = np.concatenate([np.arange(start, stop), np.full(batch_size - (stop - start), stop - 1)])
        yield slice(start, stop), take


class _Collector:
    """Per-example areas and the summed curves of each method over batches (padding rows dropped)."""

    def __init__(self, methods):
        self.abc = {m: [] for m in methods}
        self.curves = {m: [] for m in methods}
        self.areas = {m: {"morf": [], "lerf": []} for m in methods}

    def add(self, curves: dict[str, dict[str, np.ndarray]], real: int):
        for m, c in curves.items():
            c = {"morf": c["morf"][:real], "lerf": c["lerf"][:real], "fractions": c["fractions"]}
            self.abc[m].append(faithfulness.area_between_curves(c))
            self.curves[m].append(c)
            a = faithfulness.curve_areas(c)
            self.areas[m]["morf"].append(a["morf"])
            self.areas[m]["lerf"].append(a["lerf"])

    def area_metrics(self, reference: str = "attnlrp", resamples: int = 2000) -> dict[str, float]:
        """Mean MoRF and LeRF areas per method, and the paired 95% bootstrap interval of the area
        between the curves, reference minus each other method."""
        out = {}
        abc = {m: np.concatenate(v) for m, v in self.abc.items() if v}
        for m, a in self.areas.items():
            if a["morf"]:
                out[f"morf_area_{m}"] = float(np.concatenate(a["morf"]).mean())
                out[f"lerf_area_{m}"] = float(np.concatenate(a["lerf"]).mean())
        if reference in abc and len(abc[reference]) > 1:
            for m, v in abc.items():
                if m != reference:
                    _, lo, hi = faithfulness.paired_bootstrap_ci(abc[reference], v, resamples=resamples)
                    out[f"{reference}_minus_{m}_ci_lo"], out[f"{reference}_minus_{m}_ci_hi"] = lo, hi
        return out

    def result(self):
        abc = {m: np.concatenate(v) for m, v in self.abc.items() if v}
        merged = {m: {"morf": np.concatenate([c["morf"] for c in cs]), "lerf": np.concatenate([c["lerf"] for c in cs]),
                      "fractions": cs[0]["fractions"]} for m, cs in self.curves.items() if cs}
        return abc, merged


# --- SmolLM2 ------------------------------------------------------------------------------------

def smollm2(layers: int = 0):
    """`load_smollm2()`, cut to its first `layers` blocks when 0 < layers < 30 (tiny configs)."""
    from jaxml.models.llama import load_smollm2

    model, params, tok = load_smollm2()
    if 0 < layers < model.config.layers:
        model = model.clone(config=dataclasses.replace(model.config, layers=layers))
        params = {k: v for k, v in params.items()
                  if not (k.startswith("layers_") and int(k.removeprefix("layers_")) >= layers)}
    return model, params, tok


@functools.lru_cache(maxsize=8)
def _greedy_program(model):
    """Jitted `(params, args, kwargs, position) -> the predicted class [batch]` (at `position` for models
    with per-position logits; `position=None` for [batch, classes] logits)."""
    def run(params, args, kwargs, position):
        logits = explain.default_logits(model.apply({"params": params}, *args, **kwargs))
        if position is not None:
            logits = jnp.take_along_axis(logits, position[:, None, None], axis=1)[:, 0]
        return jnp.argmax(logits, -1)
    return jax.jit(run)


def _llm_batch(prefixes, take):
    args = (jnp.asarray(prefixes.tokens[take]), jnp.asarray(prefixes.positions[take]))
    return args, {"key_valid": jnp.asarray(prefixes.valid[take])}


def _last_position_head(model, batch_size: int, length: int):
    """(model with the head on the last position only, index into its logits [batch] (zeros), the
    predicting token's position [batch] (length - 1, for attention rollout)): rows are left-padded, so
    every target is predicted at the last position; the vocab-sized head is a fifth of a 16-token
    forward pass of SmolLM2."""
    return (model.clone(last_logits_only=True), np.zeros(batch_size, int), np.full(batch_size, length - 1))


def _scale_setting(config) -> bool:
    """Whether the run can speak to the paper's claims (not a tiny run on a cut model)."""
    return config.get("model_layers", 0) == 0


def _replacements(config) -> tuple[str, ...]:
    reps = tuple(config.replacements)
    bad = [r for r in reps if r not in ("zero", "mean")]
    if not reps or bad or len(set(reps)) != len(reps):
        raise ValueError(f"replacements={reps}: accepted a non-empty tuple of distinct 'zero', 'mean'")
    return reps


def _fingerprint(config, keys) -> str:
    """A short hash of the config values that decide a batch's numbers (stored rows of another config
    are never reused)."""
    import hashlib
    blob = json.dumps({k: config.get(k) for k in keys}, sort_keys=True, default=list)
    return hashlib.sha1(blob.encode()).hexdigest()[:10]


_BATCH_KEYS = ("corpora", "model_layers", "num_examples", "length", "min_tokens", "batch_size", "steps", "protect_first",
               "bos", "replacements", "atman_suppression", "shap_budget", "methods", "ig_steps", "ig_chunk",
               "smoothgrad_samples", "smoothgrad_noise", "seed")


def single_removals(removable: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(first, other) bool [batch, len]: each example's first removable token alone, and one other
    removable token drawn at random (seeded) alone: the probes of the first-token (sink) effect."""
    first = np.zeros_like(removable)
    other = np.zeros_like(removable)
    rng = np.random.default_rng(seed)
    for b, row in enumerate(removable):
        idx = np.flatnonzero(row)
        first[b, idx[0]] = True
        other[b, rng.choice(idx[1:])] = True
    return first, other


@registry.experiment("attnlrp/faithfulness_llm")
def faithfulness_llm(config, workdir) -> Result:
    """Perturbation faithfulness of next-token explanations on SmolLM2-135M-Instruct.

    Each method explains a batch once; its MoRF/LeRF curves are then measured under every value in
    `config.replacements` ('zero': the zero embedding, 'mean': the held-out corpus mean). Finished
    batches are stored in `<workdir>/batches.jsonl`, so a killed run resumes at the next batch.
    Metrics of the first replacement are unprefixed, those of the others `<replacement>/...`.
    """
    workdir = make_workdir(workdir)
    model, params, tok = smollm2(config.model_layers)
    n = config.num_examples
    prefixes = data.sample_prefixes(tok, tuple(config.corpora), n=n, length=config.length,
                                    min_tokens=config.min_tokens, seed=config.seed, bos=config.bos)
    reps = _replacements(config)
    fills = {r: None if r == "zero" else data.mean_embedding(np.asarray(params["embed"]["embedding"]), tok,
                                                             tuple(config.corpora)) for r in reps}
    methods = tuple(config.methods)
    if methods[0] != "attnlrp":
        raise ValueError(f"faithfulness_llm: methods must start with 'attnlrp' (the reference), got {methods}")
    stored = Rows(workdir / "batches.jsonl")
    fingerprint = _fingerprint(config, _BATCH_KEYS)
    collect = {r: _Collector(methods) for r in reps}
    single = {r: {"none": [], "first": [], "other": [], "all": []} for r in reps}
    times = {m: [] for m in methods}   # seconds per batch and method; the first batch compiles
    conservation, heat_rows, heat_html = [], [], []
    fractions = np.linspace(0, 1, config.steps)
    all_removable = prefixes.removable()
    if config.protect_first:   # keep each prefix's first token (the attention sink) in place
        all_removable[np.arange(n), all_removable.argmax(1)] = False
    head, position, query = _last_position_head(model, config.batch_size, config.length)
    for sl, take in _batches(n, config.batch_size):
        real = sl.stop - sl.start
        args, kwargs = _llm_batch(prefixes, take)
        target = np.asarray(_greedy_program(head)(params, args, kwargs, jnp.asarray(position)))
        removable = all_removable[take]
        key = f"{sl.start}-{sl.stop}/{fingerprint}"
        row = stored.get(key)
        if row is None:
            seconds, lrp = call_seconds(lambda: explain.relevance(head, params, args, target=target,
                                                                 position=position, rules="attnlrp", model_kwargs=kwargs))
            spent = {"attnlrp": seconds}
            values = lrp.values["embeddings"]
            scores = {"attnlrp": lrp.per_token("embeddings")}
            for m in methods[1:]:
                spent[m], scores[m] = call_seconds(lambda: explain_scores(
                    m, head, params, args, kwargs, target, position, config, seed=sl.start, shape=values.shape[:2],
                    values=values, removable=removable, query_position=query))
            scores = {m: np.asarray(v, np.float32) for m, v in scores.items()}
            first, other = single_removals(removable, seed=sl.start)
            probes = np.concatenate([first, other])
            curves, singles = {}, {}
            for r in reps:
                c = faithfulness.curves_for_methods(
                    head, params, args, values, scores, removable, target=target, position=position,
                    fractions=fractions, model_kwargs=kwargs, chunk=config.curve_chunk, replacement=fills[r])
                curves[r] = {m: {"morf": v["morf"][:real].tolist(), "lerf": v["lerf"][:real].tolist()}
                             for m, v in c.items()}
                fill = np.zeros_like(values) if fills[r] is None else np.broadcast_to(fills[r], values.shape)
                logit = faithfulness.replaced_logits(
                    head, params, args, values, fill, np.tile(np.arange(len(take)), 2), probes, target=target,
                    position=position, point="embeddings", model_kwargs=kwargs, logits_fn=explain.default_logits,
                    chunk=config.curve_chunk)
                any_m = c[methods[0]]
                singles[r] = {"none": any_m["morf"][:real, 0].tolist(), "all": any_m["morf"][:real, -1].tolist(),
                              "first": logit[:len(take)][:real].tolist(), "other": logit[len(take):][:real].tolist()}
            heat = []
            for b in range(min(real, config.heatmaps - sl.start)):
                valid = prefixes.valid[take[b]]
                heat.append({"title": f"next token {tok.decode([int(target[b])])!r} ({prefixes.corpus[take[b]]})",
                             "tokens": [tok.decode([i]) for i in prefixes.tokens[take[b]][valid]],
                             "relevance": scores["attnlrp"][b][valid].tolist()})
            row = stored.add(key, curves=curves, singles=singles, seconds=spent, heat=heat,
                             conservation=np.asarray(lrp.conservation("embeddings"))[:real].tolist())
        for m in methods:
            times[m].append(row["seconds"][m])
        conservation += row["conservation"]
        for r in reps:
            collect[r].add({m: {"morf": np.asarray(v["morf"]), "lerf": np.asarray(v["lerf"]), "fractions": fractions}
                            for m, v in row["curves"][r].items()}, real)
            for k in single[r]:
                single[r][k] += row["singles"][r][k]
        for h in row["heat"]:
            heat_rows.append((h["title"], h["tokens"], np.asarray(h["relevance"])))
            heat_html.append(heatmap.tokens_html(h["tokens"], np.asarray(h["relevance"]), h["title"]))
        abc_so_far, _ = collect[reps[0]].result()
        print(f"[attnlrp] {sl.stop}/{n} examples; mean area so far ({reps[0]} replacement): "
              + ", ".join(f"{m} {v.mean():.3f}" for m, v in abc_so_far.items()), flush=True)
    metrics, per_rep = {}, {}
    for i, r in enumerate(reps):
        abc, merged = collect[r].result()
        got = faithfulness.summarise(abc)
        got.update(collect[r].area_metrics())
        got.update(first_token_metrics({k: np.asarray(v) for k, v in single[r].items()}))
        metrics.update({(k if i == 0 else f"{r}/{k}"): v for k, v in got.items()})
        per_rep[r] = {"abc": {m: v.tolist() for m, v in abc.items()},
                      "morf_area": {m: np.concatenate(a["morf"]).tolist() for m, a in collect[r].areas.items()},
                      "lerf_area": {m: np.concatenate(a["lerf"]).tolist() for m, a in collect[r].areas.items()},
                      "single": single[r]}
        if i == 0:
            curves_merged = merged
    cons = np.asarray(conservation)
    metrics.update({f"seconds_{m}": float(np.sum(t)) for m, t in times.items()})   # compilation included
    metrics.update(cost_units(times))
    metrics.update(num_examples=float(n), conservation_mean=float(cons.mean()),
                   conservation_median=float(np.median(cons)), conservation_min=float(cons.min()),
                   conservation_max=float(cons.max()))
    figures = [_plot_curves(workdir / "smollm2_perturbation_curves.png", curves_merged, "SmolLM2-135M",
                            "target logit")]
    if heat_rows:
        figures.append(str(heatmap.tokens_png(workdir / "smollm2_heatmaps.png", heat_rows)))
        figures.append(str(heatmap.write_html(workdir / "smollm2_heatmaps.html", heat_html,
                                              "AttnLRP relevance for SmolLM2-135M next-token predictions")))
    (workdir / "per_example.json").write_text(json.dumps(
        {**per_rep[reps[0]], "by_replacement": per_rep, "conservation": cons.tolist(), "corpus": prefixes.corpus},
        indent=1))
    comparable = _scale_setting(config)
    model_name = "SmolLM2-135M" if comparable else f"SmolLM2-135M cut to {config.model_layers} layers"
    setting = f"{model_name}, {n} held-out prefixes"
    found = [claims.faithfulness_claim(metrics, setting, comparable=comparable,
                                       ig_steps=config.ig_steps if "integrated_gradients" in methods else None),
             claims.conservation_claim(metrics, setting)]
    if config.cost_claim and {"attnlrp", "gradient_x_input", "integrated_gradients"} <= set(methods):
        found.append(_cost_from_run(config, head, params, args, kwargs, target, position, times, metrics,
                                    f"{model_name}, batch {config.batch_size} x {config.length} tokens",
                                    comparable))
    return Result(
        metrics=metrics, headline="abc_attnlrp", figures=figures, claims=found,
        notes=(f"{n} held-out prefixes ({', '.join(config.corpora)} test documents), {config.min_tokens}-"
               f"{config.length} tokens{' after a BOS token (never removed)' if config.bos else ''}, explaining "
               f"{model_name}'s greedy next token; input embeddings replaced ({', '.join(reps)}) in "
               f"{config.steps} steps{' (the first token of each prefix never removed)' if config.protect_first else ''}; "
               "area between LeRF and MoRF curves in logit units. The paper's Table 1 is on LLaMA-2-7B "
               "(4000 examples)."))


def cost_units(times: dict[str, list[float]], unit: str = "gradient_x_input") -> dict[str, float]:
    """Each method's time in forward+backward units: per batch, its seconds over those of `unit` (one
    plain forward+backward pass, Gradient x Input) in the same batch, so that both saw the same
    machine load; the median over batches (a batch that compiled is an outlier the median ignores).
    {} if `unit` was not run."""
    if unit not in times:
        return {}
    base = np.asarray(times[unit], np.float64)
    if np.any(base <= 0):
        raise ValueError(f"cost_units: {unit} has a non-positive time in {times[unit]}")
    return {f"cost_units_{m}": float(np.median(np.asarray(t, np.float64) / base)) for m, t in times.items()}


def first_token_metrics(single: dict[str, np.ndarray]) -> dict[str, float]:
    """The effect of removing one token alone, from the target logits with nothing removed ('none'),
    every removable token removed ('all'), the first removable token alone ('first') and one other
    drawn at random ('other'), each [n]: mean logit drops, the share of the full removal's drop that
    the single token accounts for (median), and the paired 95% interval of first minus other."""
    drop_first, drop_other = single["none"] - single["first"], single["none"] - single["other"]
    drop_all = single["none"] - single["all"]
    share = drop_first / np.where(np.abs(drop_all) > 1e-6, drop_all, np.nan)
    out = {"first_token_drop": float(drop_first.mean()), "other_token_drop": float(drop_other.mean()),
           "all_tokens_drop": float(drop_all.mean()), "first_token_share_median": float(np.nanmedian(share)),
           "first_token_half_or_more": float(np.mean(np.nan_to_num(share) >= 0.5))}
    if len(drop_first) > 1:
        d, lo, hi = faithfulness.paired_bootstrap_ci(drop_first, drop_other, resamples=2000)
        out.update(first_minus_other_drop=d, first_minus_other_drop_ci_lo=lo, first_minus_other_drop_ci_hi=hi)
    return out


def _cost_from_run(config, model, params, args, kwargs, target, position, times, metrics, setting, comparable):
    """The cost claim from a faithfulness run (quick scale, where `cost` is not run): AttnLRP and a
    plain forward+backward (Gradient x Input's program) timed again on the last batch, warm
    (`config.cost_repeats` calls, median); IG from its calls in the batches. With `ig_chunk=1` IG only
    calls Gradient x Input's program, compiled before it (methods run in order), so every batch's IG
    time is warm; with a vmapped IG program of its own the first batch (compilation) is left out."""
    methods = tuple(config.methods)
    if methods.index("gradient_x_input") > methods.index("integrated_gradients") and config.ig_chunk == 1:
        raise ValueError("faithfulness_llm: run gradient_x_input before integrated_gradients (its warm time)")
    ig_times = times["integrated_gradients"] if config.ig_chunk == 1 else times["integrated_gradients"][1:]
    if not ig_times:
        raise ValueError("faithfulness_llm: a vmapped IG (ig_chunk > 1) needs two batches for a warm time")
    run = lambda rules: (lambda: explain.gradients(model, params, args, target=target, position=position,
                                                   rules=rules, model_kwargs=kwargs))
    t = {"seconds_forward_backward": median_ms(run("gradient"), config.cost_repeats) / 1e3,
         "seconds_attnlrp": median_ms(run("attnlrp"), config.cost_repeats) / 1e3,
         "seconds_ig": float(np.median(ig_times))}
    t.update(claims.cost_ratios(t["seconds_forward_backward"], t["seconds_attnlrp"], t["seconds_ig"]))
    metrics.update({f"cost_{k}": v for k, v in t.items()})
    return claims.cost_claim(t, f"{setting}, median of {config.cost_repeats} warm calls ({len(ig_times)} for IG)",
                             config.ig_steps, comparable=comparable)


# --- Cost -----------------------------------------------------------------------------------------

@registry.experiment("attnlrp/cost")
def cost(config, workdir) -> Result:
    """Wall time of AttnLRP against one forward+backward pass and against Integrated Gradients."""
    del workdir
    model, params, tok = smollm2(config.model_layers)
    prefixes = data.sample_prefixes(tok, tuple(config.corpora), n=config.batch_size, length=config.length,
                                    min_tokens=config.min_tokens, seed=config.seed)
    args, kwargs = _llm_batch(prefixes, np.arange(config.batch_size))
    target = np.zeros(config.batch_size, np.int32) + 13
    position = np.full(config.batch_size, config.length - 1)

    grad = lambda rules: (lambda: explain.gradients(model, params, args, target=target, position=position,
                                                    rules=rules, model_kwargs=kwargs))
    ig = lambda: baselines.integrated_gradients(model, params, args, target=target, position=position,
                                                steps=config.ig_steps, chunk=config.ig_chunk, model_kwargs=kwargs)
    # (first call incl. compilation [s], median of the next calls [ms], result)
    first_fb, ms_fb, _ = timed(grad("gradient"), config.repeats)
    first_lrp, ms_lrp, _ = timed(grad("attnlrp"), config.repeats)
    first_ig, ms_ig, _ = timed(ig, config.ig_repeats)
    metrics = {"seconds_forward_backward": ms_fb / 1e3, "seconds_attnlrp": ms_lrp / 1e3, "seconds_ig": ms_ig / 1e3,
               "first_call_seconds_forward_backward": first_fb, "first_call_seconds_attnlrp": first_lrp,
               "first_call_seconds_ig": first_ig}
    metrics.update(claims.cost_ratios(ms_fb, ms_lrp, ms_ig))
    if config.generation_tokens:
        metrics.update(generation_cost(model, params, " ".join(prefixes.sentence), tok, config.generation_prompt,
                                       config.generation_tokens, config.repeats))
    comparable = _scale_setting(config)
    setting = (f"{'SmolLM2-135M' if comparable else f'SmolLM2-135M cut to {config.model_layers} layers'}, batch "
               f"{config.batch_size} x {config.length} tokens, {jax.devices()[0].platform}")
    return Result(
        metrics=metrics, headline="attnlrp_over_forward_backward",
        claims=[claims.cost_claim(metrics, setting, config.ig_steps, comparable=comparable)],
        notes=(f"{setting}; median of {config.repeats} warm runs ({config.ig_repeats} for IG), compilation "
               f"excluded; IG with {config.ig_steps} steps ({config.ig_chunk} per vmapped call)."))


def generation_cost(model, params, sentence: str, tok, prompt: int, generated: int, repeats: int) -> dict[str, float]:
    """Warm wall time of explaining G = `generated` tokens after a `prompt`-token prompt (the sentence's
    own continuation, teacher-forced) with AttnLRP: `explain_generation` (one forward, batched
    backward passes) against one `relevance` call per generated token (each on the whole sequence,
    the causal mask hiding the later tokens: one compiled program) and against one batched
    `relevance` call over the G targets. Median of `repeats` calls each, compilation excluded."""
    ids = np.asarray(tok.encode(sentence), np.int64)
    while len(ids) < prompt + generated:                  # a short sentence is repeated, never cut short
        ids = np.concatenate([ids, ids])
    prompt_ids, gen = ids[:prompt], ids[prompt:prompt + generated]
    seq = jnp.asarray(ids[:prompt + generated][None], jnp.int32)
    pos = jnp.arange(prompt + generated)[None]
    where = np.arange(prompt - 1, prompt + generated - 1)

    def one_per_token():
        return [explain.relevance(model, params, (seq, pos), target=[int(g)], position=[int(w)]).values["embeddings"]
                for g, w in zip(gen, where)]

    def batched():
        return explain.relevance(model, params, (jnp.repeat(seq, generated, 0), jnp.repeat(pos, generated, 0)),
                                 target=gen, position=where).values["embeddings"]

    def together():
        return explain.explain_generation(model, params, prompt_ids, gen).relevance

    out = {}
    for name, fn in (("explain_generation", together), ("per_token_calls", one_per_token), ("batched_call", batched)):
        _, ms, _ = timed(fn, repeats)
        out[f"generation_seconds_{name}"] = ms / 1e3
    out["generation_per_token_over_explain_generation"] = (out["generation_seconds_per_token_calls"]
                                                           / out["generation_seconds_explain_generation"])
    out["generation_batched_over_explain_generation"] = (out["generation_seconds_batched_call"]
                                                         / out["generation_seconds_explain_generation"])
    return out


# --- MiniLM sentence similarity -------------------------------------------------------------------

class SentenceSimilarity(nn.Module):
    """cos(mean-pooled MiniLM embedding of the input, a fixed reference embedding) as a 1-class logit.

    The L2 normalisation's 1/||e|| goes through `ops.norm_factor` (identity rule under AttnLRP).
    """

    config: object
    ops: Ops = DEFAULT_OPS

    @nn.compact
    def __call__(self, input_ids, attention_mask, reference):
        from jaxml.models.bert import Bert, mean_pool

        hidden = Bert(self.config, self.ops, name="bert")(input_ids, attention_mask)
        e = mean_pool(hidden, attention_mask)
        e = e * self.ops.norm_factor(jax.lax.rsqrt(jnp.sum(e * e, -1, keepdims=True) + 1e-12))
        return jnp.sum(e * reference, -1, keepdims=True) * 10.0   # x10: logits of a readable size


@registry.experiment("attnlrp/faithfulness_minilm")
def faithfulness_minilm(config, workdir) -> Result:
    """Which words of a sentence make all-MiniLM-L6-v2 find it similar to the next sentence."""
    from jaxml.models.bert import Bert, SentenceEncoder, l2_normalize, mean_pool

    workdir = make_workdir(workdir)
    enc = SentenceEncoder.load()
    sentences = [s for s in data.held_out_sentences(config.corpus) if 6 <= len(s.split()) <= config.max_words]
    rng = np.random.default_rng(config.seed)
    n = config.num_examples
    idx = rng.choice(len(sentences) - 1, size=n, replace=False)
    first, second = [sentences[i] for i in idx], [sentences[i + 1] for i in idx]
    bert_config, bert_params = enc.config, enc.params
    if 0 < config.model_layers < bert_config.num_hidden_layers:
        bert_config = dataclasses.replace(bert_config, num_hidden_layers=config.model_layers)
        bert_params = {k: v for k, v in bert_params.items()
                       if not (k.startswith("layers_") and int(k.removeprefix("layers_")) >= config.model_layers)}
    # The next sentence's embedding (mean pooling, L2 norm: `SentenceEncoder.encode`) from the same,
    # possibly cut, model; one padded batch, one compile.
    ref_ids, ref_mask, _ = enc.tokenize(second)
    embed = jax.jit(lambda p, i, m: l2_normalize(mean_pool(Bert(bert_config).apply({"params": p}, i, m), m)))
    reference = np.asarray(embed(bert_params, ref_ids, ref_mask))
    ids, mask, _ = enc.tokenize(first)
    pad = config.length - ids.shape[1]
    if pad < 0:
        ids, mask = ids[:, :config.length], mask[:, :config.length]
    else:
        ids, mask = np.pad(ids, ((0, 0), (0, pad))), np.pad(mask, ((0, 0), (0, pad)))
    model = SentenceSimilarity(bert_config)
    params = {"bert": bert_params}
    point = "bert/embeddings/word_embeddings"
    methods = tuple(m for m in config.methods if m != "attention_rollout")   # BERT does not sow its weights
    collect = _Collector(methods)
    heat = []
    fractions = np.linspace(0, 1, config.steps)
    for sl, take in _batches(n, config.batch_size):
        real = sl.stop - sl.start
        args = (jnp.asarray(ids[take]), jnp.asarray(mask[take]), jnp.asarray(reference[take]))
        target = np.zeros(config.batch_size, np.int32)
        lrp = explain.relevance(model, params, args, target=target, rules="attnlrp", points=(point,))
        values = lrp.values[point]
        valid = mask[take].astype(bool)
        scores = {m: lrp.per_token(point) if m == "attnlrp" else explain_scores(
                      m, model, params, args, {}, target, None, config, point=point, seed=sl.start,
                      shape=values.shape[:2]) for m in methods}
        collect.add(faithfulness.curves_for_methods(
            model, params, args, values, {m: np.asarray(s, np.float32) for m, s in scores.items()}, valid,
            target=target, point=point, fractions=fractions, chunk=config.curve_chunk), real)
        for b in range(min(real, config.heatmaps - len(heat))):
            toks = [enc.tokenizer.id_to_token(int(i)) for i in ids[take[b]][valid[b]]]
            heat.append(heatmap.tokens_html(toks, scores["attnlrp"][b][valid[b]],
                                            f"similar to: {second[take[b]][:80]!r}"))
    abc, merged = collect.result()
    metrics = faithfulness.summarise(abc)
    metrics["num_examples"] = float(n)
    figures = [_plot_curves(workdir / "minilm_perturbation_curves.png", merged, "MiniLM similarity", "10 x cosine"),
               str(heatmap.write_html(workdir / "minilm_heatmaps.html", heat, "AttnLRP for MiniLM sentence similarity"))]
    comparable = config.model_layers == 0
    model_name = ("all-MiniLM-L6-v2" if comparable
                  else f"all-MiniLM-L6-v2 cut to {config.model_layers} layers")
    setting = f"{model_name} sentence similarity, {n} held-out {config.corpus} sentence pairs"
    return Result(
        metrics=metrics, headline="abc_attnlrp", figures=figures,
        claims=[claims.faithfulness_claim(metrics, setting, comparable=comparable,
                                          ig_steps=config.ig_steps if "integrated_gradients" in methods else None)],
        notes=(f"{n} consecutive sentence pairs from the held-out {config.corpus} test documents (first sentence of 6 to "
               f"{config.max_words} words); target 10 x cosine similarity "
               f"of {model_name} embeddings; word embeddings of the first sentence ({config.length} tokens at "
               f"most) zeroed MoRF/LeRF in {config.steps} steps."))


# --- Fashion-MNIST ViT ---------------------------------------------------------------------------

@registry.experiment("attnlrp/faithfulness_vit")
def faithfulness_vit(config, workdir) -> Result:
    """Patch-perturbation faithfulness of ViT explanations on Fashion-MNIST test images.

    The ViT is trained first with the one loop (`examples/fashion_mnist_vit` at `config.vit_scale`,
    with `config.vit_overrides`) in `workdir/vit`, or loaded from `config.vit_workdir` if that
    names a finished run; with `config.train_vit=False` (tiny) the untrained ViT is explained.
    """
    from jaxml.core.classification import to_float_images
    from jaxml.core.config import load_config
    from jaxml.core.train import train_and_evaluate
    from jaxml.data import fashion_mnist

    workdir = make_workdir(workdir)
    vit_config_path = pathlib.Path(registry.config_path("examples/fashion_mnist_vit"))
    arg = "" if config.vit_scale == "full" else config.vit_scale
    vit_config = load_config(f"{vit_config_path}:{arg}" if arg else str(vit_config_path), tuple(config.vit_overrides))
    test = fashion_mnist.load("test", in_memory=False)   # reads only the images explained
    n = config.num_examples
    idx = np.random.default_rng(config.seed).choice(len(test), size=n, replace=False)
    batch = test[np.sort(idx)]
    images = np.asarray(to_float_images(jnp.asarray(batch["image"])))
    if config.train_vit:
        task = registry.get_task(vit_config.task)(vit_config)   # by name: the shared ViT test bed
        outcome = train_and_evaluate(vit_config, config.vit_workdir or workdir / "vit", task=task)
        params, model = jax.device_get(outcome.state.params), task.model
        accuracy = float(outcome.metrics["test/accuracy"])
    else:   # tiny: the untrained ViT of the same config (a smoke test of the explanations, no training)
        model = ViT(num_classes=10, **vit_config.model.to_dict())
        params = jax.jit(model.init)(jax.random.PRNGKey(config.seed), images[:1])["params"]
        accuracy = float("nan")
    methods = tuple(config.methods)
    reference = "attnlrp_gamma" if "attnlrp_gamma" in methods else "attnlrp"
    collect = _Collector(methods)
    correct = []
    pixel_maps = None
    fractions = np.linspace(0, 1, config.steps)
    for sl, take in _batches(n, config.batch_size):
        real = sl.stop - sl.start
        args = (jnp.asarray(images[take]),)
        target = np.asarray(_greedy_program(model)(params, args, {}, None))
        correct += list((target == batch["label"][take])[:real])
        # The reference method's relevance at the patches (scored) and the pixels (drawn), in one pass.
        ref = explain.relevance(model, params, args, target=target, rules="attnlrp", points=("patches", "pixels"),
                                gamma=config.gamma if reference == "attnlrp_gamma" else None)
        values = ref.values["patches"]
        valid = np.ones(values.shape[:2], bool)
        scores = {m: ref.per_token("patches") if m == reference else explain_scores(
                      m, model, params, args, {}, target, None, config, point="patches", seed=sl.start,
                      shape=values.shape[:2]) for m in methods}
        collect.add(faithfulness.curves_for_methods(
            model, params, args, values, {m: np.asarray(s, np.float32) for m, s in scores.items()}, valid,
            target=target, point="patches", fractions=fractions, chunk=config.curve_chunk), real)
        if pixel_maps is None:
            k = min(config.heatmaps, real)
            pixel_maps = (images[take][:k, ..., 0], ref.relevance["pixels"][:k, ..., 0],
                          [f"{fashion_mnist.CLASS_NAMES[t]}" for t in target[:k]])
    abc, merged = collect.result()
    metrics = faithfulness.summarise(abc, reference=reference)
    metrics.update(num_examples=float(n), accuracy_on_explained=float(np.mean(correct)))
    if config.train_vit:
        metrics["vit_test_accuracy"] = accuracy
    figures = [_plot_curves(workdir / "vit_perturbation_curves.png", merged, "Fashion-MNIST ViT", "target logit"),
               str(heatmap.pixels_png(workdir / "vit_pixel_heatmaps.png", *pixel_maps))]
    comparable = config.vit_scale == "full" and config.train_vit
    vit_name = (f"Fashion-MNIST ViT ({vit_config.model.layers} layers, test accuracy {accuracy:.4f})" if config.train_vit
                else f"untrained Fashion-MNIST ViT ({vit_config.model.layers} layers)")
    setting = f"{vit_name}, {n} test images"
    return Result(metrics=metrics, headline=f"abc_{reference}", figures=figures,
                  claims=[claims.faithfulness_claim(metrics, setting, reference=reference, comparable=comparable,
                                                    ig_steps=config.ig_steps if "integrated_gradients" in methods
                                                    else None)],
                  notes=(f"{n} Fashion-MNIST test images, {vit_name}; patch embeddings zeroed "
                         f"MoRF/LeRF in {config.steps} steps; gamma = {config.gamma} on every linear layer for "
                         "the *_gamma methods."))


# --- Everything at one scale ----------------------------------------------------------------------

@registry.experiment("attnlrp/reproduce")
def reproduce(config, workdir) -> Result:
    """Runs the parts named in `config.parts` at `config.scale` and merges their metrics (`<part>/<name>`).

    Claims: the SmolLM2 faithfulness claim first (the paper's Table 1 claim), then the other parts'.
    """
    return gather_parts("attnlrp", config, pathlib.Path(__file__).parent / "configs", workdir,
                        headline_part="faithfulness_llm")


# --- the protocol study -------------------------------------------------------------------------

def protocol_rows(per_setting: dict[str, dict], reference: str = "attnlrp", resamples: int = 2000) -> list[dict]:
    """One row per (setting, corpus or 'all', method): mean area between the curves, mean MoRF and
    LeRF areas, and the paired 95% bootstrap interval of reference minus method on the same prefixes.

    per_setting: {setting: {"abc": {method: [n]}, "morf_area": ..., "lerf_area": ..., "corpus": [n]}}.
    """
    out = []
    for setting, per in per_setting.items():
        corpus = np.asarray(per["corpus"])
        for group in ["all"] + sorted(set(corpus.tolist())):
            take = np.ones(len(corpus), bool) if group == "all" else corpus == group
            ref = np.asarray(per["abc"][reference], np.float64)[take]
            for m, v in per["abc"].items():
                v = np.asarray(v, np.float64)[take]
                row = {"setting": setting, "corpus": group, "method": m, "n": int(take.sum()),
                       "abc": float(v.mean()), "morf": float(np.asarray(per["morf_area"][m])[take].mean()),
                       "lerf": float(np.asarray(per["lerf_area"][m])[take].mean())}
                if m != reference and take.sum() > 1:
                    d, lo, hi = faithfulness.paired_bootstrap_ci(ref, v, resamples=resamples)
                    row.update(diff=d, ci_lo=lo, ci_hi=hi)
                out.append(row)
    return out


def protocol_table(rows: list[dict], reference: str = "attnlrp") -> str:
    lines = [f"| setting | corpus | method | n | area between curves | MoRF area | LeRF area | {reference} minus method "
             "(95% CI) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ci = (f"{r['diff']:+.3f} [{r['ci_lo']:+.3f}, {r['ci_hi']:+.3f}]" if "diff" in r else "-")
        lines.append(f"| {r['setting']} | {r['corpus']} | {claims.NAMES.get(r['method'], r['method'])} | {r['n']} | "
                     f"{r['abc']:.3f} | {r['morf']:.3f} | {r['lerf']:.3f} | {ci} |")
    return "\n".join(lines)


@registry.experiment("attnlrp/protocol")
def protocol(config, workdir) -> Result:
    """`attnlrp/faithfulness_llm` under each BOS mode (the explanations of each mode are measured under
    every replacement value) on the same sentences and cuts, with per-corpus results, paired bootstrap
    intervals against AttnLRP and the single-token (first versus other) probes. Resumable per batch."""
    from jaxml.core.config import load_config

    workdir = make_workdir(workdir)
    per_setting, metrics = {}, {}
    for bos in config.bos_modes:
        c = load_config(f"{registry.config_path('attnlrp/faithfulness_llm')}:{config.faithfulness_arg}")
        c.bos, c.replacements = bool(bos), tuple(config.replacements)
        c.num_examples, c.methods, c.heatmaps = config.num_examples, tuple(config.methods), 0
        c.cost_claim = False
        for key in ("length", "steps", "ig_steps", "smoothgrad_samples", "shap_budget", "batch_size"):
            if config.get(key):
                c[key] = config[key]
        mode = "BOS" if bos else "no BOS"
        sub = workdir / mode.replace(" ", "-")
        result = faithfulness_llm(c, sub)
        per = json.loads((sub / "per_example.json").read_text())
        for r in config.replacements:
            setting = f"{mode}, {r} replacement"
            per_setting[setting] = {**per["by_replacement"][r], "corpus": per["corpus"]}
            prefix = "" if r == config.replacements[0] else f"{r}/"
            metrics.update({f"{setting}/{k.removeprefix(prefix)}": v for k, v in result.metrics.items()
                            if k.startswith(prefix) and "/" not in k.removeprefix(prefix)
                            and (k.removeprefix(prefix).startswith(("abc_", "first_", "other_", "all_")))})
        metrics.update({f"{mode}/seconds_{m}": result.metrics[f"seconds_{m}"] for m in config.methods})
        metrics.update({f"{mode}/{k}": v for k, v in result.metrics.items() if k.startswith("cost_units_")})
    table_rows = protocol_rows(per_setting)
    table = protocol_table(table_rows)
    (workdir / "table.md").write_text(table + "\n")
    print(table, flush=True)
    for r in table_rows:
        if "diff" in r and r["corpus"] == "all":
            metrics[f"{r['setting']}/attnlrp_minus_{r['method']}"] = r["diff"]
            metrics[f"{r['setting']}/attnlrp_minus_{r['method']}_ci_lo"] = r["ci_lo"]
            metrics[f"{r['setting']}/attnlrp_minus_{r['method']}_ci_hi"] = r["ci_hi"]
    first = next(iter(per_setting))
    return Result(metrics=metrics, headline=f"{first}/abc_attnlrp",
                  notes=f"{config.num_examples} held-out prefixes per setting ({config.faithfulness_arg or 'full'} "
                        f"faithfulness config), settings: BOS {tuple(config.bos_modes)} x replacement "
                        f"{tuple(config.replacements)}; paired 95% bootstrap intervals over prefixes")


@registry.experiment("attnlrp/plausibility")
def plausibility_experiment(config, workdir) -> Result:
    """The planted-fact task (`plausibility.py`) on SmolLM2: for the examples whose greedy next token
    is the planted value's first token, the share whose most relevant token lies in the value's span,
    per method (with a 95% bootstrap interval over examples), and the model's accuracy.

    The greedy pass runs over all examples first; only the correctly answered ones are explained
    (in full batches), each finished batch stored in `<workdir>/batches.jsonl` (a killed run resumes)."""
    from jaxml.papers.attnlrp import plausibility

    workdir = make_workdir(workdir)
    model, params, tok = smollm2(config.model_layers)
    ex = plausibility.planted_fact_examples(tok, tuple(config.corpora), n=config.num_examples, length=config.length,
                                            context_sentences=config.context_sentences, seed=config.seed)
    methods = tuple(config.methods)
    last = config.length - 1
    inputs = lambda take: ((jnp.asarray(ex.tokens[take]), jnp.asarray(ex.positions[take])),
                           {"key_valid": jnp.asarray(ex.valid[take])})
    predicted = []
    for sl, take in _batches(config.num_examples, config.batch_size):
        args, kwargs = inputs(take)
        predicted += np.asarray(_greedy_program(model)(params, args, kwargs, jnp.full(len(take), last)))[
            :sl.stop - sl.start].tolist()
    right = np.asarray(predicted) == ex.answer_ids
    correct = np.flatnonzero(right) if config.only_correct else np.arange(config.num_examples)
    print(f"[attnlrp] plausibility: the model answers {right.sum()}/{config.num_examples} planted facts", flush=True)
    stored = Rows(workdir / "batches.jsonl")
    fingerprint = _fingerprint(config, ("model_layers", "corpora", "num_examples", "length", "context_sentences",
                                        "batch_size", "methods", "ig_steps", "ig_chunk", "smoothgrad_samples",
                                        "smoothgrad_noise", "atman_suppression", "shap_budget", "seed"))
    hits = {m: [] for m in methods}
    head, position, query = _last_position_head(model, config.batch_size, config.length)
    for sl, pick in _batches(len(correct), config.batch_size):
        real = sl.stop - sl.start
        take = correct[pick]
        key = f"{sl.start}-{sl.stop}/{fingerprint}"
        row = stored.get(key)
        if row is None:
            args, kwargs = inputs(take)
            target = ex.answer_ids[take]
            lrp = explain.relevance(head, params, args, target=target, position=position, rules="attnlrp",
                                    model_kwargs=kwargs)
            values = lrp.values["embeddings"]
            got = {}
            for m in methods:
                scores = (lrp.per_token("embeddings") if m == "attnlrp" else explain_scores(
                    m, head, params, args, kwargs, target, position, config, seed=sl.start,
                    shape=values.shape[:2], values=values, removable=ex.valid[take], query_position=query))
                got[m] = plausibility.top_token_in_span(scores, ex.answer_span[take], ex.valid[take])[:real].tolist()
            row = stored.add(key, hits=got)
        for m in methods:
            hits[m] += row["hits"][m]
        print(f"[attnlrp] plausibility {sl.stop}/{len(correct)} explained: "
              + ", ".join(f"{m} {np.mean(h):.2f}" for m, h in hits.items()), flush=True)
    metrics = {"model_accuracy": float(right.mean()), "num_explained": float(len(correct)),
               "chance": float(np.mean(ex.answer_span[correct].sum(1) / ex.valid[correct].sum(1)))
               if len(correct) else float("nan")}
    rng = np.random.default_rng(0)
    for m, h in hits.items():
        h = np.asarray(h, np.float64)
        metrics[f"hit_{m}"] = float(h.mean()) if h.size else float("nan")
        if h.size > 1:
            boot = h[rng.integers(0, h.size, (2000, h.size))].mean(1)
            metrics[f"hit_{m}_ci_lo"], metrics[f"hit_{m}_ci_hi"] = (float(x) for x in np.quantile(boot, [0.025, 0.975]))
    metrics = {k: v for k, v in metrics.items() if np.isfinite(v)}
    return Result(metrics=metrics, headline="model_accuracy" if "hit_attnlrp" not in metrics else "hit_attnlrp",
                  notes=f"{config.num_examples} planted facts in held-out {', '.join(config.corpora)} passages, "
                        f"{right.sum()} answered correctly by the model, {len(correct)} explained (the answer's "
                        "logit); share whose top token lies in the planted value ('chance': the value's share of "
                        "the tokens)")


@registry.experiment("attnlrp/compressed")
def compressed_experiment(config, workdir) -> Result:
    """What quantization does to an explanation: SmolLM2 and its W4A8 L2QER version (jaxml.compress.lqer)
    explain the full model's greedy next token on the same held-out prefixes with AttnLRP (on the
    quantized model: the rules composed with the quantized Ops, `compressed.quantized_rules`). Per
    example: Spearman rank correlation of the two token relevances; each model's perturbation
    faithfulness (area between the curves, on its own forward pass); how often the two models
    predict the same token."""
    from scipy.stats import spearmanr

    from jaxml.compress import calibration, lqer
    from jaxml.compress.linear import quantized_ops
    from jaxml.papers.attnlrp import compressed

    workdir = make_workdir(workdir)
    model, params, tok = smollm2(config.model_layers)
    stats = calibration.calibrate(model, params, calibration.text_windows(tok, config.calib_sequences,
                                                                           config.calib_length, config.seed))
    method = lqer.Method("l2qer", w_bits=config.w_bits, rank=config.rank)
    params_q, report = lqer.quantize_model(params, stats, method)
    model_q = model.clone(ops=quantized_ops(report.act_format))
    rules_q = compressed.quantized_rules("attnlrp", report.act_format)
    n = config.num_examples
    prefixes = data.sample_prefixes(tok, tuple(config.corpora), n=n, length=config.length,
                                    min_tokens=config.min_tokens, seed=config.seed, bos=config.bos)
    last = config.length - 1
    fractions = np.linspace(0, 1, config.steps)
    rho, same, abc_fp, abc_q = [], [], [], []
    for sl, take in _batches(n, config.batch_size):
        real = sl.stop - sl.start
        args, kwargs = _llm_batch(prefixes, take)
        position = np.full(config.batch_size, last)
        target = np.asarray(_greedy_program(model)(params, args, kwargs, jnp.asarray(position)))
        target_q = np.asarray(_greedy_program(model_q)(params_q, args, kwargs, jnp.asarray(position)))
        same += (target == target_q)[:real].tolist()
        fp = explain.relevance(model, params, args, target=target, position=position, rules="attnlrp",
                               model_kwargs=kwargs)
        q = explain.relevance(model, params_q, args, target=target, position=position, rules=rules_q,
                              model_kwargs=kwargs)
        valid = prefixes.removable()[take]     # the tokens the perturbation test may remove (no BOS, no padding)
        for b in range(real):
            rho.append(float(spearmanr(fp.per_token("embeddings")[b][valid[b]],
                                       q.per_token("embeddings")[b][valid[b]]).statistic))
        for mdl, prm, expl, out in ((model, params, fp, abc_fp), (model_q, params_q, q, abc_q)):
            c = faithfulness.perturbation_curves(mdl, prm, args, expl.values["embeddings"], expl.per_token("embeddings"),
                                                 valid, target=target, position=position, fractions=fractions,
                                                 model_kwargs=kwargs, chunk=config.curve_chunk)
            out += faithfulness.area_between_curves({k: v[:real] if k != "fractions" else v
                                                     for k, v in c.items()}).tolist()
        print(f"[attnlrp] compressed {sl.stop}/{n}: Spearman {np.nanmean(rho):.3f}", flush=True)
    rho_a = np.asarray(rho)
    d, lo, hi = faithfulness.paired_bootstrap_ci(abc_fp, abc_q)
    metrics = {"spearman_mean": float(np.nanmean(rho_a)), "spearman_median": float(np.nanmedian(rho_a)),
               "same_prediction": float(np.mean(same)), "abc_fp": float(np.mean(abc_fp)),
               "abc_quantized": float(np.mean(abc_q)), "fp_minus_quantized": d, "fp_minus_quantized_ci_lo": lo,
               "fp_minus_quantized_ci_hi": hi, "bits_per_weight": float(report.bits_per_weight)}
    return Result(metrics=metrics, headline="spearman_mean",
                  notes=f"{method.label} ({report.bits_per_weight:.2f} bits per weight) vs the full model, {n} "
                        f"held-out prefixes{' after a BOS token' if config.bos else ''}; AttnLRP relevance of the "
                        "full model's greedy next token, Spearman over the removable tokens")
