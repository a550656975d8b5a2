"""Tokenizers for the language models, rebuilt with the `tokenizers` library.

`tokenizer_from_gguf_metadata(meta)` rebuilds a GPT-2-style byte-level BPE (vocabulary, merges,
special tokens and chat template) from a GGUF file's metadata, so no Hugging Face hub access is
needed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import tokenizers
from tokenizers import decoders, models, pre_tokenizers

_CONTROL = 3  # GGUF token type of control/special tokens


@dataclasses.dataclass(frozen=True, eq=False)
class Tokenizer:
    """Text <-> token ids, plus the model's chat template.

    Attributes:
      backend: the `tokenizers.Tokenizer`.
      bos_id, eos_id, pad_id: special ids (eos ends a generation; pad fills left padding).
      stop_ids: ids that end a generation (eos and, for ChatML models, `<|im_end|>`/`<|endoftext|>`).
      chat_template: a Jinja template (Hugging Face convention) or None.
      add_bos: prepend bos when encoding a prompt.
    """

    backend: tokenizers.Tokenizer
    bos_id: int
    eos_id: int
    pad_id: int
    stop_ids: tuple[int, ...]
    chat_template: str | None = None
    add_bos: bool = False

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str, *, add_bos: bool | None = None) -> list[int]:
        """Token ids of `text` (special-token strings such as `<|im_start|>` become their ids)."""
        if not isinstance(text, str):
            raise TypeError(f"encode expects a str, got {type(text).__name__}")
        ids = self.backend.encode(text, add_special_tokens=False).ids
        if self.add_bos if add_bos is None else add_bos:
            ids = [self.bos_id] + ids
        return ids

    def decode(self, ids: Sequence[int], *, skip_special: bool = True) -> str:
        return self.backend.decode([int(i) for i in ids], skip_special_tokens=skip_special)

    def token(self, token_id: int) -> str:
        return self.backend.id_to_token(int(token_id))

    def apply_chat_template(self, messages: Sequence[dict[str, str]], *, add_generation_prompt: bool = True) -> str:
        """Renders `[{"role": ..., "content": ...}, ...]` with the model's template (sandboxed Jinja)."""
        if self.chat_template is None:
            raise ValueError("this tokenizer has no chat template; pass chat=False")
        for i, m in enumerate(messages):
            if not isinstance(m, dict) or not {"role", "content"} <= set(m):
                raise ValueError(f"message {i} must be a dict with 'role' and 'content', got {m!r}")
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        template = env.from_string(self.chat_template)
        return template.render(messages=list(messages), add_generation_prompt=add_generation_prompt,
                               bos_token=self.token(self.bos_id), eos_token=self.token(self.eos_id))


def tokenizer_from_gguf_metadata(meta: dict[str, Any]) -> Tokenizer:
    """Rebuilds the byte-level BPE tokenizer stored in a GGUF file (`tokenizer.ggml.*`)."""
    model = meta.get("tokenizer.ggml.model")
    if model != "gpt2":
        raise ValueError(f"GGUF tokenizer model {model!r} is not supported; accepted: 'gpt2' (byte-level BPE)")
    tokens = list(meta["tokenizer.ggml.tokens"])
    merges = [tuple(m.split(" ", 1)) for m in meta["tokenizer.ggml.merges"]]
    types = list(meta.get("tokenizer.ggml.token_type", [1] * len(tokens)))
    backend = tokenizers.Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges))
    pre = meta.get("tokenizer.ggml.pre", "default")
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=bool(meta.get("tokenizer.ggml.add_space_prefix", False)),
                                          use_regex=True)
    if pre in ("smollm", "starcoder", "refact"):
        # StarCoder-family pre-tokenizer: every digit is its own pre-token.
        backend.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    elif pre in ("default", "gpt-2", "gpt2"):
        backend.pre_tokenizer = byte_level
    else:
        raise ValueError(f"GGUF pre-tokenizer {pre!r} is not supported; accepted: smollm, starcoder, gpt-2")
    backend.decoder = decoders.ByteLevel()
    specials = [tokens[i] for i, t in enumerate(types) if t == _CONTROL]
    backend.add_special_tokens([tokenizers.AddedToken(s, special=True, normalized=False) for s in specials])
    eos = int(meta.get("tokenizer.ggml.eos_token_id", 0))
    stop = {eos}
    for name in ("<|im_end|>", "<|endoftext|>", "<|eot_id|>"):
        if name in specials:
            stop.add(tokens.index(name))
    return Tokenizer(
        backend=backend,
        bos_id=int(meta.get("tokenizer.ggml.bos_token_id", eos)),
        eos_id=eos,
        pad_id=int(meta.get("tokenizer.ggml.padding_token_id", eos)),
        stop_ids=tuple(sorted(stop)),
        chat_template=meta.get("tokenizer.chat_template"),
        add_bos=bool(meta.get("tokenizer.ggml.add_bos_token", False)),
    )
