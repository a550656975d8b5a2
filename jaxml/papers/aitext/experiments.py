"""aitext experiments: `aitext/generate` (the AI corpus), `aitext/validate` (known-alpha mixtures,
in-distribution and shifted, against instance-level baselines), `aitext/reproduce`."""

from __future__ import annotations

import json
import pathlib

import numpy as np

from jaxml import progress
from jaxml.core import registry
from jaxml.core.experiment import Result, gather_parts, make_workdir, pyplot
from jaxml.papers.aitext import corpus, estimator
from jaxml.papers.aitext import text as textlib


def make_llm(name: str, batch_size: int = 16):
    """The generator: 'smollm2' (SmolLM2-135M-Instruct) or 'tiny_random' (a 2-layer random Llama
    with SmolLM2's tokenizer, for tests: it exercises the pipeline, its text is noise)."""
    from jaxml.llm.local import LocalLLM

    if name == "smollm2":
        return LocalLLM.smollm2(batch_size=batch_size)
    if name == "tiny_random":
        import jax
        import jax.numpy as jnp

        from jaxml.models import llama

        tok = llama.smollm2_tokenizer()
        config = llama.LlamaConfig(vocab_size=tok.vocab_size, hidden=32, layers=2, heads=2, kv_heads=1,
                                   mlp_hidden=64, max_len=2048)
        model = llama.Llama(config)
        params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 1), jnp.int32), jnp.zeros((1, 1), jnp.int32))["params"]
        return LocalLLM(model, params, tok, batch_size=batch_size)
    raise ValueError(f"unknown model {name!r}; accepted: 'smollm2', 'tiny_random'")


def requested_passages(config) -> list[corpus.Passage]:
    """The human passages the config asks to rewrite, split by split."""
    pools = corpus.human_passages(seed=config.split_seed)
    out = []
    for split in corpus.SPLITS:
        n = int(config.n_passages.get(split, 0))
        if n > len(pools[split]):
            raise ValueError(f"n_passages.{split}={n} but the split has {len(pools[split])} passages")
        out += corpus.sample_passages(pools[split], n, seed=config.seed)
    return out


@registry.experiment("aitext/generate")
def generate(config, workdir) -> Result:
    """Generates (or resumes) the AI corpus into `<workdir>/generated.jsonl`."""
    workdir = make_workdir(workdir)
    passages = requested_passages(config)
    llm = make_llm(config.model, batch_size=config.batch)
    records = corpus.generate_ai(
        passages, llm, workdir / "generated.jsonl", outline_prompt=config.outline_prompt,
        expand_prompt=config.expand_prompt, outline_tokens=config.outline_tokens,
        expand_tokens=config.expand_tokens, batch=config.batch, seed=config.seed,
        sampling=dict(config.sampling))
    wanted = {p.pid for p in passages}
    texts = [r["text"] for pid, r in records.items() if pid in wanted]
    sents = corpus.sentence_pool(texts)
    metrics = {"passages": float(len(texts)), "sentences": float(len(sents)),
               "mean_words_per_text": sum(len(t.split()) for t in texts) / max(len(texts), 1)}
    progress.log(f"aitext/generate: {metrics}")
    return Result(metrics=metrics, headline="sentences",
                  notes=f"{config.model} two-stage rewrites (outline, then expansion); cache {workdir / 'generated.jsonl'}")


def vocabulary(name: str):
    """The vocabulary filter of a table: 'adjectives' (WordNet 3.0) or 'all' (no filter)."""
    if name == "adjectives":
        from jaxml.data import wordnet
        return wordnet.adjectives()
    if name == "all":
        return None
    raise ValueError(f"unknown vocabulary {name!r}; accepted: 'adjectives', 'all'")


def fit_all_tables(config, human_fit, ai_fit, out_dir=None) -> dict:
    """`{vocabulary name: Tables}` fitted on tokenized fit sentences (saved under out_dir)."""
    tables = {}
    for name in config.vocabularies:
        t = estimator.fit_tables(human_fit, ai_fit, min_human=config.min_human, min_ai=config.min_ai,
                                 vocabulary=vocabulary(name), name=name)
        if out_dir is not None:
            t.save(pathlib.Path(out_dir) / name)
        tables[name] = t
    return tables


def _logprob_scores(llm, sentences, batch: int = 64) -> np.ndarray:
    """Mean token log-probability of each sentence under the model (BOS + sentence), float [n].
    Sentences are batched by length so that little of each batch is padding."""
    from jaxml.llm import generate as gen

    ids = [llm.tokenizer.encode(s) for s in sentences]
    order = np.argsort([len(x) for x in ids], kind="stable")
    out = np.empty(len(ids))
    for start in range(0, len(ids), batch):
        chunk = order[start:start + batch]
        lps = gen.token_logprobs(llm.model, llm.params, [ids[i] for i in chunk], pad_id=llm.tokenizer.pad_id)
        out[chunk] = [float(lp.mean()) for lp in lps]
        if start and start % (batch * 10) == 0:
            progress.log(f"aitext: scored {start}/{len(ids)} sentences with the language model")
    return out


def _balanced_threshold(human_scores, ai_scores) -> float:
    """The threshold t (flag when score > t) that maximises balanced accuracy on calibration scores."""
    cand = np.unique(np.concatenate([human_scores, ai_scores]))
    tpr = 1 - np.searchsorted(np.sort(ai_scores), cand, side="right") / len(ai_scores)
    tnr = np.searchsorted(np.sort(human_scores), cand, side="right") / len(human_scores)
    return float(cand[np.argmax(tpr + tnr)])


@registry.experiment("aitext/validate")
def validate(config, workdir) -> Result:
    """Estimates alpha on validation sets mixed at known alpha, per split and vocabulary."""
    workdir = make_workdir(workdir)
    rng = np.random.default_rng(config.seed)
    records = corpus.load_ai_records(config.generated)
    pools = corpus.human_passages(seed=config.split_seed)
    splits = tuple(config.splits)
    human = {s: corpus.sentence_pool([p.text for p in pools[s]]) for s in ("fit",) + splits}
    ai = {s: corpus.sentence_pool([r["text"] for r in records if r["split"] == s]) for s in ("fit",) + splits}
    for s in splits:
        if len(human[s]) > config.max_human_pool:
            human[s] = [human[s][i] for i in np.sort(rng.choice(len(human[s]), config.max_human_pool, replace=False))]
    sizes = {f"{k}/{s}": len(v[s]) for k, v in (("human", human), ("ai", ai)) for s in v}
    progress.log(f"aitext/validate: sentences {sizes}")
    tok = {k: {s: [textlib.words(x) for x in v[s]] for s in v} for k, v in (("human", human), ("ai", ai))}
    tables = fit_all_tables(config, tok["human"]["fit"], tok["ai"]["fit"], workdir / "tables")
    for name, t in tables.items():
        progress.log(f"aitext/validate: {name} table, {len(t.words)} words; most AI-leaning: {', '.join(t.words[:12])}")

    # Log ratios of every pool sentence, once; a validation set is a choice of indices.
    d = {name: {k: {s: estimator.log_ratio(t, estimator.encode(t, tok[k][s])) for s in splits}
                for k in ("human", "ai")} for name, t in tables.items()}
    scores = None
    if config.logprob_baseline:
        llm = make_llm("smollm2")
        cal = {k: [v["fit"][i] for i in rng.choice(len(v["fit"]), min(config.logprob_calibration, len(v["fit"])),
                                                     replace=False)] for k, v in (("human", human), ("ai", ai))}
        threshold = _balanced_threshold(_logprob_scores(llm, cal["human"]), _logprob_scores(llm, cal["ai"]))
        scores = {k: {s: _logprob_scores(llm, v[s]) for s in config.logprob_splits if s in splits}
                  for k, v in (("human", human), ("ai", ai))}

    rows, set_size = [], {}
    for split in splits:
        # A split with few AI sentences gets smaller validation sets, so the largest alpha still fits.
        set_size[split] = min(config.n_sentences, int(len(ai[split]) / max(max(config.alphas), 1e-9)),
                              len(human[split]))
        if set_size[split] < config.n_sentences:
            progress.log(f"aitext/validate: {split} has {len(ai[split])} AI sentences: validation sets of "
                         f"{set_size[split]} sentences instead of {config.n_sentences}")
        for alpha in config.alphas:
            for trial in range(config.trials):
                h_idx, a_idx, true = corpus.mixture_indices(len(human[split]), len(ai[split]), alpha,
                                                            set_size[split], rng)
                row = {"split": split, "alpha": true, "trial": trial}
                for name in tables:
                    dd = np.concatenate([d[name]["human"][split][h_idx], d[name]["ai"][split][a_idx]])
                    est = estimator.bootstrap(dd, n_boot=config.n_boot, seed=int(rng.integers(2**31)))
                    row.update({f"{name}/mle": est.mle, f"{name}/midpoint": est.midpoint,
                                f"{name}/ci_low": est.ci[0], f"{name}/ci_high": est.ci[1],
                                f"{name}/classifier": float(np.mean(dd > 0))})
                if scores is not None and split in scores["human"]:
                    s_all = np.concatenate([scores["human"][split][h_idx], scores["ai"][split][a_idx]])
                    row["logprob"] = float(np.mean(s_all > threshold))
                rows.append(row)
        progress.log(f"aitext/validate: split {split} done")
    (workdir / "rows.json").write_text(json.dumps(rows, indent=1))

    metrics = {}
    for split in splits:
        r = [x for x in rows if x["split"] == split]
        truth = np.array([x["alpha"] for x in r])
        for name in tables:
            for what in ("mle", "midpoint", "classifier"):
                metrics[f"{split}/{name}/mae_{what}"] = float(np.mean(np.abs(np.array([x[f"{name}/{what}"] for x in r]) - truth)))
            lo = np.array([x[f"{name}/ci_low"] for x in r])
            hi = np.array([x[f"{name}/ci_high"] for x in r])
            metrics[f"{split}/{name}/ci_coverage"] = float(np.mean((lo <= truth + 1e-9) & (truth - 1e-9 <= hi)))
        if scores is not None and split in scores["human"]:
            metrics[f"{split}/logprob/mae"] = float(np.mean(np.abs(np.array([x["logprob"] for x in r]) - truth)))
    for name, t in tables.items():
        metrics[f"vocab_size/{name}"] = float(len(t.words))
    metrics.update({f"set_size/{s}": float(n) for s, n in set_size.items()})
    metrics.update({f"sentences/{k}": float(v) for k, v in sizes.items()})
    figures = [str(_plot(rows, splits, tuple(tables), scores is not None, workdir / "validation.png"))]
    (workdir / "summary.md").write_text(_summary_table(rows, splits, tuple(tables), scores is not None))
    first = config.vocabularies[0]
    return Result(metrics=metrics, headline=f"{splits[0]}/{first}/mae_mle", figures=figures,
                  notes=(f"validation sets of {sorted(set(set_size.values()))} sentences x {config.trials} trials per alpha; AI text: "
                         f"SmolLM2-135M-Instruct two-stage rewrites ({config.generated}); human: Austen (in-distribution), "
                         "Persuasion (held-out novel), KJV (other genre)"))


def _summary_table(rows, splits, vocabularies, logprob: bool) -> str:
    """Markdown: mean estimate per true alpha (MLE, midpoint, CI coverage, baselines) for each split."""
    lines = []
    for split in splits:
        r = [x for x in rows if x["split"] == split]
        head = ["true alpha"] + [f"{v} {k}" for v in vocabularies for k in ("MLE", "midpoint", "CI covers")] \
            + [f"{v} d>0 classifier" for v in vocabularies] + (["log-prob detector"] if logprob else [])
        lines += [f"### {split}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for a in sorted({x["alpha"] for x in r}):
            ra = [x for x in r if x["alpha"] == a]
            cells = [f"{a:.3f}"]
            for v in vocabularies:
                cells += [f"{np.mean([x[f'{v}/mle'] for x in ra]):.3f}", f"{np.mean([x[f'{v}/midpoint'] for x in ra]):.3f}",
                          f"{np.mean([x[f'{v}/ci_low'] <= a + 1e-9 and a - 1e-9 <= x[f'{v}/ci_high'] for x in ra]):.0%}"]
            cells += [f"{np.mean([x[f'{v}/classifier'] for x in ra]):.3f}" for v in vocabularies]
            if logprob:
                cells.append(f"{np.mean([x['logprob'] for x in ra]):.3f}" if "logprob" in ra[0] else "-")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _plot(rows, splits, vocabularies, logprob: bool, path) -> pathlib.Path:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(splits), figsize=(4.2 * len(splits), 3.8), squeeze=False)
    for ax, split in zip(axes[0], splits):
        r = [x for x in rows if x["split"] == split]
        alphas = sorted({x["alpha"] for x in r})

        def mean_of(key):
            return [np.mean([x[key] for x in r if x["alpha"] == a]) for a in alphas]

        for name, marker in zip(vocabularies, "os"):
            est = np.array(mean_of(f"{name}/mle"))
            lo, hi = np.array(mean_of(f"{name}/ci_low")), np.array(mean_of(f"{name}/ci_high"))
            ax.errorbar(alphas, est, yerr=[est - lo, hi - est], marker=marker, ms=4, capsize=2, label=f"MLE ({name})")
            ax.plot(alphas, mean_of(f"{name}/classifier"), ls=":", label=f"per-sentence d>0 ({name})")
        if logprob and "logprob" in r[0]:
            ax.plot(alphas, mean_of("logprob"), ls="--", color="gray", label="SmolLM2 log-prob detector")
        ax.plot([0, max(alphas)], [0, max(alphas)], color="black", lw=0.8)
        ax.set(title=split, xlabel="true alpha", ylabel="estimated alpha")
        ax.set_ylim(-0.02, max(0.4, max(alphas) + 0.05))
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return pathlib.Path(path)


@registry.experiment("aitext/reproduce")
def reproduce(config, workdir) -> Result:
    """The validation at `config.scale` (the generation itself is `aitext/generate`, run separately)."""
    return gather_parts("aitext", config, pathlib.Path(__file__).parent / "configs", workdir)
