"""`GenerationCache`: generated texts on disk, keyed by the request, so that a killed run resumes and a
rerun generates only what is missing (shared by the papers that query language models: ICE, AsyncHow).

    cache = GenerationCache(workdir / "generations.jsonl")
    texts = cache.generate(llm, prompts, chat=True, seed=0, max_new_tokens=64, temperature=0.0)
    texts = cache.generate(llm, prompts, chat=True, seed=0, max_new_tokens=64, temperature=0.0,
                           tag="edge-grammar", logits_processor=proc)   # options that change the text: a tag

The file holds JSON lines {"key": sha256 of the request, "text": ...}, appended and flushed as texts come.
A last line cut by a kill is generated again; a damaged line elsewhere is an error naming it.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import pathlib
from collections.abc import Sequence

from jaxml import progress


def samples_from_one_prefill(llm) -> bool:
    """Whether the backend's generate_text takes `samples_per_prompt` (several samples, one prefill)."""
    return "samples_per_prompt" in inspect.signature(llm.generate_text).parameters


class GenerationCache:
    """Generated texts on disk (JSON lines), keyed by the request; appended and flushed as they come."""

    def __init__(self, path: str | pathlib.Path | None):
        self.path = None if path is None else pathlib.Path(path)
        self.texts: dict[str, str] = {}
        if self.path is not None and self.path.exists():
            lines = self.path.read_text().splitlines()
            for n, line in enumerate(lines):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    self.texts[record["key"]] = record["text"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    if n == len(lines) - 1:
                        continue                       # the last line, cut by a kill: generated again
                    raise ValueError(f"{self.path}: line {n + 1} is not a cache record") from None

    @staticmethod
    def key(prompt: str, *, chat: bool, seed: int, max_new_tokens: int, temperature: float, tag: str = "") -> str:
        """The record's key: sha256 of the request; `tag` names whatever else changes the text (a grammar)."""
        blob = json.dumps([prompt, chat, seed, max_new_tokens, temperature] + ([tag] if tag else []))
        return hashlib.sha256(blob.encode()).hexdigest()

    def generate(self, llm, prompts: Sequence[str], *, chat: bool, seed: int, max_new_tokens: int,
                 temperature: float, batch: int = 64, what: str = "generations", tag: str = "",
                 **options) -> list[str]:
        """The texts for `prompts` (one sample each at `seed`), generating only the missing ones. `options`
        go to `llm.generate_text` (e.g. `logits_processor`); give whatever changes the text a `tag`."""
        if options and not tag:
            raise ValueError(f"generation options {sorted(options)} change the texts: give them a cache tag")
        keys = [self.key(p, chat=chat, seed=seed, max_new_tokens=max_new_tokens, temperature=temperature, tag=tag)
                for p in prompts]
        missing = sorted({k: i for i, k in enumerate(keys) if k not in self.texts}.values())
        for start in range(0, len(missing), batch):
            chunk = missing[start:start + batch]
            texts = llm.generate_text([prompts[i] for i in chunk], max_new_tokens=max_new_tokens, chat=chat,
                                      seed=seed, temperature=temperature, **options)
            self._write([(keys[i], t) for i, t in zip(chunk, texts)])
            progress.log(f"{what}: {min(start + batch, len(missing))}/{len(missing)} generated (seed {seed})")
        return [self.texts[k] for k in keys]

    def generate_samples(self, llm, prompts: Sequence[str], samples: int, *, chat: bool, seed: int,
                         max_new_tokens: int, temperature: float, batch: int = 64,
                         what: str = "generations") -> list[list[str]]:
        """`samples` texts per prompt, `[sample][prompt]`; sample i is keyed by seed `seed + i`.

        A backend that decodes several samples from one prefill (`LocalLLM`'s `samples_per_prompt`)
        gets one call per batch of prompts missing any sample; others get one call per sample seed."""
        if not samples_from_one_prefill(llm):
            return [self.generate(llm, prompts, chat=chat, seed=seed + i, max_new_tokens=max_new_tokens,
                                  temperature=temperature, batch=batch, what=what) for i in range(samples)]
        keys = [[self.key(p, chat=chat, seed=seed + i, max_new_tokens=max_new_tokens, temperature=temperature)
                 for p in prompts] for i in range(samples)]
        missing = sorted({prompts[j]: j for j in range(len(prompts))
                          if any(keys[i][j] not in self.texts for i in range(samples))}.values())
        per_call = max(1, batch // samples)
        for start in range(0, len(missing), per_call):
            chunk = missing[start:start + per_call]
            texts = llm.generate_text([prompts[j] for j in chunk], max_new_tokens=max_new_tokens, chat=chat, seed=seed,
                                      temperature=temperature, samples_per_prompt=samples)
            self._write([(keys[i][j], texts[r * samples + i]) for r, j in enumerate(chunk) for i in range(samples)])
            progress.log(f"{what}: {min(start + per_call, len(missing))}/{len(missing)} prompts x {samples} samples "
                         f"generated (one prefill each)")
        return [[self.texts[k] for k in row] for row in keys]

    def _write(self, records):
        for k, t in records:
            self.texts[k] = t
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as f:
                f.write("".join(json.dumps({"key": k, "text": t}) + "\n" for k, t in records))
                f.flush()
