"""AttnLRP experiments: faithfulness on SmolLM2, MiniLM and a Fashion-MNIST ViT, and cost.

Registered: `attnlrp/faithfulness_llm`, `attnlrp/faithfulness_minilm`, `attnlrp/faithfulness_vit`,
`attnlrp/cost`, `attnlrp/reproduce` (all of them at one scale). Configs in `configs/<name>.py`.
"""

from __future__ import annotations

import json
import pathlib
import time

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxml.core import registry
from jaxml.core.experiment import Result, gather_parts
from jaxml.nn.ops import DEFAULT_OPS, Ops
from jaxml.papers.attnlrp import baselines, data, explain, faithfulness, heatmap

LLM_METHODS = ("attnlrp", "cp_lrp", "gradient_x_input", "integrated_gradients", "smoothgrad",
               "attention_rollout", "random")
VIT_METHODS = ("attnlrp_gamma", "attnlrp", "cp_lrp_gamma", "gradient_x_input", "integrated_gradients",
               "smoothgrad", "random")


def explain_scores(method: str, model, params, args, kwargs, target, position, config, point="embeddings",
                   rule_kwargs=None, seed=0, shape=None) -> np.ndarray:
    """Relevance per position [batch, len] from one method (sum over the feature axis).

    `shape` ([batch, len] at `point`) is needed by the random baseline only.
    """
    rule_kwargs = dict(rule_kwargs or {})
    common = dict(target=target, position=position, model_kwargs=kwargs)
    if method in ("attnlrp_gamma", "cp_lrp_gamma"):   # the gamma rule on every Linear layer (ViT)
        return explain.relevance(model, params, args, rules=method.removesuffix("_gamma"), points=(point,),
                                 gamma=config.gamma, **common).per_token(point)
    if method in ("attnlrp", "cp_lrp", "gradient_x_input"):
        rules = "gradient" if method == "gradient_x_input" else method
        kw = rule_kwargs if method != "gradient_x_input" else {}
        return explain.relevance(model, params, args, rules=rules, points=(point,), **common, **kw).per_token(point)
    if method == "integrated_gradients":
        return baselines.integrated_gradients(model, params, args, point=point, steps=config.ig_steps, **common).sum(-1)
    if method == "smoothgrad":
        return baselines.smoothgrad(model, params, args, point=point, samples=config.smoothgrad_samples,
                                    noise=config.smoothgrad_noise, seed=seed, **common).sum(-1)
    if method == "attention_rollout":
        return baselines.attention_rollout(model, params, args, position=position, model_kwargs=kwargs)
    if method == "random":
        if shape is None:
            raise ValueError("the random baseline needs shape=[batch, len]")
        return baselines.random_relevance(tuple(shape), seed=seed)
    raise ValueError(f"unknown method {method!r}; accepted: {sorted(set(LLM_METHODS + VIT_METHODS))}")


def _summarise(abc: dict[str, np.ndarray], reference: str = "attnlrp") -> dict[str, float]:
    out = {}
    for m, v in abc.items():
        out[f"abc_{m}"] = float(v.mean())
        out[f"abc_{m}_se"] = float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0
        if m != reference and reference in abc:
            d = abc[reference] - v
            out[f"{reference}_minus_{m}"] = float(d.mean())
            out[f"{reference}_minus_{m}_se"] = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else 0.0
    return out


def _plot_curves(path, curves: dict[str, dict[str, np.ndarray]], title: str, ylabel: str):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for name, c in curves.items():
        axes[0].plot(c["fractions"], c["morf"].mean(0), label=name)
        axes[1].plot(c["fractions"], c["lerf"].mean(0), label=name)
    axes[0].set(title=f"{title}: MoRF (most relevant removed first)", xlabel="fraction of inputs zeroed", ylabel=ylabel)
    axes[1].set(title="LeRF (least relevant first)", xlabel="fraction of inputs zeroed")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


# --- SmolLM2 ------------------------------------------------------------------------------------

@registry.experiment("attnlrp/faithfulness_llm")
def faithfulness_llm(config, workdir) -> Result:
    """Perturbation faithfulness of next-token explanations on SmolLM2-135M-Instruct."""
    from jaxml.models.llama import load_smollm2

    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    model, params, tok = load_smollm2()
    prefixes = data.sample_prefixes(tok, tuple(config.corpora), n=config.num_examples, length=config.length,
                                    min_tokens=config.min_tokens, seed=config.seed)
    methods = tuple(config.methods)
    abc = {m: [] for m in methods}
    curves = {m: [] for m in methods}
    seconds = {m: 0.0 for m in methods}
    conservation, heat_rows, heat_html = [], [], []
    last = config.length - 1
    n = len(prefixes.tokens)
    for start in range(0, n, config.batch_size):
        sl = slice(start, start + config.batch_size)
        args = (jnp.asarray(prefixes.tokens[sl]), jnp.asarray(prefixes.positions[sl]))
        kwargs = {"key_valid": jnp.asarray(prefixes.valid[sl])}
        logits = model.apply({"params": params}, *args, **kwargs)[0][:, last]
        target = np.asarray(jnp.argmax(logits, -1))
        position = np.full(len(target), last)
        t0 = time.perf_counter()
        lrp = explain.relevance(model, params, args, target=target, position=position, rules="attnlrp",
                                model_kwargs=kwargs)
        seconds["attnlrp"] = seconds.get("attnlrp", 0.0) + time.perf_counter() - t0
        conservation += list(lrp.conservation("embeddings"))
        values = lrp.values["embeddings"]
        for m in methods:
            t0 = time.perf_counter()
            scores = lrp.per_token("embeddings") if m == "attnlrp" else explain_scores(
                m, model, params, args, kwargs, target, position, config, seed=start, shape=values.shape[:2])
            if m != "attnlrp":
                seconds[m] += time.perf_counter() - t0
            removable = prefixes.valid[sl].copy()
            if config.protect_first:   # keep each prefix's first token (the attention sink) in place
                removable[np.arange(len(removable)), removable.argmax(1)] = False
            c = faithfulness.perturbation_curves(model, params, args, values, np.asarray(scores, np.float32),
                                                 removable, target=target, position=position,
                                                 fractions=np.linspace(0, 1, config.steps), model_kwargs=kwargs,
                                                 chunk=len(target) * config.steps)
            abc[m].append(faithfulness.area_between_curves(c))
            curves[m].append(c)
            if m == "attnlrp" and len(heat_rows) < config.heatmaps:
                for b in range(min(len(target), config.heatmaps - len(heat_rows))):
                    valid = prefixes.valid[sl][b]
                    toks = [tok.decode([i]) for i in prefixes.tokens[sl][b][valid]]
                    title = f"next token {tok.decode([int(target[b])])!r} ({prefixes.corpus[start + b]})"
                    heat_rows.append((title, toks, scores[b][valid]))
                    heat_html.append(heatmap.tokens_html(toks, scores[b][valid], title))
        done = min(start + config.batch_size, n)
        print(f"[attnlrp] {done}/{n} examples; mean ABC so far: "
              + ", ".join(f"{m} {np.concatenate(abc[m]).mean():.3f}" for m in methods), flush=True)
    abc = {m: np.concatenate(v) for m, v in abc.items()}
    merged = {m: {k: (np.concatenate([c[k] for c in cs]) if k != "fractions" else cs[0][k]) for k in cs[0]}
              for m, cs in curves.items()}
    metrics = _summarise(abc)
    metrics.update({f"seconds_{m}": s for m, s in seconds.items()})   # compilation included
    cons = np.asarray(conservation)
    metrics.update(num_examples=float(n), conservation_mean=float(cons.mean()),
                   conservation_median=float(np.median(cons)), conservation_min=float(cons.min()),
                   conservation_max=float(cons.max()))
    figures = [_plot_curves(workdir / "smollm2_perturbation_curves.png", merged, "SmolLM2-135M", "target logit")]
    if heat_rows:
        figures.append(str(heatmap.tokens_png(workdir / "smollm2_heatmaps.png", heat_rows)))
        figures.append(str(heatmap.write_html(workdir / "smollm2_heatmaps.html", heat_html,
                                              "AttnLRP relevance for SmolLM2-135M next-token predictions")))
    (workdir / "per_example.json").write_text(json.dumps(
        {"abc": {m: v.tolist() for m, v in abc.items()}, "conservation": cons.tolist(),
         "corpus": prefixes.corpus}, indent=1))
    required = [m for m in ("gradient_x_input", "integrated_gradients", "random") if m in abc]
    beaten = [m for m in required if metrics["abc_attnlrp"] > metrics[f"abc_{m}"]]
    not_beaten = [m for m in required if m not in beaten]
    return Result(
        metrics=metrics, headline="abc_attnlrp", figures=figures,
        notes=(f"{n} held-out prefixes ({', '.join(config.corpora)} test documents), {config.length} tokens at most, "
               f"explaining SmolLM2-135M-Instruct's greedy next token; input embeddings zeroed in "
               f"{config.steps} steps{' (the first token of each prefix never zeroed)' if config.protect_first else ''}; "
               "area between LeRF and MoRF curves in logit units (mean over examples). "
               + (f"On the mean AttnLRP beats each of {', '.join(required)}. " if not not_beaten else
                  (f"On the mean AttnLRP beats {', '.join(beaten)} but not {', '.join(not_beaten)}. " if beaten else
                   f"On the mean AttnLRP beats none of {', '.join(required)}. "))
               + 
               "The paper's Table 1 (LLaMA-2-7B, 4000 examples) is not reproduced at this scale."))


# --- Cost -----------------------------------------------------------------------------------------

@registry.experiment("attnlrp/cost")
def cost(config, workdir) -> Result:
    """Wall time of AttnLRP against one forward+backward pass and against Integrated Gradients."""
    from jaxml.models.llama import load_smollm2

    del workdir
    model, params, tok = load_smollm2()
    prefixes = data.sample_prefixes(tok, ("austen",), n=config.batch_size, length=config.length,
                                    min_tokens=min(config.length - 1, 8), seed=config.seed)
    args = (jnp.asarray(prefixes.tokens), jnp.asarray(prefixes.positions))
    kwargs = {"key_valid": jnp.asarray(prefixes.valid)}
    target = np.zeros(config.batch_size, np.int32) + 13
    position = np.full(config.batch_size, config.length - 1)

    def timed(fn):
        jax.block_until_ready(fn())   # compile
        times = []
        for _ in range(config.repeats):
            t0 = time.perf_counter()
            jax.block_until_ready(fn())
            times.append(time.perf_counter() - t0)
        return float(np.median(times))

    grad = lambda rules: (lambda: explain.gradients(model, params, args, target=target, position=position,
                                                    rules=rules, model_kwargs=kwargs))
    t_fb = timed(grad("gradient"))
    t_lrp = timed(grad("attnlrp"))
    t_ig = timed(lambda: baselines.integrated_gradients(model, params, args, target=target, position=position,
                                                        steps=config.ig_steps, chunk=config.ig_chunk,
                                                        model_kwargs=kwargs))
    return Result(
        metrics={"attnlrp_over_forward_backward": t_lrp / t_fb, "ig_over_attnlrp": t_ig / t_lrp,
                 "seconds_forward_backward": t_fb, "seconds_attnlrp": t_lrp, "seconds_ig": t_ig},
        headline="attnlrp_over_forward_backward",
        notes=(f"SmolLM2-135M, batch {config.batch_size} x {config.length} tokens, median of {config.repeats} "
               f"runs on {jax.devices()[0].platform}; IG with {config.ig_steps} steps ({config.ig_chunk} per call)."))


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
    from jaxml.models.bert import SentenceEncoder

    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    enc = SentenceEncoder.load()
    sentences = [s for s in data.held_out_sentences("austen") if 6 <= len(s.split()) <= 40]
    rng = np.random.default_rng(config.seed)
    idx = rng.choice(len(sentences) - 1, size=config.num_examples, replace=False)
    first, second = [sentences[i] for i in idx], [sentences[i + 1] for i in idx]
    reference = enc.encode(second)
    ids, mask, _ = enc.tokenize(first)
    pad = config.length - ids.shape[1]
    if pad < 0:
        ids, mask = ids[:, :config.length], mask[:, :config.length]
    else:
        ids, mask = np.pad(ids, ((0, 0), (0, pad))), np.pad(mask, ((0, 0), (0, pad)))
    model = SentenceSimilarity(enc.config)
    params = {"bert": enc.params}
    point = "bert/embeddings/word_embeddings"
    methods = tuple(config.methods)
    abc = {m: [] for m in methods}
    curves = {m: [] for m in methods}
    heat = []
    for start in range(0, config.num_examples, config.batch_size):
        sl = slice(start, start + config.batch_size)
        args = (jnp.asarray(ids[sl]), jnp.asarray(mask[sl]), jnp.asarray(reference[sl]))
        target = np.zeros(len(ids[sl]), np.int32)
        lrp = explain.relevance(model, params, args, target=target, rules="attnlrp", points=(point,))
        values = lrp.values[point]
        valid = mask[sl].astype(bool)
        for m in methods:
            if m == "attnlrp":
                scores = lrp.per_token(point)
            elif m == "attention_rollout":
                continue
            else:
                scores = explain_scores(m, model, params, args, {}, target, None, config, point=point, seed=start,
                                        shape=values.shape[:2])
            c = faithfulness.perturbation_curves(model, params, args, values, np.asarray(scores, np.float32), valid,
                                                 target=target, point=point, fractions=np.linspace(0, 1, config.steps),
                                                 chunk=len(target) * config.steps)
            abc[m].append(faithfulness.area_between_curves(c))
            curves[m].append(c)
            if m == "attnlrp" and len(heat) < config.heatmaps:
                for b in range(min(len(target), config.heatmaps - len(heat))):
                    toks = [enc.tokenizer.id_to_token(int(i)) for i in ids[sl][b][valid[b]]]
                    heat.append(heatmap.tokens_html(toks, scores[b][valid[b]],
                                                    f"similar to: {second[start + b][:80]!r}"))
    abc = {m: np.concatenate(v) for m, v in abc.items() if v}
    merged = {m: {k: (np.concatenate([c[k] for c in cs]) if k != "fractions" else cs[0][k]) for k in cs[0]}
              for m, cs in curves.items() if cs}
    metrics = _summarise(abc)
    metrics["num_examples"] = float(config.num_examples)
    figures = [_plot_curves(workdir / "minilm_perturbation_curves.png", merged, "MiniLM similarity", "10 x cosine"),
               str(heatmap.write_html(workdir / "minilm_heatmaps.html", heat, "AttnLRP for MiniLM sentence similarity"))]
    return Result(metrics=metrics, headline="abc_attnlrp", figures=figures,
                  notes=(f"{config.num_examples} consecutive sentence pairs from the held-out Austen novel; target "
                         "10 x cosine similarity of all-MiniLM-L6-v2 embeddings; word embeddings of the first "
                         "sentence zeroed MoRF/LeRF."))


# --- Fashion-MNIST ViT ---------------------------------------------------------------------------

@registry.experiment("attnlrp/faithfulness_vit")
def faithfulness_vit(config, workdir) -> Result:
    """Patch-perturbation faithfulness of ViT explanations on Fashion-MNIST test images.

    The ViT is trained first with the one loop (`examples/fashion_mnist_vit` at `config.vit_scale`)
    in `workdir/vit`, or loaded from `config.vit_workdir` if that names a finished run.
    """
    from jaxml.core.classification import to_float_images
    from jaxml.core.config import load_config
    from jaxml.core.train import train_and_evaluate
    from jaxml.data import fashion_mnist

    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    vit_config_path = pathlib.Path(registry.config_path("examples/fashion_mnist_vit"))
    arg = "" if config.vit_scale == "full" else config.vit_scale
    vit_config = load_config(f"{vit_config_path}:{arg}" if arg else str(vit_config_path))
    task = registry.get_task(vit_config.task)(vit_config)   # by name: the shared ViT test bed
    outcome = train_and_evaluate(vit_config, config.vit_workdir or workdir / "vit", task=task)
    params = jax.device_get(outcome.state.params)
    model = task.model
    test = fashion_mnist.load("test")
    idx = np.random.default_rng(config.seed).choice(len(test), size=config.num_examples, replace=False)
    batch = test[np.sort(idx)]
    images = np.asarray(to_float_images(jnp.asarray(batch["image"])))
    methods = tuple(config.methods)
    abc = {m: [] for m in methods}
    curves = {m: [] for m in methods}
    correct = []
    pixel_maps = None
    for start in range(0, config.num_examples, config.batch_size):
        sl = slice(start, start + config.batch_size)
        args = (jnp.asarray(images[sl]),)
        logits = model.apply({"params": params}, *args)
        target = np.asarray(jnp.argmax(logits, -1))
        correct += list(target == batch["label"][sl])
        base = explain.relevance(model, params, args, target=target, rules="gradient", points=("patches",))
        values = base.values["patches"]
        valid = np.ones(values.shape[:2], bool)
        for m in methods:
            scores = explain_scores(m, model, params, args, {}, target, None, config, point="patches", seed=start,
                                    shape=values.shape[:2])
            c = faithfulness.perturbation_curves(model, params, args, values, np.asarray(scores, np.float32), valid,
                                                 target=target, point="patches", fractions=np.linspace(0, 1, config.steps),
                                                 chunk=len(target) * config.steps)
            abc[m].append(faithfulness.area_between_curves(c))
            curves[m].append(c)
        if pixel_maps is None:
            n = min(config.heatmaps, len(target))
            pix = explain.relevance(model, params, (args[0][:n],), target=target[:n], rules="attnlrp",
                                    points=("pixels",), gamma=config.gamma)
            pixel_maps = (images[sl][:n, ..., 0], pix.relevance["pixels"][..., 0],
                          [f"{fashion_mnist.CLASS_NAMES[t]}" for t in target[:n]])
    abc = {m: np.concatenate(v) for m, v in abc.items()}
    merged = {m: {k: (np.concatenate([c[k] for c in cs]) if k != "fractions" else cs[0][k]) for k in cs[0]}
              for m, cs in curves.items()}
    metrics = _summarise(abc, reference="attnlrp_gamma" if "attnlrp_gamma" in abc else "attnlrp")
    metrics.update(num_examples=float(config.num_examples), vit_test_accuracy=float(outcome.metrics["test/accuracy"]),
                   accuracy_on_explained=float(np.mean(correct)))
    figures = [_plot_curves(workdir / "vit_perturbation_curves.png", merged, "Fashion-MNIST ViT", "target logit"),
               str(heatmap.pixels_png(workdir / "vit_pixel_heatmaps.png", *pixel_maps))]
    return Result(metrics=metrics, headline="abc_attnlrp_gamma" if "attnlrp_gamma" in abc else "abc_attnlrp",
                  figures=figures,
                  notes=(f"{config.num_examples} Fashion-MNIST test images, ViT ({vit_config.model.layers} layers, "
                         f"test accuracy {outcome.metrics['test/accuracy']:.4f}); patch embeddings zeroed "
                         f"MoRF/LeRF in {config.steps} steps; gamma = {config.gamma} on every linear layer for "
                         "the *_gamma methods."))


# --- Everything at one scale ----------------------------------------------------------------------

@registry.experiment("attnlrp/reproduce")
def reproduce(config, workdir) -> Result:
    """Runs the parts named in `config.parts` at `config.scale` and merges their metrics (`<part>/<name>`)."""
    return gather_parts("attnlrp", config, pathlib.Path(__file__).parent / "configs", workdir,
                        headline_part="faithfulness_llm")
