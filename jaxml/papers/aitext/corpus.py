"""Human and AI corpora for the estimator: passages, splits, and the two-stage AI generation.

Human side (offline corpora, `jaxml.data.text`):

* **in-distribution**: Jane Austen's *Emma*, *Mansfield Park*, *Northanger Abbey*, *Pride and
  Prejudice*, *Sense and Sensibility*. Their passages are cut into blocks of 10 consecutive
  passages; a seeded 20% of the blocks are `test`, the rest `fit` (the p/q tables are estimated
  on `fit` only). Austen is chosen because it is modern-enough English prose in paragraphs, so an
  outline-and-expand round trip yields comparable prose (the paper's reviews are prose too).
* **shift_novel**: *Persuasion*, a novel by the same author that never enters the fit (the
  counterpart of the paper's temporally shifted split).
* **shift_genre**: narrative books of the King James Bible (a different author, genre and era).

AI side: SmolLM2-135M-Instruct rewrites human passages in the paper's two stages: (1) summarise
the passage into an outline, (2) expand the outline into prose (prompts in the config). The AI text
of a split is generated from that split's passages only.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import pathlib
import time
from collections.abc import Sequence

import numpy as np

from jaxml import progress
from jaxml.data import text as corpora
from jaxml.papers.aitext import text as textlib

FIT_NOVELS = ("emma", "mansfieldpark", "northangerabbey", "prideprejudice", "sensesensibility")
SHIFT_NOVEL = "persuasion"
KJV_NARRATIVE = ("Genesis", "Exodus", "Joshua", "Judges", "Ruth", "1 Samuel", "2 Samuel", "1 Kings",
                 "2 Kings", "Esther", "Matthew", "Mark", "Luke", "John", "Acts")
SPLITS = ("fit", "test", "shift_novel", "shift_genre")


@dataclasses.dataclass(frozen=True)
class Passage:
    """A human passage: a stable id, its split, its source document and its text."""

    pid: str
    split: str
    source: str
    text: str


def _kjv_paragraphs(doc_text: str, verses_per_paragraph: int = 6) -> list[str]:
    verses = [v.strip() for v in doc_text.split("\n") if v.strip()]
    return [" ".join(verses[i:i + verses_per_paragraph]) for i in range(0, len(verses), verses_per_paragraph)]


def human_passages(test_fraction: float = 0.2, block: int = 10, seed: int = 0) -> dict[str, list[Passage]]:
    """Every human passage of every split: `{split: [Passage, ...]}` (see the module docstring).
    Built once per process and arguments (reading the corpora takes seconds); each call gets new lists."""
    return {split: list(ps) for split, ps in _human_passages(test_fraction, block, seed).items()}


@functools.lru_cache(maxsize=4)
def _human_passages(test_fraction: float, block: int, seed: int) -> dict[str, tuple[Passage, ...]]:
    out: dict[str, list[Passage]] = {s: [] for s in SPLITS}
    rng = np.random.default_rng(seed)
    for doc in corpora.load_corpus("austen"):
        paras = textlib.passages(textlib.paragraphs(doc.text))
        if doc.doc_id == SHIFT_NOVEL:
            out["shift_novel"] += [Passage(f"{doc.doc_id}/{i}", "shift_novel", doc.doc_id, p) for i, p in enumerate(paras)]
        elif doc.doc_id in FIT_NOVELS:
            n_blocks = -(-len(paras) // block)
            is_test = rng.random(n_blocks) < test_fraction
            for i, p in enumerate(paras):
                split = "test" if is_test[i // block] else "fit"
                out[split].append(Passage(f"{doc.doc_id}/{i}", split, doc.doc_id, p))
    for doc in corpora.load_corpus("kjv"):
        if doc.doc_id in KJV_NARRATIVE:
            paras = textlib.passages(_kjv_paragraphs(doc.text))
            out["shift_genre"] += [Passage(f"kjv-{doc.doc_id}/{i}", "shift_genre", doc.doc_id, p)
                                   for i, p in enumerate(paras)]
    return {split: tuple(ps) for split, ps in out.items()}


def sample_passages(passages: Sequence[Passage], n: int, seed: int) -> list[Passage]:
    """`n` passages drawn without replacement (all of them when there are fewer), in a seeded order."""
    order = np.random.default_rng(seed).permutation(len(passages))
    return [passages[i] for i in order[:n]]


def generation_seed(pid: str, seed: int) -> int:
    """A per-passage sampling seed: reruns and resumed runs draw the same text for a passage."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{pid}".encode()).digest()[:4], "little") & 0x7FFFFFFF


def load_generated(path: str | pathlib.Path) -> dict[str, dict]:
    """`{pid: record}` from a generation cache (JSON lines, or .jsonl.gz); missing file: {}."""
    import gzip

    path = pathlib.Path(path)
    records = {}
    if path.exists():
        with (gzip.open if path.suffix == ".gz" else open)(path, "rt", encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:   # a line cut by an interrupted write: regenerate it
                    progress.log(f"{path}:{line_no}: skipping an incomplete record")
                    continue
                records[rec["pid"]] = rec
    return records


def generate_ai(passages: Sequence[Passage], llm, path: str | pathlib.Path, *, outline_prompt: str,
                expand_prompt: str, outline_tokens: int, expand_tokens: int, batch: int, seed: int,
                sampling: dict) -> dict[str, dict]:
    """Two-stage AI rewrites of `passages`, cached in `path` (JSON lines, appended per batch).

    Passages already in the cache are skipped, so an interrupted run resumes where it stopped and a
    larger request only generates what is missing. Each record: pid, split, source, outline, text,
    seed. Batches are grouped by passage so every row's sampling seed depends only on its pid.

    Args:
      passages: what to rewrite.
      llm: a `jaxml.llm.base.LLM` (chat prompts are used).
      outline_prompt, expand_prompt: templates with `{passage}` / `{outline}`.
      outline_tokens, expand_tokens: max new tokens of the two stages.
      batch: passages generated together.
      seed: base seed (see `generation_seed`).
      sampling: temperature / top_k / top_p.
    """
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    done = load_generated(path)
    if path.exists() and path.stat().st_size:
        with open(path, "rb+") as f:          # a record torn by an interruption: end its line
            f.seek(-1, 2)
            if f.read(1) != b"\n":
                f.write(b"\n")
    todo = [p for p in passages if p.pid not in done]
    if todo:
        progress.log(f"aitext: generating {len(todo)} passages ({len(done)} cached) into {path}")
    t0 = time.perf_counter()
    for start in range(0, len(todo), batch):
        chunk = todo[start:start + batch]
        # One seed per batch derived from its first pid keeps reruns identical.
        s = generation_seed(chunk[0].pid, seed)
        outlines = llm.generate_text([outline_prompt.format(passage=p.text) for p in chunk], chat=True,
                                     max_new_tokens=outline_tokens, seed=s, **sampling)
        outlines = [o.strip() for o in outlines]
        texts = llm.generate_text([expand_prompt.format(outline=o) for o in outlines], chat=True,
                                  max_new_tokens=expand_tokens, seed=s + 1, **sampling)
        with open(path, "a", encoding="utf-8") as f:
            for p, o, t in zip(chunk, outlines, texts):
                rec = {"pid": p.pid, "split": p.split, "source": p.source, "outline": o, "text": t.strip(), "seed": s}
                f.write(json.dumps(rec) + "\n")
                done[p.pid] = rec
        n = start + len(chunk)
        rate = n / (time.perf_counter() - t0)
        progress.log(f"aitext: {n}/{len(todo)} passages generated ({rate * 60:.1f}/min, "
                     f"about {progress.format_duration((len(todo) - n) / rate)} left)")
    return done


def sentence_pool(texts: Sequence[str], min_words: int = 2) -> list[str]:
    """The sentences (with at least `min_words` words) of many texts, concatenated."""
    return [s for t in texts for s in textlib.sentences(t) if len(textlib.words(s)) >= min_words]


def mixture_indices(n_human: int, n_ai: int, alpha: float, n: int, rng: np.random.Generator
                    ) -> tuple[np.ndarray, np.ndarray, float]:
    """A validation set of `n` sentences with round(alpha n) AI ones: indices into the human pool
    and the AI pool (each drawn without replacement) and the exact AI fraction."""
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha={alpha} must be in [0, 1]")
    k = int(round(alpha * n))
    if k > n_ai or n - k > n_human:
        raise ValueError(f"a mixture of {n} sentences at alpha={alpha} needs {k} AI and {n - k} human "
                         f"sentences; the pools have {n_ai} and {n_human}")
    return rng.choice(n_human, n - k, replace=False), rng.choice(n_ai, k, replace=False), k / n


SHIPPED = pathlib.Path(__file__).resolve().parent / "data" / "smollm2_rewrites.jsonl.gz"


def load_ai_records(source: str | pathlib.Path) -> list[dict]:
    """AI rewrites: `"shipped"` (the corpus generated by `configs/generate.py` and shipped with the
    package, `data/smollm2_rewrites.jsonl.gz`) or the path of a generation cache (.jsonl/.jsonl.gz)."""
    path = SHIPPED if str(source) == "shipped" else pathlib.Path(source)
    if not path.exists():
        raise FileNotFoundError(f"AI corpus {path} not found: run the aitext/generate experiment "
                                "(jaxml/papers/aitext/configs/generate.py) or use 'shipped'")
    records = list(load_generated(path).values())
    bad = [r.get("pid") for r in records if r.get("split") not in SPLITS]
    if bad:
        raise ValueError(f"{path}: records with unknown splits (accepted {SPLITS}): {bad[:3]}")
    return records
