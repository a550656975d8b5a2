"""Beyond the paper: does reading the GRAPH help a small model reason about asynchronous plans, against the
SAME model reading the plan as TEXT?

The paper (Plan Like a Graph) prompts LLMs with a plan's graph and reports that accuracy falls as the plan's
complexity |V| + |E| grows. This module is the controlled version: two small transformers with the same
token embeddings, blocks, width, depth, heads, output head, optimiser and steps, trained with the one loop
on generated plans, one reading the plan as a graph and one as text, scored with one exact-accuracy rule.

The task: critical-parent pointers.
  Nodes are START, steps 1..n and END, in fixed slots: START = 0, step i = i, END = MAX_STEPS + 1 = 18
  (NUM_NODES = 19 slots; slots n+1..17 are padding). For every node v in steps and END the target is its
  critical parent: the predecessor u that maximises the earliest finish time on the hi end (ties: the
  smallest id); START for a step without predecessors; for END the step with the largest finish time
  (always a step without successors: durations are positive). `earliest_finish` gives the finish times.
  The model outputs, for each node v, logits over the candidates {START, steps 1..n} (masked to the
  plan's real nodes, NOT to v's predecessors: the model must know the graph).

Decoding and the exact-accuracy rule (an exact match of the answer, as the LLMs' answers are scored):
  follow the argmax pointers from END; stop at START, at a step already on the chain (a cycle) or after
  n + 1 hops (implied by the cycle stop); a hop to a step that is not a predecessor is followed anyway.
  The predicted answer is the summed duration interval of the chain's steps. The plan is CORRECT iff the
  chain's hi sum equals the gold `critical_path(plan).hi` and its lo sum lies in the gold interval
  [`critical_path(plan).lo`, `.hi`] (`is_correct_chain`). With the true pointers the chain is the hi-end
  critical path, which reproduces `critical_path` exactly unless a path with a month/year step has the
  largest hi sum but a smaller lo sum than another path's lo sum (1 of the 20000 training plans, none of
  the 1000 test plans; the chain then fails the lo condition). Pointer accuracy per node is reported too.

Inputs (both models see the same tokens of a small word-level vocabulary, `VOCAB`):
  duration count tokens (every count of `generator.UNIT_COUNTS`), unit tokens (singular and plural folded:
  'hours' -> 'hour'), step-id tokens (1..17, distinct from the count tokens of the same number, so that a
  graph node's summed input is unambiguous), 'step', 'START', 'END', punctuation and the words of the
  release's 10 constraint phrasings (`TEMPLATES`) and of "All steps can be executed in parallel.".
  - text (`encode_text`): the step listing then the constraints, one phrasing per plan, no step texts (to
    keep sequences short): `START step 1 ( 3 hour ) step 2 ( 30 minute ) . step 1 must precede step 3 .
    step 2 must precede step 3 . END`. The text model's node representation for step i is read at the
    id token of "step i" in the listing; START and END at their marker tokens. Learned positions, plain
    full self-attention over the non-padding tokens.
  - graph (`encode_graph`): one node per slot; a step's input is the sum of the embeddings of its id,
    count and unit tokens (the text model's embedding table) plus a node-type embedding; START and END
    are their marker tokens. Attention is restricted to self, predecessors and successors with a learned
    logit bias per (layer, head, relation) (`attention='mask'`, the default: one hop per layer, so the
    depth bounds how far finish times propagate), or sees every node with a bias for the relation
    none/self/predecessor/successor (`attention='bias'`). 'mask' learned better (quick scale: 0.91 vs 0.81
    plan accuracy). Edges include START -> first steps and last steps -> END.
  Output head (shared): pointer logits[v, u] = <W_q h_v, W_k h_u> / sqrt(width) over the candidates.

    config = neural_config("quick", kind="graph")
    task = make_task(config)
    outcome = train_and_evaluate(config, workdir, task=task)
    plans = split("test", 1000)
    per_plan = evaluate_models({"graph": (task, outcome.state.params)}, plans)
    accuracy_by([complexity_bin(p.ve_count) for p in plans], per_plan["graph"]["correct"], COMPLEXITY_BINS)
    result = train_and_compare(neural_config("quick"), workdir)   # both models, tables by bin and type

Shapes: B = batch, N = NUM_NODES = 19, L = config.model.max_text_len, D = width, H = heads.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import pathlib
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxml.core import registry
from jaxml.core.mesh import num_params
from jaxml.core.train import default_config, train_and_evaluate
from jaxml.data import pipeline
from jaxml.data.pipeline import Source
from jaxml.nn.attention import MASK_VALUE
from jaxml.papers.asynchow import generator, prompts
from jaxml.papers.asynchow.generator import MAX_STEPS
from jaxml.papers.asynchow.metrics import accuracy_by
from jaxml.papers.asynchow.plan import (END, PLAN_TYPES, START, Interval, Plan, critical_path, duration_spans,
                                        earliest_finish)

NUM_NODES = MAX_STEPS + 2
START_NODE, END_NODE = 0, MAX_STEPS + 1
KINDS = ("graph", "text")
ATTENTIONS = ("bias", "mask")

# --- Vocabulary ----------------------------------------------------------------------------------------

def _words(sentence: str) -> str:
    """A phrasing as the models' words: lower case, punctuation split off, "[preceding step]" -> P and
    "[following step]" -> F ("Step 1 must precede step 3." style sentences of `prompts`)."""
    sentence = sentence.lower().replace("[preceding step]", "P").replace("[following step]", "F")
    return re.sub(r"\s*([,.:])", r" \1", sentence)


# The release's 10 constraint phrasings (`prompts.ORDERING_TEMPLATES`) and its parallel sentence, as words.
TEMPLATES = tuple(_words(t) for t in prompts.ORDERING_TEMPLATES)
PARALLEL_SENTENCE = _words(prompts.PARALLEL_SENTENCE)
PAD = "<pad>"
COUNTS = tuple(sorted({c for counts in generator.UNIT_COUNTS.values() for c in counts}))
UNITS = generator.UNITS


def _count_token(c: int) -> str:
    return f"count:{c}"


def _id_token(i: int) -> str:
    return f"id:{i}"


def _build_vocab() -> tuple[str, ...]:
    words = [PAD, "START", "END", "step", "(", ")"]
    for sentence in TEMPLATES + (PARALLEL_SENTENCE,):
        words += [w for w in sentence.split() if w not in ("P", "F")]
    words += [_count_token(c) for c in COUNTS] + list(UNITS) + [_id_token(i) for i in range(1, MAX_STEPS + 1)]
    return tuple(dict.fromkeys(words))


VOCAB = _build_vocab()
TOKEN_ID = {w: i for i, w in enumerate(VOCAB)}
PAD_ID = TOKEN_ID[PAD]
# Node types of the graph model (type 3 = padding slot).
NODE_START, NODE_STEP, NODE_END, NODE_PAD = 0, 1, 2, 3
# Relation of key node u to query node v (relations[v, u]).
REL_NONE, REL_SELF, REL_PRED, REL_SUCC, REL_PAD = 0, 1, 2, 3, 4
NUM_RELATIONS = 5


def render_tokens(tokens: Sequence[int]) -> str:
    """Token ids as the words a reader sees (counts and ids as plain numbers; padding dropped)."""
    words = [VOCAB[int(t)] for t in tokens if int(t) != PAD_ID]
    return " ".join(w.split(":", 1)[1] if ":" in w and w != ":" else w for w in words)


# --- Featurisation ------------------------------------------------------------------------------------

def _check_plan(plan: Plan) -> None:
    if not isinstance(plan, Plan):
        raise TypeError(f"expected a Plan, got {type(plan).__name__}")
    if plan.n > MAX_STEPS:
        raise ValueError(f"{plan.title!r} has {plan.n} steps; the neural models take at most {MAX_STEPS}")


def _duration_tokens(plan: Plan, step: int) -> tuple[int, int]:
    """(count token id, unit token id) of step `step` (1-based); one "count unit" span with a known count."""
    text = plan.durations[step - 1]
    spans = duration_spans(text)
    if len(spans) != 1:
        raise ValueError(f"{plan.title!r}, step {step}: duration {text!r} has {len(spans)} 'count unit' spans; "
                         "the neural models read exactly one")
    count, unit = spans[0]
    if unit not in UNITS or count != int(count) or int(count) not in COUNTS:
        raise ValueError(f"{plan.title!r}, step {step}: duration {text!r} is outside the vocabulary "
                         f"(counts {COUNTS}, units {UNITS})")
    return TOKEN_ID[_count_token(int(count))], TOKEN_ID[unit]


def encode_text(plan: Plan, template_idx: int = 1, max_len: int | None = None) -> dict[str, np.ndarray]:
    """The plan as a token sequence (see the module docstring).

    Args:
      plan: a Plan with at most MAX_STEPS steps and single-span durations of the generator's counts/units.
      template_idx: which of the 10 `TEMPLATES` phrases every constraint (ignored for parallel plans).
      max_len: pad to this length (ValueError if the text is longer); None: no padding.
    Returns:
      {"tokens": int32 [L] (PAD_ID after the text), "node_pos": int32 [N]: the token index of START, of
       the id token of each "step i" of the listing and of END; 0 for padding slots}.
    """
    _check_plan(plan)
    if not 0 <= int(template_idx) < len(TEMPLATES):
        raise ValueError(f"template_idx={template_idx}; accepted 0..{len(TEMPLATES) - 1}")
    tokens = [TOKEN_ID["START"]]
    node_pos = np.zeros(NUM_NODES, np.int32)
    for i in range(1, plan.n + 1):
        count, unit = _duration_tokens(plan, i)
        tokens.append(TOKEN_ID["step"])
        node_pos[i] = len(tokens)
        tokens += [TOKEN_ID[_id_token(i)], TOKEN_ID["("], count, unit, TOKEN_ID[")"]]
    tokens.append(TOKEN_ID["."])
    if not plan.deps:
        tokens += [TOKEN_ID[w] for w in PARALLEL_SENTENCE.split()]
    for prec, foll in plan.deps:
        for w in TEMPLATES[int(template_idx)].split():
            if w in ("P", "F"):
                tokens += [TOKEN_ID["step"], TOKEN_ID[_id_token(prec if w == "P" else foll)]]
            else:
                tokens.append(TOKEN_ID[w])
    node_pos[END_NODE] = len(tokens)
    tokens.append(TOKEN_ID["END"])
    if max_len is not None:
        if len(tokens) > max_len:
            raise ValueError(f"{plan.title!r}: its text has {len(tokens)} tokens, more than max_len={max_len}")
        tokens += [PAD_ID] * (max_len - len(tokens))
    return {"tokens": np.asarray(tokens, np.int32), "node_pos": node_pos}


def text_length(plan: Plan, template_idx: int = 1) -> int:
    """The number of tokens of `encode_text(plan, template_idx)` without padding."""
    return len(encode_text(plan, template_idx)["tokens"])


def encode_graph(plan: Plan) -> dict[str, np.ndarray]:
    """The plan as a graph over the N node slots.

    Returns:
      {"node_tokens": int32 [N, 3]: (id or marker token, count token, unit token), PAD_ID where absent;
       "node_type": int32 [N] (NODE_START, NODE_STEP, NODE_END, NODE_PAD);
       "relations": int32 [N, N], relations[v, u] = relation of u to v: REL_SELF, REL_PRED (edge u -> v,
       START -> steps without predecessors and steps without successors -> END included), REL_SUCC
       (edge v -> u), REL_NONE, or REL_PAD when u or v is a padding slot}.
    """
    _check_plan(plan)
    node_tokens = np.full((NUM_NODES, 3), PAD_ID, np.int32)
    node_type = np.full(NUM_NODES, NODE_PAD, np.int32)
    node_tokens[START_NODE, 0], node_type[START_NODE] = TOKEN_ID["START"], NODE_START
    node_tokens[END_NODE, 0], node_type[END_NODE] = TOKEN_ID["END"], NODE_END
    for i in range(1, plan.n + 1):
        node_tokens[i] = (TOKEN_ID[_id_token(i)],) + _duration_tokens(plan, i)
        node_type[i] = NODE_STEP
    real = node_type != NODE_PAD
    relations = np.where(real[:, None] & real[None, :], REL_NONE, REL_PAD).astype(np.int32)
    for a, b in _edges(plan):
        relations[b, a] = REL_PRED
        relations[a, b] = REL_SUCC
    relations[np.arange(NUM_NODES)[real], np.arange(NUM_NODES)[real]] = REL_SELF
    return {"node_tokens": node_tokens, "node_type": node_type, "relations": relations}


def _edges(plan: Plan) -> list[tuple[int, int]]:
    """`plan.edge_list()` (START and END edges included) as node slots."""
    slot = {START: START_NODE, END: END_NODE}
    return [(slot.get(a) if a in slot else int(a), slot.get(b) if b in slot else int(b)) for a, b in plan.edge_list()]


def pointer_targets(plan: Plan) -> np.ndarray:
    """The critical parent of every node: int32 [N], -1 for START and padding slots.

    Step v: its predecessor with the largest hi-end earliest finish time (ties: smallest id), START (0)
    without predecessors; END: the step with the largest hi-end finish time (ties: smallest id).
    """
    _check_plan(plan)
    _, f_hi = earliest_finish(plan)
    targets = np.full(NUM_NODES, -1, np.int32)
    for v, p in enumerate(plan.predecessors(), start=1):
        targets[v] = START_NODE if not p else max(p, key=lambda u: (f_hi[u - 1], -u))
    targets[END_NODE] = int(np.argmax(f_hi)) + 1   # argmax returns the first (smallest id) maximum
    return targets


def _minutes(seconds: float) -> int:
    if seconds % 60:
        raise ValueError(f"duration of {seconds} s is not a whole number of minutes")
    return int(seconds // 60)


def node_arrays(plan: Plan) -> dict[str, np.ndarray]:
    """What both models share: targets and the data of the exact-accuracy rule, in whole minutes.

    Returns:
      {"targets": int32 [N] (-1: no target), "candidates": bool [N] (START and steps 1..n),
       "dur_lo", "dur_hi": int32 [N] step durations in minutes (0 elsewhere), "n_steps": int32 [],
       "gold_lo", "gold_hi": int32 [] critical_path(plan) in minutes}.
    """
    lo, hi = plan.intervals()
    dur_lo = np.zeros(NUM_NODES, np.int32)
    dur_hi = np.zeros(NUM_NODES, np.int32)
    dur_lo[1:plan.n + 1] = [_minutes(x) for x in lo]
    dur_hi[1:plan.n + 1] = [_minutes(x) for x in hi]
    candidates = np.zeros(NUM_NODES, bool)
    candidates[:plan.n + 1] = True
    gold = critical_path(plan)
    return {"targets": pointer_targets(plan), "candidates": candidates, "dur_lo": dur_lo, "dur_hi": dur_hi,
            "n_steps": np.int32(plan.n), "gold_lo": np.int32(_minutes(gold.lo)),
            "gold_hi": np.int32(_minutes(gold.hi))}


def template_index(plan: Plan, seed: int = 0) -> int:
    """The constraint phrasing (0..9) of `plan`'s text: a hash of its structure and `seed`, so a plan keeps
    its phrasing whatever list it is in (filtering a list does not re-draw the others')."""
    key = f"{seed}:{generator.structure_key(plan)!r}".encode()
    return int(hashlib.sha256(key).hexdigest()[:8], 16) % len(TEMPLATES)


def encode_plans(plans: Sequence[Plan], kind: str, *, max_text_len: int = 0,
                 template_seed: int = 0) -> dict[str, np.ndarray]:
    """The arrays of a data source: `node_arrays` of every plan plus `encode_graph` (kind 'graph') or
    `encode_text(plan, template_index(plan, template_seed), max_text_len)` (kind 'text'), stacked on a
    leading [num_plans] axis."""
    _check_kind(kind)
    if kind == "text" and max_text_len <= 0:
        raise ValueError(f"kind 'text' needs max_text_len > 0, got {max_text_len}")
    rows = []
    for plan in plans:
        row = node_arrays(plan)
        row.update(encode_graph(plan) if kind == "graph"
                   else encode_text(plan, template_index(plan, template_seed), max_text_len))
        rows.append(row)
    if not rows:
        raise ValueError("encode_plans: no plans")
    return {k: np.stack([r[k] for r in rows]) for k in rows[0]}


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}; accepted {KINDS}")


# --- Models ---------------------------------------------------------------------------------------------

class Block(nn.Module):
    """Pre-LayerNorm transformer block: x + MHA(LN x, additive bias), then x + MLP(LN x) (GELU).

    Attributes: width D, heads H (D % H == 0), mlp_ratio.
    Call: x [B, S, D], bias float broadcastable to [B, H, S, S], added to the attention logits (MASK_VALUE = no attention).
    """

    width: int
    heads: int
    mlp_ratio: int = 4

    @nn.compact
    def __call__(self, x: jax.Array, bias: jax.Array) -> jax.Array:
        if self.width % self.heads:
            raise ValueError(f"Block: width={self.width} is not a multiple of heads={self.heads}")
        head_dim = self.width // self.heads
        h = nn.LayerNorm()(x)
        q, k, v = (nn.DenseGeneral((self.heads, head_dim), name=n)(h) for n in ("query", "key", "value"))
        logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(head_dim) + bias
        weights = jax.nn.softmax(logits, axis=-1)
        attended = jnp.einsum("bhqk,bkhd->bqhd", weights, v)
        x = x + nn.DenseGeneral(self.width, axis=(-2, -1), name="out")(attended)
        h = nn.LayerNorm()(x)
        h = nn.Dense(self.mlp_ratio * self.width)(h)
        return x + nn.Dense(self.width)(nn.gelu(h))


class PointerHead(nn.Module):
    """Critical-parent logits: [B, N, N], logits[b, v, u] = <W_q h_v, W_k h_u> / sqrt(D), MASK_VALUE where u
    is not a candidate. Call: h [B, N, D], candidates bool [B, N]."""

    width: int

    @nn.compact
    def __call__(self, h: jax.Array, candidates: jax.Array) -> jax.Array:
        h = nn.LayerNorm()(h)
        q = nn.Dense(self.width, name="query")(h)
        k = nn.Dense(self.width, name="key")(h)
        logits = jnp.einsum("bvd,bud->bvu", q, k) / math.sqrt(self.width)
        return jnp.where(candidates[:, None, :], logits, MASK_VALUE)


class PlanTextModel(nn.Module):
    """Reads the plan as text: token + learned position embeddings, `depth` Blocks of full self-attention
    over the non-padding tokens, node states gathered at `node_pos`, `PointerHead`.

    Call: tokens int32 [B, L], node_pos int32 [B, N], candidates bool [B, N] -> logits [B, N, N].
    """

    width: int
    depth: int
    heads: int
    max_len: int
    mlp_ratio: int = 4

    @nn.compact
    def __call__(self, tokens: jax.Array, node_pos: jax.Array, candidates: jax.Array) -> jax.Array:
        if tokens.shape[-1] != self.max_len:
            raise ValueError(f"PlanTextModel: tokens of length {tokens.shape[-1]}, expected max_len={self.max_len}")
        x = nn.Embed(len(VOCAB), self.width, name="token_embed")(tokens)
        x = x + self.param("position_embed", nn.initializers.normal(0.02), (self.max_len, self.width))
        bias = jnp.where(tokens != PAD_ID, 0.0, MASK_VALUE)[:, None, None, :]   # [B, 1, 1, L]
        for i in range(self.depth):
            x = Block(self.width, self.heads, self.mlp_ratio, name=f"block_{i}")(x, bias)
        h = jnp.take_along_axis(x, node_pos[..., None], axis=1)
        return PointerHead(self.width, name="pointer")(h, candidates)


class PlanGraphModel(nn.Module):
    """Reads the plan as a graph: a node's input is the sum of its token embeddings (id or marker, count,
    unit; the text model's table) plus a node-type embedding; `depth` Blocks whose attention logits get a
    learned bias per (layer, head, relation) (attention='bias': every real node is seen) or are restricted
    to self/predecessors/successors (attention='mask', with the same biases); `PointerHead`.

    Call: node_tokens int32 [B, N, 3], node_type int32 [B, N], relations int32 [B, N, N],
    candidates bool [B, N] -> logits [B, N, N].
    """

    width: int
    depth: int
    heads: int
    attention: str = "bias"
    mlp_ratio: int = 4

    @nn.compact
    def __call__(self, node_tokens: jax.Array, node_type: jax.Array, relations: jax.Array,
                 candidates: jax.Array) -> jax.Array:
        if self.attention not in ATTENTIONS:
            raise ValueError(f"PlanGraphModel: attention={self.attention!r}; accepted {ATTENTIONS}")
        embed = nn.Embed(len(VOCAB), self.width, name="token_embed")
        x = jnp.sum(embed(node_tokens) * (node_tokens != PAD_ID)[..., None], axis=-2)
        x = x + nn.Embed(4, self.width, name="type_embed")(node_type)
        blocked = relations == REL_PAD
        if self.attention == "mask":
            blocked = blocked | (relations == REL_NONE)
        for i in range(self.depth):
            table = self.param(f"relation_bias_{i}", nn.initializers.zeros, (NUM_RELATIONS, self.heads))
            bias = jnp.where(blocked[..., None], MASK_VALUE, table[relations])   # [B, N, N, H]
            x = Block(self.width, self.heads, self.mlp_ratio, name=f"block_{i}")(x, bias.transpose(0, 3, 1, 2))
        return PointerHead(self.width, name="pointer")(x, candidates)


# --- Decoding and the exact-accuracy rule ---------------------------------------------------------------

def decode_chain(plan: Plan, pointers: Sequence[int]) -> list[int]:
    """The step ids reached by following `pointers` (int [N], slot-indexed) back from END: stops at START,
    at a step already on the chain, at a slot that is not a step of the plan, or after n + 1 hops."""
    pointers = np.asarray(pointers)
    if pointers.shape != (NUM_NODES,):
        raise ValueError(f"pointers must have shape ({NUM_NODES},) (one parent slot per node), got {pointers.shape}")
    chain, v = [], END_NODE
    for _ in range(plan.n + 1):
        u = int(pointers[v])
        if not 1 <= u <= plan.n or u in chain:
            break
        chain.append(u)
        v = u
    return chain


def decode_answer(plan: Plan, pointers: Sequence[int]) -> Interval:
    """The predicted shortest time: the summed duration interval (seconds) of `decode_chain(plan, pointers)`."""
    lo, hi = plan.intervals()
    chain = [u - 1 for u in decode_chain(plan, pointers)]
    return Interval(float(lo[chain].sum()), float(hi[chain].sum()))


def is_correct_chain(answer: Interval, gold: Interval) -> bool:
    """The exact-accuracy rule: answer.hi == gold.hi and gold.lo <= answer.lo <= gold.hi."""
    return bool(answer.hi == gold.hi and gold.contains(answer.lo))


def decode_minutes(pointers: jax.Array, dur_lo: jax.Array, dur_hi: jax.Array, n_steps: jax.Array
                   ) -> tuple[jax.Array, jax.Array]:
    """`decode_answer` under jit, in whole minutes: pointers int [B, N], dur_lo/dur_hi int32 [B, N],
    n_steps int [B] -> (lo, hi) int32 [B] sums of the chain's durations."""
    b = pointers.shape[0]
    rows = jnp.arange(b)

    def hop(_, carry):
        v, on_chain, active, lo, hi = carry
        u = pointers[rows, v]
        active = active & (u >= 1) & (u <= n_steps) & ~on_chain[rows, u]
        lo = lo + jnp.where(active, dur_lo[rows, u], 0)
        hi = hi + jnp.where(active, dur_hi[rows, u], 0)
        on_chain = on_chain.at[rows, u].set(on_chain[rows, u] | active)
        return jnp.where(active, u, v), on_chain, active, lo, hi

    zeros = jnp.zeros(b, jnp.int32)
    init = (jnp.full(b, END_NODE, jnp.int32), jnp.zeros(pointers.shape, bool), jnp.ones(b, bool), zeros, zeros)
    _, _, _, lo, hi = jax.lax.fori_loop(0, MAX_STEPS + 1, hop, init)
    return lo, hi


def _node_accuracy_by(keys: Sequence[Any], scored: Mapping[str, np.ndarray], order: Sequence[Any]
                      ) -> dict[Any, tuple[float, int]]:
    """{key: (right parents / target nodes over the plans with that key, target nodes)}."""
    keys = np.asarray(keys)
    return {k: (float(scored["pointer_hits"][keys == k].sum() / scored["pointer_targets"][keys == k].sum()),
                int(scored["pointer_targets"][keys == k].sum())) for k in order if (keys == k).any()}


# --- The Task -----------------------------------------------------------------------------------------

_INPUTS = {"graph": ("node_tokens", "node_type", "relations", "candidates"),
           "text": ("tokens", "node_pos", "candidates")}


@dataclasses.dataclass(frozen=True, eq=False)
class PlanPointerTask:
    """Critical-parent pointer classification for the one loop (jaxml.core.task).

    loss: cross-entropy of the pointer logits against `targets`, averaged over the target nodes (steps
    and END) of the batch. Training metrics: pointer_accuracy. evaluate: per plan, `loss`,
    `pointer_accuracy` (over its target nodes) and `plan_correct` (the exact-accuracy rule on the
    chain decoded from the argmax pointers, in whole minutes: `decode_minutes`).
    """

    model: nn.Module
    kind: str
    train_source: Source
    eval_sources: dict[str, Source]

    def logits(self, params, batch) -> jax.Array:
        """[B, N, N] pointer logits."""
        return self.model.apply({"params": params}, *(batch[k] for k in _INPUTS[self.kind]))

    def init(self, rng, batch):
        return self.model.init(rng, *(jnp.asarray(batch[k][:2]) for k in _INPUTS[self.kind]))["params"]

    @staticmethod
    def _per_node(logits, targets):
        valid = targets >= 0
        ce = optax.softmax_cross_entropy_with_integer_labels(logits, jnp.maximum(targets, 0))
        hit = (jnp.argmax(logits, -1) == targets) & valid
        return ce * valid, hit, valid

    def loss(self, params, batch, rng):
        ce, hit, valid = self._per_node(self.logits(params, batch), batch["targets"])
        count = jnp.maximum(jnp.sum(valid), 1)
        return jnp.sum(ce) / count, {"pointer_accuracy": jnp.sum(hit) / count}

    def evaluate(self, params, batch):
        logits = self.logits(params, batch)
        ce, hit, valid = self._per_node(logits, batch["targets"])
        count = jnp.maximum(jnp.sum(valid, -1), 1)
        lo, hi = decode_minutes(jnp.argmax(logits, -1), batch["dur_lo"], batch["dur_hi"], batch["n_steps"])
        correct = (hi == batch["gold_hi"]) & (lo >= batch["gold_lo"]) & (lo <= batch["gold_hi"])
        return {"loss": jnp.sum(ce, -1) / count, "pointer_accuracy": jnp.sum(hit, -1) / count,
                "plan_correct": correct.astype(jnp.float32)}

    def train_data(self) -> Source:
        return self.train_source

    def eval_data(self) -> dict[str, Source]:
        return self.eval_sources


def training_plans(num: int) -> list[Plan]:
    """The first `num` plans of `generator.split('train', text_source='synthetic')` (texts are not read; the
    split draws only as many plans as it needs)."""
    if not 0 < num <= generator.SPLIT_SIZES["train"]:
        raise ValueError(f"num={num}; accepted 1..{generator.SPLIT_SIZES['train']}")
    return generator.split("train", num, text_source="synthetic")


def fits_text(plans: Sequence[Plan], max_text_len: int, template_seed: int) -> np.ndarray:
    """bool [num_plans]: the plan's text (its phrasing from `template_index`) fits `max_text_len` tokens."""
    return np.array([text_length(p, template_index(p, template_seed)) <= max_text_len for p in plans], bool)


@functools.lru_cache(maxsize=4)
def _training_arrays(kind: str, num: int, max_text_len: int, template_seed: int) -> tuple[dict, int]:
    plans = training_plans(num)
    keep = fits_text(plans, max_text_len, template_seed)   # the same plans for both kinds
    kept = [p for p, k in zip(plans, keep) if k]
    return encode_plans(kept, kind, max_text_len=max_text_len, template_seed=template_seed), int((~keep).sum())


def make_model(config) -> nn.Module:
    m, kind = config.model, config.kind
    _check_kind(kind)
    if kind == "graph":
        return PlanGraphModel(m.width, m.depth, m.heads, attention=m.attention, mlp_ratio=m.mlp_ratio)
    return PlanTextModel(m.width, m.depth, m.heads, max_len=m.max_text_len, mlp_ratio=m.mlp_ratio)


@registry.task("asynchow/neural")
def make_task(config) -> PlanPointerTask:
    """The task of `config.kind` ('graph' or 'text'): `config.data.train_plans` training plans (those whose
    text fits `config.model.max_text_len`, for both kinds) and `config.data.eval_plans` validation plans."""
    d = config.data
    arrays, _ = _training_arrays(config.kind, d.train_plans, config.model.max_text_len, d.template_seed)
    evals = generator.split("validation", d.eval_plans, text_source=d.text_source)
    evals = [p for p, k in zip(evals, fits_text(evals, config.model.max_text_len, d.template_seed + 1)) if k]
    eval_arrays = encode_plans(evals, config.kind, max_text_len=config.model.max_text_len,
                               template_seed=d.template_seed + 1)
    return PlanPointerTask(model=make_model(config), kind=config.kind, train_source=pipeline.ArraySource(arrays),
                           eval_sources={"validation": pipeline.ArraySource(eval_arrays)})


# --- Configs, evaluation and the comparison -----------------------------------------------------------

def neural_config(scale: str = "quick", kind: str = "graph", **overrides: Any) -> ml_collections.ConfigDict:
    """The loop config of one model at scale 'tiny' (tests: 30 steps), 'quick' (200 steps on 4000 plans) or
    'full' (2500 steps on 20000 plans); `overrides` are top-level keys or 'model.width'-style dotted keys.

    Width 64, 4 heads, depth 4 (quick 3), batch 32, AdamW 2e-3 with cosine decay, for both models. Texts
    are padded to `model.max_text_len` = 128 tokens: the text model's attention is quadratic in it (on 2
    CPU cores a step at 320 tokens costs ~2.7 s, at 128 ~0.2 s); 128 holds 97% of the test plans' texts
    (every plan of complexity <= 20; 4 of 25 of the >= 26 bin); longer plans are left out of training
    and of the two models' comparison (`train_and_compare` also scores the graph model on all plans).

    Measured with `train_and_compare(neural_config(scale), workdir)` on 2 shared CPU cores, the 968 of the
    1000 test plans that fit 128 tokens, plan accuracy by complexity bin <=12 / 13-16 / 17-20 / 21-25:
      quick (63 s in all; loops 7 s graph, 32 s text): graph 0.871 (0.93 0.89 0.77 0.89),
                                                       text  0.352 (0.63 0.33 0.14 0.13);
      full (628 s in all; loops 85 s, 502 s):          graph 0.969 (1.00 0.96 0.95 0.94),
                                                       text  0.813 (0.95 0.85 0.68 0.56).
    Parameters (full): graph 148,176, text 156,032 (the text model's extra are its 128 positions).
    """
    _check_kind(kind)
    if scale not in ("tiny", "quick", "full"):
        raise ValueError(f"scale={scale!r}; accepted 'tiny', 'quick', 'full'")
    c = default_config()
    c.experiment = c.task = "asynchow/neural"
    c.kind = kind
    c.model = ml_collections.ConfigDict(dict(width=64, depth=4, heads=4, mlp_ratio=2, attention="mask",
                                             max_text_len=128))
    c.data = ml_collections.ConfigDict(dict(train_plans=20_000, eval_plans=256, test_plans=1000,
                                            text_source="wordnet", template_seed=0))
    c.optimizer = ml_collections.ConfigDict(dict(name="adamw", learning_rate=2e-3, weight_decay=1e-4,
                                                 grad_clip_norm=1.0))
    c.schedule = ml_collections.ConfigDict(dict(name="cosine", warmup_steps=100, end_factor=0.0))
    c.batch_size = 32
    c.eval_batch_size = 128
    if scale == "full":
        c.num_steps = 2500
        c.log_every_steps, c.eval_every_steps, c.checkpoint_every_steps = 250, 1000, 500
    elif scale == "quick":
        c.num_steps = 200
        c.data.train_plans = 4000
        c.log_every_steps, c.checkpoint_every_steps = 50, 200
        c.schedule.warmup_steps = 20
        c.model.depth = 3
    else:
        c.num_steps = 30
        c.eval_batch_size = 64
        c.data.update(train_plans=512, eval_plans=64, test_plans=64)
        c.log_every_steps, c.eval_every_steps, c.checkpoint_every_steps = 5, 0, 30
        c.schedule.warmup_steps = 5
        c.model.update(width=32, depth=2, heads=2)
    for key, value in overrides.items():
        target = c
        *path, last = key.split(".")
        for part in path:
            target = target[part]
        if last not in target:
            raise ValueError(f"neural_config: unknown key {key!r}")
        target[last] = value
    return c


def evaluate_models(models: Mapping[str, tuple[PlanPointerTask, Any]], plans: Sequence[Plan], *,
                    template_seed: int = 1, batch_size: int = 256) -> dict[str, dict[str, np.ndarray]]:
    """Per-plan scores of trained models on `plans` (decoded on the host with `decode_answer`).

    Args:
      models: {name: (PlanPointerTask, params)}.
      plans: the plans to score; each text-model plan must fit its model's max_text_len.
      template_seed: the seed of the text's phrasing per plan (`template_index`).
    Returns:
      {name: {"correct": bool [P] (`is_correct_chain`), "pointer_accuracy": float [P] (over the plan's
       steps and END), "pointer_hits": int [P] (right parents), "pointer_targets": int [P] (n + 1 nodes
       with a target), "pointers": int32 [P, N] argmax parents}}.
    """
    if not plans:
        raise ValueError("evaluate_models: no plans")
    out = {}
    for name, (task, params) in models.items():
        max_len = getattr(task.model, "max_len", 0)
        arrays = encode_plans(plans, task.kind, max_text_len=max_len, template_seed=template_seed)
        forward = jax.jit(lambda p, b, task=task: jnp.argmax(task.logits(p, b), -1))
        pointers = []
        for start in range(0, len(plans), batch_size):
            idx = np.arange(start, start + batch_size)
            idx = np.where(idx < len(plans), idx, 0)   # pad the last batch with plan 0: one compiled shape
            batch = {k: arrays[k][idx] for k in _INPUTS[task.kind]}
            pointers.append(np.asarray(forward(params, batch)))
        pointers = np.concatenate(pointers)[:len(plans)].astype(np.int32)
        targets = arrays["targets"]
        valid = targets >= 0
        out[name] = {
            "correct": np.array([is_correct_chain(decode_answer(p, ptr), critical_path(p))
                                 for p, ptr in zip(plans, pointers)]),
            "pointer_accuracy": ((pointers == targets) & valid).sum(-1) / valid.sum(-1),
            "pointer_hits": ((pointers == targets) & valid).sum(-1),
            "pointer_targets": valid.sum(-1),
            "pointers": pointers,
        }
    return out


def train_and_compare(config: ml_collections.ConfigDict, workdir: str | pathlib.Path) -> dict[str, Any]:
    """Trains the graph and the text model with the one loop (`<workdir>/graph`, `<workdir>/text`, each
    resumable from its checkpoints) under the same `config` (its `kind` is overridden) and scores both on
    the plans of `split('test', config.data.test_plans)` whose text fits `config.model.max_text_len`
    (the same plans for both; the graph model is also scored on every test plan, as 'graph_all').

    Returns:
      {"per_plan": {model: {"correct": bool [P], "pointer_accuracy": float [P], "pointers": [P, N]}},
       "by_bin": {model: {complexity bin: (accuracy, count)}}, "by_type": {model: {plan type: (acc, count)}},
       "accuracy": {model: plan accuracy}, "pointer_accuracy": {model: right parents / target nodes},
       "node_accuracy_by_bin": {model: {bin: (right parents / target nodes, target nodes)}},
       "params": {model: int},
       "train_time_s", "wall_s": {model: float} (the loop's training time; make_task + loop + final eval),
       "excluded_test_plans": {bin: count of test plans whose text is too long},
       "dropped_train_plans": int (training plans whose text is too long, left out for both models),
       "bins", "types", "ve_counts": [P] the complexity bin, plan type and |V| + |E| of each scored test plan}.
    """
    workdir = pathlib.Path(workdir)
    test_all = generator.split("test", config.data.test_plans, text_source=config.data.text_source)
    fits = fits_text(test_all, config.model.max_text_len, config.data.template_seed + 1)
    test = [p for p, f in zip(test_all, fits) if f]
    models, result = {}, {"params": {}, "train_time_s": {}, "wall_s": {}}
    for kind in KINDS:
        c = ml_collections.ConfigDict(config.to_dict())
        c.kind = kind
        t0 = time.perf_counter()
        task = make_task(c)
        outcome = train_and_evaluate(c, workdir / kind, task=task)
        params = jax.device_get(outcome.state.params)
        models[kind] = (task, params)
        result["params"][kind] = num_params(params)
        result["train_time_s"][kind] = outcome.metrics["train_time_s"]
        result["wall_s"][kind] = time.perf_counter() - t0
    _, dropped = _training_arrays("graph", config.data.train_plans, config.model.max_text_len,
                                  config.data.template_seed)
    seed = config.data.template_seed + 1
    per_plan = evaluate_models(models, test, template_seed=seed)
    per_plan["graph_all"] = evaluate_models({"graph": models["graph"]}, test_all, template_seed=seed)["graph"]
    scored = {"graph": test, "text": test, "graph_all": test_all}
    bins = {k: [generator.complexity_bin(p.ve_count) for p in v] for k, v in scored.items()}
    types = {k: [p.plan_type for p in v] for k, v in scored.items()}
    excluded = [generator.complexity_bin(p.ve_count) for p, f in zip(test_all, fits) if not f]
    result.update(
        per_plan=per_plan, bins=bins["graph"], types=types["graph"], ve_counts=[p.ve_count for p in test],
        dropped_train_plans=dropped,
        excluded_test_plans={b: excluded.count(b) for b in generator.COMPLEXITY_BINS if b in excluded},
        by_bin={k: accuracy_by(bins[k], v["correct"], generator.COMPLEXITY_BINS) for k, v in per_plan.items()},
        by_type={k: accuracy_by(types[k], v["correct"], PLAN_TYPES) for k, v in per_plan.items()},
        accuracy={k: float(np.mean(v["correct"])) for k, v in per_plan.items()},
        pointer_accuracy={k: float(v["pointer_hits"].sum() / v["pointer_targets"].sum()) for k, v in per_plan.items()},
        node_accuracy_by_bin={k: _node_accuracy_by(bins[k], v, generator.COMPLEXITY_BINS) for k, v in per_plan.items()},
    )
    return result
