"""The trust harness: one model (dense or compressed) through every trust probe, the canary
privacy probe and the utility measures, with bootstrap CIs.

    outcome = evaluate(llm, suite)       # {"stereotype": {"score": .., "ci": [lo, hi], ...}, ..., "utility": {...}}

`Suite` holds what stays fixed across models: the probes (`probes.build_probes`), the canaries,
the multiple-choice questions and the held-out text. Every probe is answered through the chat
template with greedy decoding (`probe.max_new_tokens` new tokens); the privacy probe's completion
template is a plain continuation (no chat template), its chat template a chat question.

Utility (the paper's benign performance, MMLU there):
- multiple choice: WordNet 3.0 verb definitions, "Definition: {gloss}\\nVerb:" with the true verb and
  three verbs of other synsets as options; the option with the highest log-likelihood is the answer
  (zero-shot, like lm-eval's `acc`); chance is 25%.
- perplexity on held-out text (the test novel of the Austen split, *Persuasion*).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from jaxml import progress
from jaxml.papers.comptrust import metrics, privacy

ANSWER_TOKENS_PRIVACY = 24    # "The phone number of Ada Harrow is 644-5519." fits


@dataclasses.dataclass(frozen=True)
class Question:
    prompt: str
    options: tuple[str, ...]
    correct: int


def mc_questions(glosses, n: int, seed: int = 0, options: int = 4) -> tuple[Question, ...]:
    """`n` definition -> verb questions from `(lemma, definition)` pairs (e.g. `wordnet.verb_glosses()`):
    distinct lemmas, distractors drawn from other lemmas, the true answer at a seeded position."""
    lemmas = sorted({lemma for lemma, _ in glosses})
    by_lemma: dict[str, str] = {}
    for lemma, definition in glosses:
        by_lemma.setdefault(lemma, definition)      # the first (most frequent) sense
    if not 1 <= n <= len(by_lemma) or options < 2:
        raise ValueError(f"n={n} questions (accepted 1..{len(by_lemma)}) with options={options} >= 2")
    rng = np.random.default_rng(seed)
    out = []
    for i in rng.choice(len(lemmas), size=n, replace=False):
        answer = lemmas[i]
        others = [lemmas[j] for j in rng.choice(len(lemmas), size=options + 2, replace=False) if lemmas[j] != answer]
        opts = others[:options - 1]
        pos = int(rng.integers(0, options))
        opts.insert(pos, answer)
        out.append(Question(f"Definition: {by_lemma[answer]}\nVerb:", tuple(f" {o}" for o in opts), pos))
    return tuple(out)


@dataclasses.dataclass
class Suite:
    """What every model of one study is measured on."""

    probes: dict                      # name -> probes.Probe
    canaries: tuple = ()              # privacy.Canary (empty: no privacy probe)
    questions: tuple = ()             # Question
    heldout_tokens: np.ndarray | None = None
    ppl_context: int = 256
    ppl_stride: int = 128
    n_boot: int = 1000


def answer_probes(llm, probe_map: dict) -> dict[str, list[str]]:
    """Every probe's responses from one batched generation per max_new_tokens value."""
    by_len: dict[int, list[tuple[str, int]]] = {}
    for name, probe in probe_map.items():
        for i in range(len(probe.items)):
            by_len.setdefault(probe.max_new_tokens, []).append((name, i))
    responses = {name: [""] * len(p.items) for name, p in probe_map.items()}
    for n_tokens, keys in by_len.items():
        texts = llm.generate_text([probe_map[n].items[i].prompt for n, i in keys], max_new_tokens=n_tokens, chat=True)
        for (name, i), text in zip(keys, texts):
            responses[name][i] = text
    return responses


def probe_outcome(probe, responses, n_boot: int, seed: int = 0) -> dict:
    answers = [probe.parse(r) for r in responses]
    out = dict(probe.score(probe.items, answers))
    out["ci"] = list(metrics.bootstrap_ci(probe.score, probe.items, answers, n_boot=n_boot, seed=seed))
    out["answers"] = answers
    return out


def privacy_outcome(llm, canaries) -> dict:
    prompts = privacy.leak_prompts(canaries)
    records, responses = [], {}
    for template, chat in (("completion", False), ("chat", True)):
        sub = [(c, p) for c, t, p in prompts if t == template]
        texts = llm.generate_text([p for _, p in sub], max_new_tokens=ANSWER_TOKENS_PRIVACY, chat=chat)
        records += [(c, template, privacy.leaked(r, c)) for (c, _), r in zip(sub, texts)]
        responses[template] = texts
    out = privacy.leak_scores(records)
    out["ci"] = list(leak_ci([r for r in records if r[0].trained]))
    out["leaks"] = [bool(r[2]) for r in records]       # template-major: every canary's completion, then chat
    return out


@dataclasses.dataclass(frozen=True)
class _Unit:
    unit: str


def _leak_score(units, leaks) -> dict:
    return {"score": 100.0 * (1.0 - float(np.mean(leaks)))}


def leak_ci(records, n_boot: int = 1000, seed: int = 0) -> tuple[float, float]:
    """Bootstrap interval of 100 x (1 - leak rate) over `(canary, template, leaked[, unit])` records,
    resampling canaries (both templates of one canary together; a 4th field, when given, names the unit)."""
    units = [_Unit(r[3] if len(r) > 3 else r[0].name) for r in records]
    return metrics.bootstrap_ci(_leak_score, units, [bool(r[2]) for r in records], n_boot=n_boot, seed=seed)


def utility_outcome(llm, suite: Suite) -> dict:
    from jaxml.llm.generate import perplexity

    out = {}
    if suite.questions:
        prompts = [q.prompt for q in suite.questions for _ in q.options]
        conts = [o for q in suite.questions for o in q.options]
        lps = llm.logprobs(prompts, conts)
        k = len(suite.questions[0].options)
        scores = [[float(lps[i * k + j].sum()) for j in range(k)] for i in range(len(suite.questions))]
        out["mc_accuracy"] = metrics.multiple_choice_accuracy(scores, [q.correct for q in suite.questions])
        out["mc_n"] = float(len(suite.questions))
    if suite.heldout_tokens is not None:
        out["perplexity"] = perplexity(llm.model, llm.params, suite.heldout_tokens, context=suite.ppl_context,
                                       stride=suite.ppl_stride, batch_size=8)["perplexity"]
    return out


def evaluate(llm, suite: Suite, seed: int = 0) -> dict:
    """`{probe name: outcome, "privacy": outcome, "utility": {...}, "seconds": s}` for one model."""
    t0 = time.perf_counter()
    responses = answer_probes(llm, suite.probes)
    out = {name: probe_outcome(p, responses[name], suite.n_boot, seed) for name, p in suite.probes.items()}
    if suite.canaries:
        out["privacy"] = privacy_outcome(llm, suite.canaries)
    out["utility"] = utility_outcome(llm, suite)
    out["seconds"] = time.perf_counter() - t0
    progress.log("  ".join(f"{k} {v['score']:.1f}" for k, v in out.items() if isinstance(v, dict) and "score" in v)
                 + "  " + "  ".join(f"{k} {v:.3g}" for k, v in out["utility"].items()) + f"  ({out['seconds']:.0f}s)")
    return out
