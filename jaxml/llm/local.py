"""`LocalLLM`: the `LLM` protocol over a Flax Llama model in this process."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import numpy as np

from jaxml.llm import generate as generate_lib
from jaxml.llm.base import SamplingOptions, check_texts, cut_at_stop
from jaxml.models.tokenizer import Tokenizer
from jaxml.models.llama import Llama


@dataclasses.dataclass(frozen=True, eq=False)
class LocalLLM:
    """A local model: `LocalLLM.smollm2()` or `LocalLLM(model, params, tokenizer)`.

    Attributes:
      model, params: the Flax Llama and its params.
      tokenizer: its Tokenizer (with the chat template used when `chat=True`).
      batch_size: prompts decoded together.
      prompt_bucket: prompts are left-padded to a multiple of this many tokens; one compiled decoding
        program serves every batch of the same size whose prompts fit the same multiple.
      row_multiple: each batch is filled up to a multiple of this many rows (copies of its last prompt,
        dropped from the result; with several samples per prompt, a multiple of row_multiple // samples
        prompts), so that batches of varied sizes share compiled programs; 1 (the default) decodes
        exactly the given rows.
    """

    model: Llama
    params: dict
    tokenizer: Tokenizer
    batch_size: int = 8
    prompt_bucket: int = 16
    row_multiple: int = 1

    def __post_init__(self):
        for name in ("batch_size", "prompt_bucket", "row_multiple"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"LocalLLM.{name}={value!r} must be an int >= 1")

    @classmethod
    def smollm2(cls, **kwargs) -> "LocalLLM":
        from jaxml.models.llama import load_smollm2

        model, params, tokenizer = load_smollm2()
        return cls(model, params, tokenizer, **kwargs)

    def encode_prompt(self, prompt: str, chat: bool) -> list[int]:
        if chat:
            prompt = self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}])
        return self.tokenizer.encode(prompt)

    def generate_text(self, prompts: Sequence[str], *, max_new_tokens: int, chat: bool = False,
                      stop: Sequence[str] = (), seed: int = 0, logits_processor=None, samples_per_prompt: int = 1,
                      **sampling) -> list[str]:
        """Continuations of each prompt (see `jaxml.llm.base.LLM`); generation ends at the
        tokenizer's stop tokens, and the text is cut at the first of `stop`.

        `samples_per_prompt` > 1: that many continuations per prompt from one shared prefill
        (`generate`'s option; an extension of the protocol), `len(prompts) * samples_per_prompt`
        texts, prompt-major; at most `batch_size` rows decode together."""
        prompts = check_texts("prompts", prompts)
        stop = check_texts("stop", stop)
        options = SamplingOptions.from_kwargs(**sampling)
        key = jax.random.PRNGKey(seed)
        texts = []
        per_batch = max(1, self.batch_size // max(1, int(samples_per_prompt)))
        for start in range(0, len(prompts), per_batch):
            batch = [self.encode_prompt(p, chat) for p in prompts[start:start + per_batch]]
            real = len(batch)
            batch += batch[-1:] * (-real % max(1, self.row_multiple // samples_per_prompt))
            out = generate_lib.generate(
                self.model, self.params, batch, max_new_tokens=max_new_tokens, sampling=options,
                stop_ids=self.tokenizer.stop_ids, pad_id=self.tokenizer.pad_id,
                key=jax.random.fold_in(key, start), logits_processor=logits_processor, bucket=self.prompt_bucket,
                samples_per_prompt=samples_per_prompt)
            texts += [self.tokenizer.decode(seq) for seq in out.sequences()[:real * samples_per_prompt]]
        return [cut_at_stop(t, stop) for t in texts]

    def logprobs(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[np.ndarray]:
        """log p(continuation tokens | prompt); prompt and continuation are tokenized separately."""
        prompts = check_texts("prompts", prompts)
        continuations = check_texts("continuations", continuations)
        if len(prompts) != len(continuations):
            raise ValueError(f"{len(prompts)} prompts but {len(continuations)} continuations")
        p_ids = [self.tokenizer.encode(p) for p in prompts]
        c_ids = [self.tokenizer.encode(c, add_bos=False) for c in continuations]
        return [lp.astype(np.float64) for lp in generate_lib.score(
            self.model, self.params, p_ids, c_ids, pad_id=self.tokenizer.pad_id, batch_size=self.batch_size)]
