"""Local judges over `jaxml.llm`'s SmolLM2-135M-Instruct: a text-only judge and a LLaVA-style
vision-language judge trained here.

Both write the verdict the release asks for ("[[4]]", "[[A]]", "[[C]], [[D]], [[A]], [[B]]") and
hand the harness a reply string that `judgements.parse_for` reads. Two decoding modes:

  * `verdict` (grammar-constrained): the assistant's turn is forced to begin with
    `Judgement: [[` and only verdict tokens may follow (1-5; A/B/C; for a batch, a letter not used
    yet at each of the first three places, the fourth is the one left), so every reply parses. One
    forward pass gives a score or pair verdict (three for a ranking). The choice is sampled at the
    release's temperature 0.4 and top-p 0.2 from the distribution over the allowed tokens
    (temperature 0: argmax).
  * `free` (text judge only): the release's protocol as is: the model writes freely (up to
    `max_new_tokens`) and whatever does not parse is a failure.

**TextJudge**: the release's prompt (`judgements.build_prompt`, any setting) in SmolLM2's chat
template. The image never reaches it: under "Vision Expert" a caption stands in for it (from the
vision expert trained here, or the instance's ground-truth caption as an oracle). The part of the
prompt shared by all items of a kind (the rubric, ~400 tokens) is encoded once into a KV cache.

**VLMJudge**: LLaVA-style. The frozen vision expert's 17 feature tokens pass a trained two-layer
GELU projector into SmolLM2's embedding space and take the place of 17 placeholder tokens after
`Image:`; a short judging prompt follows (`vlm_prompt`: the instruction, the answer(s) and the
task), then `Judgement: [[`. Trained: the projector and the top `train_layers` decoder layers (the
rest of SmolLM2 and its tied embedding stay frozen), with the language-model loss on the verdict
tokens only (`VLMTask`, a Task of the one loop). The image embeddings enter through the Llama's
`embeddings` perturbation (added to the placeholder's embedding), so the shared model is used
unchanged.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Mapping, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxml.core.optim import make_optimizer
from jaxml.llm import generate as generate_lib
from jaxml.llm.base import SamplingOptions
from jaxml.data.pipeline import ArraySource, Source
from jaxml.models.llama import Llama, hidden_states
from jaxml.papers.mllmjudge import formats, judgements

PREFIX = "Judgement: [["
SCORE_CHOICES = "12345"
PAIR_CHOICES = "ABC"
RANK_LETTERS = "ABCD"
RELEASE_TEMPERATURE, RELEASE_TOP_P = 0.4, 0.2
MODES = ("verdict", "free")
MAX_TARGETS = 4


# ------------------------------------------------------------------------------ verdict tokens


@dataclasses.dataclass(frozen=True)
class VerdictTokens:
    """Token ids of the forced prefix and of each verdict symbol for one tokenizer."""

    prefix: tuple[int, ...]
    choice: Mapping[str, int]          # "1".."5", "A".."D" -> id
    sep: tuple[int, ...]               # between two ranked letters ("]], [[")

    @classmethod
    def of(cls, tokenizer) -> "VerdictTokens":
        prefix = tuple(tokenizer.encode(PREFIX))
        choice = {}
        for c in SCORE_CHOICES + RANK_LETTERS:
            ids = tokenizer.encode(PREFIX + c)
            if tuple(ids[:-1]) != prefix:
                raise ValueError(f"the tokenizer splits {PREFIX + c!r} as {ids}, not as the prefix {list(prefix)} "
                                 "plus one token: verdict-constrained decoding needs single-token verdicts")
            choice[c] = ids[-1]
        ids = tokenizer.encode(PREFIX + "A]], [[B")
        sep = tuple(ids[len(prefix) + 1:-1])
        if tuple(ids[:len(prefix)]) != prefix or ids[len(prefix)] != choice["A"] or ids[-1] != choice["B"] or not sep:
            raise ValueError(f"the tokenizer splits a ranking {PREFIX + 'A]], [[B'!r} as {ids}: expected prefix, "
                             "letter, separator, letter")
        return cls(prefix, choice, sep)

    def target(self, verdict) -> list[int]:
        """The tokens after the prefix that spell a verdict (score int, pair letter or ranking)."""
        text = str(verdict)
        out = [self.choice[text[0]]]
        for c in text[1:]:
            out += list(self.sep) + [self.choice[c]]
        return out


def reply_text(verdict, kind: str) -> str:
    """The reply a verdict-constrained judge writes: 'Judgement: [[4]]', '... [[C]], [[D]], [[A]], [[B]]'."""
    if kind == "batch":
        return "Judgement: " + ", ".join(f"[[{c}]]" for c in verdict)
    return f"Judgement: [[{verdict}]]"


def pick(logits: np.ndarray, temperature: float, top_p: float, rng: np.random.Generator) -> np.ndarray:
    """Samples one index per row of `logits` [n, k] at `temperature` with nucleus `top_p`
    (temperature 0: argmax) through the shared sampler `jaxml.llm.generate.sample_logits`; the key
    comes from `rng`. Rows may hold -inf for disallowed entries."""
    key = jax.random.PRNGKey(int(rng.integers(2 ** 31)))
    options = SamplingOptions(temperature=float(temperature), top_p=float(top_p))
    return np.asarray(generate_lib.sample_logits(jnp.asarray(logits, jnp.float32), key, options)).astype(np.int64)


# ------------------------------------------------------------------------------- LM forward


def lm_hidden(model: Llama, params, tokens, delta=None, cache=None, cache_index=None):
    """Final normalised hidden states [B, T, hidden] (plus the new cache); `delta` [B, T, hidden]
    is added to the token embeddings (the image slots)."""
    return hidden_states(model, params, tokens, delta=delta, cache=cache, cache_index=cache_index)


def head_logits(params, hidden):
    """Tied-embedding logits of hidden states [..., hidden] -> [..., vocab]."""
    return hidden @ params["embed"]["embedding"].T


@functools.lru_cache(maxsize=8)
def _programs(model: Llama):
    @jax.jit
    def prefix_cache(params, tokens):
        cache = [(jnp.zeros((1, tokens.shape[1], model.config.kv_heads, model.config.head_dim)),) * 2
                 for _ in range(model.config.layers)]
        _, cache = lm_hidden(model, params, tokens, cache=cache, cache_index=0)
        return cache

    @jax.jit
    def logits_after_prefix(params, cache, tokens, last):
        b, t = tokens.shape
        grown = [tuple(jnp.concatenate([jnp.broadcast_to(a, (b,) + a.shape[1:]),
                                        jnp.zeros((b, t) + a.shape[2:], a.dtype)], 1) for a in kv) for kv in cache]
        hidden, _ = lm_hidden(model, params, tokens, cache=grown, cache_index=cache[0][0].shape[1])
        return head_logits(params, hidden[jnp.arange(b), last])

    @jax.jit
    def logits_with_delta(params, tokens, delta, last):
        hidden, _ = lm_hidden(model, params, tokens, delta)
        return head_logits(params, hidden[jnp.arange(tokens.shape[0]), last])

    return prefix_cache, logits_after_prefix, logits_with_delta


def _bucket(n: int, multiple: int = 32) -> int:
    return -(-n // multiple) * multiple


def _right_pad(rows: Sequence[Sequence[int]], pad_id: int, batch: int, multiple: int = 32):
    width = _bucket(max(len(r) for r in rows), multiple)
    out = np.full((batch, width), pad_id, np.int32)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    for i in range(len(rows), batch):
        out[i] = out[len(rows) - 1]
    last = np.array([len(r) - 1 for r in rows] + [len(rows[-1]) - 1] * (batch - len(rows)), np.int32)
    return out, last


def constrained_verdicts(last_logits_fn, rows: Sequence[list[int]], kinds: Sequence[str], tokens: VerdictTokens,
                         temperature: float, top_p: float, rng: np.random.Generator,
                         num_answers: Sequence[int]) -> list:
    """Verdicts for token rows that end with the forced prefix. `last_logits_fn(rows, owners) ->
    [n, vocab]` gives the next-token logits after each row (`owners[j]` is the index of the item
    that row j belongs to). Score: one of 1-5; pair: A/B/C; batch: a ranking
    built letter by letter from the letters not used yet (the last one is the one left)."""
    verdicts: list = [None] * len(rows)
    first = np.asarray(last_logits_fn(list(rows), list(range(len(rows)))))
    ranking_rows = []
    for i, kind in enumerate(kinds):
        if kind == "batch":
            ranking_rows.append(i)
            continue
        choices = SCORE_CHOICES if kind == "score" else PAIR_CHOICES
        ids = [tokens.choice[c] for c in choices]
        verdicts[i] = choices[int(pick(first[i:i + 1, ids], temperature, top_p, rng)[0])]
        if kind == "score":
            verdicts[i] = int(verdicts[i])
    if ranking_rows:
        letters = {i: RANK_LETTERS[:num_answers[i]] for i in ranking_rows}
        chosen = {i: "" for i in ranking_rows}
        logits = {i: first[i] for i in ranking_rows}
        for place in range(max(len(v) for v in letters.values()) - 1):
            active = [i for i in ranking_rows if len(chosen[i]) < len(letters[i]) - 1]
            for i in active:
                left = [c for c in letters[i] if c not in chosen[i]]
                row = logits[i][[tokens.choice[c] for c in left]][None]
                chosen[i] += left[int(pick(row, temperature, top_p, rng)[0])]
            extend = [i for i in active if len(chosen[i]) < len(letters[i]) - 1]
            if extend:
                grown = [rows[i] + tokens.target(chosen[i]) + list(tokens.sep) for i in extend]
                new = np.asarray(last_logits_fn(grown, extend))
                for j, i in enumerate(extend):
                    logits[i] = new[j]
        for i in ranking_rows:
            chosen[i] += "".join(c for c in letters[i] if c not in chosen[i])
            verdicts[i] = chosen[i]
    return verdicts


# ------------------------------------------------------------------------------- text judge


def _num_answers(item) -> int:
    return len(item.answers) if formats.kind_of(item) == "batch" else 0


@dataclasses.dataclass(eq=False)
class TextJudge:
    """SmolLM2-135M-Instruct (or any `jaxml.llm.LocalLLM`) judging from the release's text prompt.

    Attributes:
      llm: a `LocalLLM` (model, params, tokenizer).
      mode: 'verdict' (grammar-constrained verdict) or 'free' (free generation, parsed after).
      temperature, top_p: the release's sampling (0.4, 0.2).
      batch_size: rows per forward pass.
      max_new_tokens: the free mode's budget.
      name: shown in tables.
    """

    llm: object
    mode: str = "verdict"
    temperature: float = RELEASE_TEMPERATURE
    top_p: float = RELEASE_TOP_P
    batch_size: int = 8
    max_new_tokens: int = 96
    name: str = "smollm2-135m-text"

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"TextJudge mode={self.mode!r}; accepted {MODES}")
        self.tokens = VerdictTokens.of(self.llm.tokenizer)

    def _chat(self, prompt: str) -> str:
        return self.llm.tokenizer.apply_chat_template([{"role": "user", "content": prompt}])

    def _prompts(self, items, setting, captions) -> list[str]:
        prompts = []
        for item in items:
            caption = None
            if setting == "Vision Expert":
                if captions is None or item.image_path not in captions:
                    raise KeyError(f"the 'Vision Expert' setting needs a caption for {item.image_path!r}")
                caption = captions[item.image_path]
            prompts.append(judgements.build_prompt(item, setting, caption))
        return prompts

    def _logits_fn(self, prompts: Sequence[str]):
        """(token rows after the cached head, last_logits(rows, owners)) for prompts of one kind and setting."""
        tok = self.llm.tokenizer
        prefix_cache, after_prefix, _ = _programs(self.llm.model)
        marker = "Here is the input:\n"
        chats = [self._chat(p) + PREFIX for p in prompts]
        cut = chats[0].index(marker) + len(marker)
        head = chats[0][:cut]
        if any(c[:cut] != head for c in chats):
            raise AssertionError("the prompts of one kind and setting must share their head")
        cache = prefix_cache(self.llm.params, np.asarray([tok.encode(head)], np.int32))
        rows = [tok.encode(c[cut:], add_bos=False) for c in chats]

        def last_logits(rows_now, owners):
            out = []
            for s in range(0, len(rows_now), self.batch_size):
                part = rows_now[s:s + self.batch_size]
                arr, last = _right_pad(part, tok.pad_id, self.batch_size)
                out.append(np.asarray(after_prefix(self.llm.params, cache, arr, last))[:len(part)])
            return np.concatenate(out)

        return rows, last_logits

    def judge(self, items: Sequence[formats.Item], images: Mapping[str, np.ndarray] | None = None, *,
              setting: str = judgements.DEFAULT_SETTING, captions: Mapping[str, str] | None = None,
              seed: int = 0) -> list[str]:
        """Raw replies, one per item (the image is never used: this judge reads text only)."""
        items = list(items)
        if not items:
            return []
        prompts = self._prompts(items, setting, captions)
        if self.mode == "free":
            sampling = {} if self.temperature == 0 else {"temperature": self.temperature, "top_p": self.top_p}
            return self.llm.generate_text(prompts, max_new_tokens=self.max_new_tokens, chat=True, seed=seed,
                                          **sampling)
        rng = np.random.default_rng(seed)
        replies: list[str] = [""] * len(items)
        by_kind: dict[str, list[int]] = {}
        for i, item in enumerate(items):
            by_kind.setdefault(formats.kind_of(item), []).append(i)
        for kind, idx in by_kind.items():
            rows, last_logits = self._logits_fn([prompts[i] for i in idx])
            verdicts = constrained_verdicts(last_logits, rows, [kind] * len(idx), self.tokens, self.temperature,
                                            self.top_p, rng, [_num_answers(items[i]) for i in idx])
            for i, v in zip(idx, verdicts):
                replies[i] = reply_text(v, kind)
        return replies

    def score_distribution(self, items: Sequence[formats.ScoreItem], images=None, *,
                           setting: str = judgements.DEFAULT_SETTING, captions: Mapping[str, str] | None = None
                           ) -> np.ndarray:
        """[N, 5] the judge's probabilities of the verdicts 1..5 for score items (softmax over the five
        allowed tokens at temperature 1); `expected_scores` turns them into a G-Eval-style score."""
        items = list(items)
        if any(formats.kind_of(it) != "score" for it in items):
            raise ValueError("score_distribution takes score items only")
        rows, last_logits = self._logits_fn(self._prompts(items, setting, captions))
        return verdict_probabilities(last_logits(rows, list(range(len(rows)))), self.tokens)


def verdict_probabilities(logits: np.ndarray, tokens: VerdictTokens) -> np.ndarray:
    """[N, 5] softmax over the score tokens 1..5 of next-token logits [N, vocab]."""
    z = np.asarray(logits, np.float64)[:, [tokens.choice[c] for c in SCORE_CHOICES]]
    z = np.exp(z - z.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def expected_scores(probabilities: np.ndarray) -> np.ndarray:
    """sum_k k p_k for rows of probabilities over the scores 1..5."""
    return np.asarray(probabilities) @ np.arange(1, 6)


# ------------------------------------------------------------------------ vision-language judge

IMAGE_SLOTS = 17
_TASK_LINES = {
    "score": "Rate the answer from 1 (worst) to 5 (best).",
    "pair": "Which answer is better? A, B, or C for a tie.",
    "batch": "Rank the answers from best to worst.",
}


def vlm_prompt(item: formats.Item) -> str:
    """The VLM judge's short prompt after the image tokens (our format; the release's rubric is
    what the training labels teach)."""
    kind = formats.kind_of(item)
    lines = [f"Instruction: {item.instruction}"]
    if kind == "score":
        lines.append(f"Answer: {item.answer}")
    elif kind == "pair":
        lines += [f"Answer A: {item.answer1.answer}", f"Answer B: {item.answer2.answer}"]
    else:
        lines += [f"Answer {c}: {a.answer}" for c, a in zip(formats.ranking_letters(len(item.answers)),
                                                           item.answers)]
    lines.append(_TASK_LINES[kind])
    return "\n" + "\n".join(lines) + "\n"


class Projector(nn.Module):
    """LLaVA-1.5's projector: Linear -> GELU -> Linear, vision width -> LM width."""

    width: int
    out_scale: float = 0.02

    @nn.compact
    def __call__(self, x):
        x = nn.gelu(nn.Dense(self.width, name="fc1")(nn.LayerNorm(name="norm")(x)))
        return nn.Dense(self.width, kernel_init=nn.initializers.normal(self.out_scale), name="fc2")(x)


@dataclasses.dataclass(frozen=True)
class VLMLayout:
    """Token layout: `Image:` + IMAGE_SLOTS placeholders + vlm_prompt + PREFIX (+ target)."""

    head: tuple[int, ...]
    placeholder: int
    tokens: VerdictTokens

    @classmethod
    def of(cls, tokenizer) -> "VLMLayout":
        return cls(tuple(tokenizer.encode("Image:")), int(tokenizer.pad_id), VerdictTokens.of(tokenizer))

    @property
    def slots(self) -> slice:
        return slice(len(self.head), len(self.head) + IMAGE_SLOTS)

    def row(self, tokenizer, item) -> list[int]:
        return (list(self.head) + [self.placeholder] * IMAGE_SLOTS
                + tokenizer.encode(vlm_prompt(item), add_bos=False) + list(self.tokens.prefix))


def split_lm_params(params: dict, layers: int, train_layers: int) -> tuple[dict, dict]:
    """(frozen, trained): the top `train_layers` decoder layers and the final norm are trained."""
    top = {f"layers_{i}" for i in range(layers - train_layers, layers)} | {"final_norm"}
    return ({k: v for k, v in params.items() if k not in top}, {k: v for k, v in params.items() if k in top})


def _image_delta(layout: VLMLayout, projected, t: int):
    """[B, t, hidden]: projected image tokens at the slots, zero elsewhere."""
    b, n, d = projected.shape
    s = layout.slots
    return jnp.zeros((b, t, d), projected.dtype).at[:, s.start:s.stop].set(projected)


def build_examples(items: Sequence[formats.Item], features: Mapping[str, np.ndarray], tokenizer,
                   layout: VLMLayout, multiple: int = 32) -> dict[str, np.ndarray]:
    """Training rows: `tokens` [N, T] (prompt + prefix + verdict), `features` [N, 17, D],
    `target_pos` / `target_ids` / `target_w` [N, MAX_TARGETS] (the positions whose next token is a
    verdict symbol; weight 0 for unused places). T is the longest row, rounded up to `multiple`."""
    rows, pos, ids, feats = [], [], [], []
    for item in items:
        kind = formats.kind_of(item)
        gold = item.human if kind == "score" else item.human_answer
        base = layout.row(tokenizer, item)
        target = layout.tokens.target(gold)
        row = base + target
        symbols = [len(base) - 1 + j for j, t in enumerate(target) if t in layout.tokens.choice.values()
                   and (j == 0 or target[j - 1] in layout.tokens.sep)]
        rows.append(row)
        pos.append(symbols)
        ids.append([row[p + 1] for p in symbols])
        feats.append(features[item.image_path])
    t = _bucket(max(len(r) for r in rows), multiple)
    n = len(rows)
    out = {"tokens": np.full((n, t), layout.placeholder, np.int32), "features": np.stack(feats).astype(np.float32),
           "target_pos": np.zeros((n, MAX_TARGETS), np.int32), "target_ids": np.zeros((n, MAX_TARGETS), np.int32),
           "target_w": np.zeros((n, MAX_TARGETS), np.float32)}
    for i, (r, p, d) in enumerate(zip(rows, pos, ids)):
        out["tokens"][i, :len(r)] = r
        out["target_pos"][i, :len(p)] = p
        out["target_ids"][i, :len(d)] = d
        out["target_w"][i, :len(p)] = 1.0
    return out


@dataclasses.dataclass(frozen=True, eq=False)
class VLMTask:
    """The VLM judge's fine-tuning as a Task of the one loop.

    Params: {"projector", "lm_top" (trained), "lm" (frozen: stop-gradient, and the optimizer's
    `set_to_zero`)}. Loss: cross-entropy of the verdict tokens over the whole vocabulary.
    """

    model: Llama
    lm_params: dict
    layout: VLMLayout
    train_source: Source
    eval_sources: dict
    train_layers: int = 4
    projector_lr_scale: float = 10.0

    @property
    def projector(self) -> Projector:
        return Projector(self.model.config.hidden)

    def init(self, rng, batch):
        frozen, top = split_lm_params(self.lm_params, self.model.config.layers, self.train_layers)
        return {"projector": self.projector.init(rng, batch["features"][:1])["params"], "lm_top": top, "lm": frozen}

    def _lm(self, params):
        return {**jax.lax.stop_gradient(params["lm"]), **params["lm_top"]}

    def _logits(self, params, batch):
        projected = self.projector.apply({"params": params["projector"]}, batch["features"])
        lm = self._lm(params)
        delta = _image_delta(self.layout, projected, batch["tokens"].shape[1])
        hidden, _ = lm_hidden(self.model, lm, batch["tokens"], delta)
        b = hidden.shape[0]
        h = hidden[jnp.arange(b)[:, None], batch["target_pos"]]                       # [B, K, D]
        return head_logits(lm, h)

    def _ce(self, params, batch):
        logits = self._logits(params, batch)
        ce = optax.softmax_cross_entropy_with_integer_labels(logits, batch["target_ids"])
        w = batch["target_w"]
        per = (ce * w).sum(-1) / jnp.maximum(w.sum(-1), 1.0)
        correct = ((jnp.argmax(logits, -1) == batch["target_ids"]) | (w == 0)).all(-1)
        return per, correct

    def loss(self, params, batch, rng):
        per, correct = self._ce(params, batch)
        return per.mean(), {"verdict_accuracy": correct.mean()}

    def evaluate(self, params, batch):
        per, correct = self._ce(params, batch)
        return {"loss": per, "verdict_accuracy": correct.astype(jnp.float32)}

    def optimizer(self, config):
        steps = int(config.num_steps)
        lm_tx, _ = make_optimizer(config.optimizer, config.schedule, steps)
        proj_opt = dict(config.optimizer)
        proj_opt["learning_rate"] = float(proj_opt["learning_rate"]) * self.projector_lr_scale
        proj_tx, _ = make_optimizer(proj_opt, config.schedule, steps)
        return optax.multi_transform({"projector": proj_tx, "lm_top": lm_tx, "lm": optax.set_to_zero()},
                                     {"projector": "projector", "lm_top": "lm_top", "lm": "lm"})

    def train_data(self) -> Source:
        return self.train_source

    def eval_data(self) -> dict:
        return self.eval_sources


def vlm_source(items, features, tokenizer, layout) -> ArraySource:
    return ArraySource(build_examples(items, features, tokenizer, layout))


@dataclasses.dataclass(eq=False)
class VLMJudge:
    """The trained vision-language judge: image features -> projector -> SmolLM2 -> verdict.

    Attributes:
      model: the Llama; params: {"projector", "lm_top", "lm"} (a VLMTask's trained params).
      tokenizer, expert: SmolLM2's tokenizer and the frozen `vision.VisionExpert`.
      blind: the ablation without the image: the features are zeros (train it blind as well).
    """

    model: Llama
    params: dict
    tokenizer: object
    expert: object
    temperature: float = RELEASE_TEMPERATURE
    top_p: float = RELEASE_TOP_P
    batch_size: int = 8
    name: str = "vlm-judge"
    blind: bool = False

    def __post_init__(self):
        self.layout = VLMLayout.of(self.tokenizer)
        self._lm = {**self.params["lm"], **self.params["lm_top"]}
        self._projector = Projector(self.model.config.hidden)

    def _logits_fn(self, items, images):
        """(token rows, last_logits(rows, owners)) with each item's projected image in its slots."""
        missing = sorted({it.image_path for it in items if it.image_path not in images})
        if missing:
            raise KeyError(f"no image for {missing[:3]} ({len(missing)} image paths missing)")
        paths = sorted({it.image_path for it in items})
        feats = dict(zip(paths, self.expert.features(np.stack([images[p] for p in paths]))))
        if self.blind:
            feats = {p: np.zeros_like(f) for p, f in feats.items()}
        _, _, with_delta = _programs(self.model)
        projected = _project(self._projector, self.params["projector"], np.stack([feats[p] for p in paths]))
        proj = dict(zip(paths, projected))
        rows = [self.layout.row(self.tokenizer, it) for it in items]

        def last_logits(rows_now, owners):
            out = []
            for s in range(0, len(rows_now), self.batch_size):
                part = rows_now[s:s + self.batch_size]
                arr, last = _right_pad(part, self.layout.placeholder, self.batch_size)
                p = np.stack([proj[items[o].image_path] for o in owners[s:s + self.batch_size]])
                if len(p) < self.batch_size:
                    p = np.concatenate([p, np.repeat(p[-1:], self.batch_size - len(p), 0)])
                delta = _image_delta(self.layout, jnp.asarray(p), arr.shape[1])
                out.append(np.asarray(with_delta(self._lm, arr, delta, last))[:len(part)])
            return np.concatenate(out)

        return rows, last_logits

    def score_distribution(self, items: Sequence[formats.ScoreItem], images: Mapping[str, np.ndarray], *,
                           setting: str = judgements.DEFAULT_SETTING, captions=None) -> np.ndarray:
        """[N, 5] probabilities of the verdicts 1..5 for score items (see `TextJudge.score_distribution`)."""
        items = list(items)
        if any(formats.kind_of(it) != "score" for it in items):
            raise ValueError("score_distribution takes score items only")
        rows, last_logits = self._logits_fn(items, images)
        return verdict_probabilities(last_logits(rows, list(range(len(rows)))), self.layout.tokens)

    def judge(self, items: Sequence[formats.Item], images: Mapping[str, np.ndarray], *,
              setting: str = judgements.DEFAULT_SETTING, captions: Mapping[str, str] | None = None,
              seed: int = 0) -> list[str]:
        """Raw replies, one per item. The VLM judge has one prompt format: `setting` must be the
        default ("No COT")."""
        if setting != judgements.DEFAULT_SETTING:
            raise ValueError(f"VLMJudge is trained on one prompt format; setting={setting!r} is not available "
                             f"(use {judgements.DEFAULT_SETTING!r})")
        items = list(items)
        if not items:
            return []
        rows, last_logits = self._logits_fn(items, images)
        rng = np.random.default_rng(seed)
        kinds = [formats.kind_of(it) for it in items]
        verdicts = constrained_verdicts(last_logits, rows, kinds, self.layout.tokens, self.temperature, self.top_p, rng,
                                        [_num_answers(it) for it in items])
        return [reply_text(v, k) for v, k in zip(verdicts, kinds)]


@functools.partial(jax.jit, static_argnums=0)
def _project_jit(projector, params, feats):
    return projector.apply({"params": params}, feats)


def _project(projector, params, feats):
    return np.asarray(_project_jit(projector, params, jnp.asarray(feats)))
