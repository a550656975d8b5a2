"""aitext experiments: `aitext/generate` (the AI corpus), `aitext/validate` (known-alpha mixtures,
in-distribution and shifted, against instance-level baselines), `aitext/reproduce`."""

from __future__ import annotations

import json
import pathlib

import numpy as np

from jaxml import progress
from jaxml.core import registry
from jaxml.core.experiment import Claim, Result, gather_parts, make_workdir, pyplot, save_figure, verdict
from jaxml.papers.aitext import corpus, estimator, metrics as M
from jaxml.papers.aitext import text as textlib


CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def byte_tokenizer():
    """A byte-level tokenizer (256 byte tokens, no merges) with ChatML's special tokens and template:
    what the `tiny_random` model reads and writes (fast to build; the text is noise anyway)."""
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers

    from jaxml.models.tokenizer import Tokenizer

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    vocab = {t: i for i, t in enumerate(specials + sorted(pre_tokenizers.ByteLevel.alphabet()))}
    backend = tokenizers.Tokenizer(models.BPE(vocab, []))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens([tokenizers.AddedToken(t, special=True, normalized=False) for t in specials])
    return Tokenizer(backend=backend, bos_id=0, eos_id=0, pad_id=0, stop_ids=(0, 2), chat_template=CHATML)


def make_llm(name: str, batch_size: int = 16):
    """The generator: 'smollm2' (SmolLM2-135M-Instruct) or 'tiny_random' (a 2-layer Llama with random
    weights over a byte-level tokenizer, for tests: it exercises the pipeline, its text is noise)."""
    from jaxml.llm.local import LocalLLM

    if name == "smollm2":
        return LocalLLM.smollm2(batch_size=batch_size)
    if name == "tiny_random":
        import jax
        import jax.numpy as jnp

        from jaxml.models import llama

        tok = byte_tokenizer()
        config = llama.LlamaConfig(vocab_size=tok.vocab_size, hidden=32, layers=2, heads=2, kv_heads=1,
                                   mlp_hidden=64, max_len=2048)
        model = llama.Llama(config)
        # Random weights drawn in NumPy from the parameter shapes (no per-op compilation of an eager init).
        shapes = jax.eval_shape(model.init, jax.random.PRNGKey(0), jnp.zeros((1, 1), jnp.int32),
                                jnp.zeros((1, 1), jnp.int32))["params"]
        rng = np.random.default_rng(0)
        params = jax.tree_util.tree_map(lambda s: jnp.asarray(rng.normal(0, 0.2, s.shape), s.dtype), shapes)
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


VOCABULARIES = ("adjectives", "pos", "all")


def vocabulary(name: str):
    """The vocabulary filter of a table: 'adjectives' (the WordNet 3.0 word list), 'pos' (no list:
    the sentences are tokenized into their adjective-tagged words, see `tokens`) or 'all' (no filter)."""
    if name == "adjectives":
        from jaxml.data import wordnet
        return wordnet.adjectives()
    if name in ("pos", "all"):
        return None
    raise ValueError(f"unknown vocabulary {name!r}; accepted: {VOCABULARIES}")


def tokens(name: str) -> str:
    """How a vocabulary's sentences are tokenized (`text.tokenize`): 'pos' reads only the words a
    part-of-speech tagger marks as adjectives in the sentence (`pos.py`), the others every word."""
    if name not in VOCABULARIES:
        raise ValueError(f"unknown vocabulary {name!r}; accepted: {VOCABULARIES}")
    return "pos-adjectives" if name == "pos" else "words"


def fit_all_tables(config, human_fit: dict, ai_fit: dict, out_dir=None) -> dict:
    """`{vocabulary name: Tables}` fitted on the fit sentences tokenized for each vocabulary
    (`human_fit`, `ai_fit`: `{tokens: token lists}`, see `tokens`), saved under out_dir."""
    tables = {}
    for name in config.vocabularies:
        t = estimator.fit_tables(human_fit[tokens(name)], ai_fit[tokens(name)], min_human=config.min_human,
                                 min_ai=config.min_ai, vocabulary=vocabulary(name), name=name, tokens=tokens(name))
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
    # Every pool sentence tokenized once per kind of tokens (all words; adjective-tagged words for 'pos').
    tok = {kind: {k: {s: textlib.tokenize(v[s], kind) for s in v} for k, v in (("human", human), ("ai", ai))}
           for kind in {tokens(name) for name in config.vocabularies}}
    tables = fit_all_tables(config, {kind: t["human"]["fit"] for kind, t in tok.items()},
                            {kind: t["ai"]["fit"] for kind, t in tok.items()}, workdir / "tables")
    for name, t in tables.items():
        progress.log(f"aitext/validate: {name} table, {len(t.words)} words; most AI-leaning: {', '.join(t.words[:12])}")

    # Log ratios of every pool sentence, once; a validation set is a choice of indices.
    d = {name: {k: {s: estimator.log_ratio(t, estimator.encode(t, tok[t.tokens][k][s])) for s in splits}
                for k in ("human", "ai")} for name, t in tables.items()}
    scores = None
    if config.logprob_baseline:
        llm = make_llm("smollm2")
        cal = {k: [v["fit"][i] for i in rng.choice(len(v["fit"]), min(config.logprob_calibration, len(v["fit"])),
                                                     replace=False)] for k, v in (("human", human), ("ai", ai))}
        threshold = M.balanced_threshold(_logprob_scores(llm, cal["human"]), _logprob_scores(llm, cal["ai"]))
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
                boot_seed = int(rng.integers(2**31))     # one per set: every vocabulary gets the same set and seed
                for name in tables:
                    dd = np.concatenate([d[name]["human"][split][h_idx], d[name]["ai"][split][a_idx]])
                    est = estimator.bootstrap(dd, n_boot=config.n_boot, seed=boot_seed)
                    row.update({f"{name}/mle": est.mle, f"{name}/midpoint": est.midpoint,
                                f"{name}/ci_low": est.ci[0], f"{name}/ci_high": est.ci[1],
                                f"{name}/classifier": M.flagged_fraction(dd, 0.0)})
                if scores is not None and split in scores["human"]:
                    s_all = np.concatenate([scores["human"][split][h_idx], scores["ai"][split][a_idx]])
                    row["logprob"] = M.flagged_fraction(s_all, threshold)
                rows.append(row)
        progress.log(f"aitext/validate: split {split} done")
    (workdir / "rows.json").write_text(json.dumps(rows, indent=1))

    metrics = {}
    for split in splits:
        r = [x for x in rows if x["split"] == split]
        truth = [x["alpha"] for x in r]
        for name in tables:
            for what in ("mle", "midpoint", "classifier"):
                metrics[f"{split}/{name}/mae_{what}"] = M.mean_abs_error([x[f"{name}/{what}"] for x in r], truth)
            metrics[f"{split}/{name}/ci_coverage"] = M.ci_coverage([x[f"{name}/ci_low"] for x in r],
                                                                   [x[f"{name}/ci_high"] for x in r], truth)
        metrics[f"sets/{split}"] = float(len(r))
        if scores is not None and split in scores["human"]:
            metrics[f"{split}/logprob/mae"] = M.mean_abs_error([x["logprob"] for x in r], truth)
    for name, t in tables.items():
        metrics[f"vocab_size/{name}"] = float(len(t.words))
    metrics.update({f"set_size/{s}": float(n) for s, n in set_size.items()})
    metrics.update({f"sentences/{k}": float(v) for k, v in sizes.items()})
    figures = [_plot(rows, splits, tuple(tables), scores is not None, workdir / "validation.png")]
    (workdir / "summary.md").write_text(_summary_table(rows, splits, tuple(tables), scores is not None))
    first = config.vocabularies[0]
    return Result(metrics=metrics, headline=f"{splits[0]}/{first}/mae_mle", figures=figures,
                  claims=validation_claims(metrics, config),
                  notes=(f"validation sets of {sorted(set(set_size.values()))} sentences x {config.trials} trials per alpha; AI text: "
                         f"SmolLM2-135M-Instruct two-stage rewrites ({config.generated}); human: Austen (in-distribution), "
                         "Persuasion (held-out novel), KJV (other genre)"))


MAX_MAE = 0.03          # "a few percent": the reference code's validation target (|error| <= 3%)
MIN_ERROR_RATIO = 2.0   # "far better": a baseline's error at least twice the MLE's
SPLIT_WORDS = {"test": "in distribution", "shift_novel": "held-out novel", "shift_genre": "other genre"}


VOCAB_WORDS = {"adjectives": "adjectives from the WordNet 3.0 word list",
               "pos": "adjectives tagged in context (TextBlob's Pattern tagger)",
               "all": "all words (no filter)"}


def validation_claims(m: dict, config) -> list[Claim]:
    """The paper's claims about its estimator, with verdicts from the validation metrics `m`
    (not comparable at tiny scale, or when a split the claim needs was not run).

    The paper's vocabulary is its adjectives, and how a word is judged an adjective is not stated;
    each reading that was run ('adjectives': the WordNet list; 'pos': the tagger) gets its own
    verdicts, labelled in the claim text. 'all' (no filter) is not the paper's method: it is
    judged only when no adjective vocabulary ran."""
    vocabs = tuple(config.vocabularies)
    adj = tuple(v for v in vocabs if v in ("adjectives", "pos")) or vocabs[:1]
    claims = []
    for v in adj:
        claims += _claims_for_vocabulary(m, config, v)
    if "test/logprob/mae" in m:
        comparable = config.scale != "tiny"
        claims.append(Claim(
            text=(f"A log-probability detector (SmolLM2 mean token log-probability, threshold for balanced accuracy) "
                  f"errs at least {MIN_ERROR_RATIO:g}x as much as the MLE (in distribution)"),
            ours=f"{m['test/logprob/mae']:.3f} vs MLE " + ", ".join(
                f"{m[f'test/{v}/mae_mle']:.4f} ({v})" for v in vocabs),
            paper="instance-level detectors have much larger error (numbers not retrieved)",
            verdict=verdict(all(M.error_ratio(m["test/logprob/mae"], m[f"test/{v}/mae_mle"]) >= MIN_ERROR_RATIO
                                for v in vocabs) if comparable else None)))
    else:
        claims.append(Claim(
            text="A log-probability detector errs far more than the MLE (in distribution)",
            ours=("not run at this scale (logprob_baseline=False: SmolLM2 scores about 5,000 sentences, 10-20 min; "
                  "the full run has it)"),
            paper="instance-level detectors have much larger error (numbers not retrieved)"))
    return claims


def _claims_for_vocabulary(m: dict, config, v: str) -> list[Claim]:
    """The estimator's claims for one vocabulary `v`, its name in each claim's text."""
    splits = tuple(config.splits)
    comparable = config.scale != "tiny"
    label = f" [vocabulary: {VOCAB_WORDS.get(v, v)}]"
    n_sets = int(m[f"sets/{splits[0]}"])
    setting = (f"{n_sets} sets per split, alpha {min(config.alphas):g}-{max(config.alphas):g}, "
               f"Austen + SmolLM2-135M rewrites, {config.scale} scale")
    claims = []
    ind = "test" in splits
    claims.append(Claim(
        text=("The distributional MLE estimates the fraction alpha of AI-written sentences in a corpus "
              f"accurately in distribution: mean |alpha_hat - alpha| within {MAX_MAE} over alpha in [0, 0.25]" + label),
        ours=(f"mean abs error {m[f'test/{v}/mae_mle']:.4f}; {setting}" if ind else "in-distribution split not run"),
        paper=("|error| <= 0.03 at known alpha in {0, 0.025, ..., 0.25} (the reference code's validation target; "
               "the ICML paper's own validation errors were not retrieved)"),
        verdict=verdict(m[f"test/{v}/mae_mle"] <= MAX_MAE if comparable and ind else None)))
    if ind:
        floor = M.coverage_floor(0.95, n_sets)
        claims.append(Claim(
            text="The 95% percentile-bootstrap interval covers the true alpha at least about 95% of the time (in distribution)" + label,
            ours=(f"coverage {m[f'test/{v}/ci_coverage']:.0%} of {n_sets} sets "
                  f"(at least {floor:.0%} is within 2 sigma of 95%)"),
            verdict=verdict(m[f"test/{v}/ci_coverage"] >= floor if comparable else None)))
    ratios = [M.error_ratio(m[f"{s}/{v}/mae_classifier"], m[f"{s}/{v}/mae_mle"]) for s in splits]
    claims.append(Claim(
        text=("Instance-level detection estimates alpha far worse: a per-sentence classifier from the same p and q "
              f"(flag a sentence when log Q/P > 0) errs at least {MIN_ERROR_RATIO:g}x as much as the MLE, on every split" + label),
        ours="; ".join(f"{SPLIT_WORDS.get(s, s)}: {m[f'{s}/{v}/mae_classifier']:.3f} vs {m[f'{s}/{v}/mae_mle']:.4f}"
                       for s in splits),
        paper="instance-level detectors have much larger error than the distributional estimate (numbers not retrieved)",
        verdict=verdict(min(ratios) >= MIN_ERROR_RATIO if comparable else None)))
    shifted = [s for s in splits if s != "test"]
    claims.append(Claim(
        text=f"Under distribution shift the MLE stays accurate (mean abs error within {MAX_MAE})" + label,
        ours=("; ".join(f"{SPLIT_WORDS.get(s, s)}: {m[f'{s}/{v}/mae_mle']:.4f}, CI coverage {m[f'{s}/{v}/ci_coverage']:.0%}"
                        for s in shifted) if shifted else "no shifted split run"),
        paper="validated on in-distribution and temporally shifted splits (numbers not retrieved)",
        verdict=verdict(all(m[f"{s}/{v}/mae_mle"] <= MAX_MAE for s in shifted) if comparable and shifted else None)))
    return claims


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
                          f"{M.ci_coverage([x[f'{v}/ci_low'] for x in ra], [x[f'{v}/ci_high'] for x in ra], [a] * len(ra)):.0%}"]
            cells += [f"{np.mean([x[f'{v}/classifier'] for x in ra]):.3f}" for v in vocabularies]
            if logprob:
                cells.append(f"{np.mean([x['logprob'] for x in ra]):.3f}" if "logprob" in ra[0] else "-")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _plot(rows, splits, vocabularies, logprob: bool, path) -> str:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(splits), figsize=(4.2 * len(splits), 3.8), squeeze=False)
    for ax, split in zip(axes[0], splits):
        r = [x for x in rows if x["split"] == split]
        alphas = sorted({x["alpha"] for x in r})

        def mean_of(key):
            return [np.mean([x[key] for x in r if x["alpha"] == a]) for a in alphas]

        for name, marker in zip(vocabularies, "osd^"):
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
    return save_figure(fig, path, dpi=120)


@registry.experiment("aitext/reproduce")
def reproduce(config, workdir) -> Result:
    """The validation at `config.scale` (the generation itself is `aitext/generate`, run separately)."""
    return gather_parts("aitext", config, pathlib.Path(__file__).parent / "configs", workdir)
