"""The ICE pipeline over any `jaxml.llm.LLM`: clarify each input, answer every clarification several
times, and decompose the answers' uncertainty; every generation cached on disk so a killed run resumes.

    llm = LocalLLM.smollm2(batch_size=64)              # or OpenAICompatibleLLM(url, model_name)
    results = run(llm, examples, PipelineSettings(), cache_path="/tmp/ice/generations.jsonl",
                  shot_pool=ambiguous_instructions(seed=1))

Steps (the reference code's `tools/generate_clarification.py` and `forward.py`):
1. clarification: a few-shot prompt whose examples are the `shots` nearest instructions of a pool (by an
   embedding when `embed` is given, e.g. MiniLM's; else by word overlap), each shown with its
   clarifications; `clarify_samples` completions at `clarify_temperature`; their lines parsed, cleaned,
   de-duplicated and cut to `max_clarifications`; "No clarification needed" or nothing usable: the
   original instruction is the only clarification. `oracle=True` uses the data's ground-truth
   clarifications instead.
2. answering: `samples` answers per clarified input at `answer_temperature`, cut at the first line.
   On the local model they come from one shared prefill per prompt (`samples_per_prompt`); on other
   backends sample i is a request with seed `seed + 1000 + i` (so repeated prompts differ everywhere).
3. `decompose_answers` on the answers (bits).
A `jaxml.llm.cache.GenerationCache` (JSON lines, one record per generation, flushed as written) keys each text by
(prompt, chat, seed, max_new_tokens, temperature); a rerun generates only what is missing.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from jaxml import progress
from jaxml.llm.cache import GenerationCache, samples_from_one_prefill
from jaxml.papers.ice.data import AmbigExample
from jaxml.papers.ice.decompose import Decomposition, decompose_answers

NO_CLARIFICATION = "no clarification needed"


@dataclasses.dataclass(frozen=True)
class PipelineSettings:
    """Sample counts and sampling of the two LLM steps (defaults: the reference code's)."""

    max_clarifications: int = 5
    samples: int = 10
    clarify_samples: int = 2
    clarify_temperature: float = 1.0
    answer_temperature: float = 0.5
    clarify_tokens: int = 96
    answer_tokens: int = 24
    shots: int = 4
    chat: bool = True
    seed: int = 0

    def __post_init__(self):
        for name in ("max_clarifications", "samples", "clarify_samples", "clarify_tokens", "answer_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"PipelineSettings.{name} must be >= 1, got {getattr(self, name)}")
        if self.shots < 0:
            raise ValueError(f"PipelineSettings.shots must be >= 0, got {self.shots}")


# ---- prompts and parsing --------------------------------------------------------------------------------

def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def retrieve_shots(query: str, pool: Sequence[AmbigExample], k: int,
                   embed: Callable[[list[str]], np.ndarray] | None = None) -> list[AmbigExample]:
    """The `k` pool examples nearest to `query`: cosine similarity of `embed` vectors, else Jaccard word
    overlap; ties keep the pool's order. Examples whose instruction equals the query are skipped."""
    pool = [e for e in pool if e.instruction != query]
    if k == 0 or not pool:
        return []
    if embed is not None:
        vectors = np.asarray(embed([query] + [e.instruction for e in pool]), np.float64)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        scores = vectors[1:] @ vectors[0]
    else:
        q = _words(query)
        scores = np.array([len(q & _words(e.instruction)) / max(1, len(q | _words(e.instruction))) for e in pool])
    order = np.argsort(-scores, kind="stable")[:k]
    return [pool[i] for i in order]


def clarification_prompt(example: AmbigExample, shots: Sequence[AmbigExample]) -> str:
    """A few-shot prompt asking for the possible readings of `example.instruction`, one per line."""
    parts = ["Some instructions can be read in more than one way. List every clear rewrite of the "
             "instruction, one per line. If it has only one reading, write: No clarification needed."]
    for shot in shots:
        lines = ("No clarification needed." if not shot.is_ambiguous
                 else "\n".join(shot.clarifications))
        parts.append(f"Instruction: {shot.instruction}\nInput: {shot.input}\nRewrites:\n{lines}")
    parts.append(f"Instruction: {example.instruction}\nInput: {example.input}\nRewrites:\n")
    return "\n\n".join(parts)


_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)]|rewrite\s*\d*:)\s*", re.IGNORECASE)


def parse_clarifications(texts: Sequence[str], original: str, max_clarifications: int) -> list[str]:
    """Clarifications from generated `texts`: one per line, bullets and numbering removed, lines that
    stop being rewrites (a new 'Instruction:' or 'Input:') end a text, duplicates (case-insensitive)
    dropped; "No clarification needed" or nothing usable gives `[original]`."""
    out, seen = [], set()
    for text in texts:
        for line in text.splitlines():
            line = _BULLET.sub("", line).strip()
            if not line:
                continue
            if line.lower().startswith(("instruction:", "input:", "rewrites:")):
                break
            if NO_CLARIFICATION in line.lower():
                continue
            if line.lower() not in seen:
                seen.add(line.lower())
                out.append(line)
    if not out:                                # "no clarification needed", or nothing usable
        return [original]
    return out[:max_clarifications]


def answer_prompt(instruction: str, text: str) -> str:
    """The answering prompt: the (clarified) instruction on the input, a short answer."""
    return f"{text}\n{instruction}\nGive only the answer, on one line."


def first_line(text: str) -> str:
    """The answer part of a generated text: its first non-empty line, stripped."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


# ---- the pipeline ---------------------------------------------------------------------------------------

class ExampleResult(NamedTuple):
    """One input's clarifications, answers `[K][samples]` and decomposition."""

    clarifications: list[str]
    answers: list[list[str]]
    decomposition: Decomposition


def clarify(llm, examples: Sequence[AmbigExample], settings: PipelineSettings, cache: GenerationCache,
            shot_pool: Sequence[AmbigExample] = (), embed=None) -> list[list[str]]:
    """Generated clarifications of each example (step 1 of the module docstring)."""
    prompts = [clarification_prompt(e, retrieve_shots(e.instruction, shot_pool, settings.shots, embed))
               for e in examples]
    texts = [cache.generate(llm, prompts, chat=settings.chat, seed=settings.seed + s,
                            max_new_tokens=settings.clarify_tokens, temperature=settings.clarify_temperature,
                            what="clarifications")
             for s in range(settings.clarify_samples)]
    return [parse_clarifications([t[i] for t in texts], e.instruction, settings.max_clarifications)
            for i, e in enumerate(examples)]


def answer(llm, examples: Sequence[AmbigExample], clarifications: Sequence[Sequence[str]],
           settings: PipelineSettings, cache: GenerationCache) -> list[list[list[str]]]:
    """`settings.samples` answers to each clarified input: `[example][clarification][sample]`."""
    flat = [(i, k, answer_prompt(c, e.input)) for i, (e, cs) in enumerate(zip(examples, clarifications))
            for k, c in enumerate(cs)]
    prompts = [p for _, _, p in flat]
    per_sample = cache.generate_samples(llm, prompts, settings.samples, chat=settings.chat, seed=settings.seed + 1000,
                                        max_new_tokens=settings.answer_tokens,
                                        temperature=settings.answer_temperature, what="answers")
    out = [[[] for _ in cs] for cs in clarifications]
    for j, (i, k, _) in enumerate(flat):
        out[i][k] = [first_line(texts[j]) for texts in per_sample]
    return out


def run(llm, examples: Sequence[AmbigExample], settings: PipelineSettings = PipelineSettings(),
        cache_path: str | pathlib.Path | None = None, shot_pool: Sequence[AmbigExample] = (), embed=None,
        oracle: bool = False) -> list[ExampleResult]:
    """Clarify (or take the ground truth with `oracle`), answer and decompose every example."""
    if not examples:
        raise ValueError("run needs at least one example")
    cache = GenerationCache(cache_path)
    if oracle:
        clarifications = [list(e.clarifications)[:settings.max_clarifications] for e in examples]
    else:
        clarifications = clarify(llm, examples, settings, cache, shot_pool, embed)
    answers = answer(llm, examples, clarifications, settings, cache)
    return [ExampleResult(c, a, decompose_answers(a, samples=settings.samples))
            for c, a in zip(clarifications, answers)]
