"""Relevance of a prediction at named points of a Flax model: one forward and one backward pass.

    expl = relevance(model, params, (tokens, positions), target=next_token, position=last,
                     rules="attnlrp", points=("embeddings", "residual_10"))
    expl.per_token("embeddings")      # [batch, len]: input relevance per token

The model is switched into the rules' mode with `model.clone(ops=...)` (no source patching).
Points are the model's explanation points: values it sows into `intermediates` and gradients it
exposes with `perturb` (Llama: `embeddings`, `residual_<i>`; BERT: `embeddings/word_embeddings`;
ViT: `pixels`, `patches`). Relevance at a point is value x gradient of the target logit; with
AttnLRP's rules this is the paper's relevance.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxml.nn.ops import Ops
from jaxml.papers.attnlrp.rules import resolve_rules


def default_logits(outputs) -> jax.Array:
    """The logits of a model output: the output itself, or the first element of a tuple."""
    return outputs[0] if isinstance(outputs, (tuple, list)) else outputs


@dataclasses.dataclass(frozen=True)
class Explanation:
    """Attributes:
      target: float32 [batch], the explained logit per example.
      relevance: {point: float32 [batch, ...]} value x gradient at each requested point.
      values: {point: the point's activations}.
    """

    target: np.ndarray
    relevance: dict[str, np.ndarray]
    values: dict[str, np.ndarray]

    def per_token(self, point: str) -> np.ndarray:
        """Relevance summed over the feature axis: [batch, len] (tokens, patches or pixels)."""
        return self.relevance[point].sum(-1)

    def conservation(self, point: str) -> np.ndarray:
        """sum of the relevance at `point` / target logit, per example [batch]."""
        return self.relevance[point].reshape(len(self.target), -1).sum(-1) / self.target


def _flatten(tree: Any) -> dict[str, Any]:
    out = {}
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        keys = [str(getattr(k, "key", getattr(k, "idx", k))) for k in path]
        if keys and keys[-1] == "0":   # sow stores a tuple of values
            keys = keys[:-1]
        out["/".join(keys)] = leaf
    return out


def _select_target(logits: jax.Array, target: jax.Array, position: jax.Array | None) -> jax.Array:
    """logits [batch, len, classes] at (position, target) or [batch, classes] at target -> [batch]."""
    if logits.ndim == 3:
        if position is None:
            raise ValueError("the model returns per-position logits [batch, len, classes]: pass position=")
        logits = jnp.take_along_axis(logits, position[:, None, None], axis=1)[:, 0]
    elif logits.ndim != 2:
        raise ValueError(f"logits must be [batch, classes] or [batch, len, classes], got {logits.shape}")
    return jnp.take_along_axis(logits, target[:, None], axis=1)[:, 0].astype(jnp.float32)


@functools.lru_cache(maxsize=64)
def _program(model, points: tuple[str, ...], logits_fn: Callable, kwarg_names: tuple[str, ...]):
    """The jitted `(params, args, kwargs, target, position, spec, shift) -> (target, values, grads)`.

    `spec` (static) is the `perturbation_spec` of the inputs: the program makes the all-zero
    perturbation collection from it without tracing the model a second time. `shift` {point:
    array} is added at each requested point (zero for plain relevance; IG and SmoothGrad move the
    input with it), always at the same points: one compiled program per shape.
    """

    def target_fn(perturbations, params, args, kwargs, target, position):
        out, state = model.apply({"params": params, "perturbations": perturbations}, *args,
                                 mutable=["intermediates"], **kwargs)
        t = _select_target(logits_fn(out), target, position)
        return t.sum(), (t, state["intermediates"])

    def run(params, args, kwargs, target, position, spec, shift):
        perturbations = _add_shift(spec_zeros(spec), shift)
        (_, (t, inter)), grads = jax.value_and_grad(target_fn, has_aux=True)(
            perturbations, params, args, kwargs, target, position)
        values, grads = _flatten(inter), _flatten(grads)
        # The sown value excludes the shift only if the model sows before perturbing; ours sow the
        # perturbed value, which is the input actually seen.
        return t, {p: values[p] for p in points}, {p: grads[p] for p in points}

    return jax.jit(run, static_argnums=5)


def _add_shift(zeros, shift: dict[str, jax.Array] | None):
    if not shift:
        return zeros
    flat = _flatten(zeros)
    unknown = [k for k in shift if k not in flat]
    if unknown:
        raise ValueError(f"shift at unknown point(s) {unknown}; points: {list(flat)}")

    def one(path, leaf):
        name = "/".join(str(getattr(k, "key", getattr(k, "idx", k))) for k in path)
        name = name[:-2] if name.endswith("/0") else name
        return leaf + shift[name] if name in shift else leaf

    return jax.tree_util.tree_map_with_path(one, zeros)


def _shapes(tree) -> tuple:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, tuple((tuple(np.shape(x)), str(getattr(x, "dtype", type(x)))) for x in leaves)


_SPECS: dict[tuple, tuple] = {}


def perturbation_spec(model, params, args: Sequence[Any], kwargs: dict | None = None) -> tuple:
    """The shapes of the model's `perturbations` collection for inputs of these shapes, as a hashable
    `(treedef, ((shape, dtype), ...))` that jitted programs take as a static argument (`spec_zeros`).

    Traced once per model (whatever its ops) and input shapes.
    """
    kwargs = dict(kwargs or {})
    if hasattr(model, "ops"):
        model = model.clone(ops=Ops())   # the shapes do not depend on the rules
    key = (model, _shapes(tuple(args)), _shapes(kwargs))
    if key not in _SPECS:
        shapes = jax.eval_shape(lambda: model.apply({"params": params}, *args, mutable=["perturbations"],
                                                    **kwargs)[1]["perturbations"])
        leaves, treedef = jax.tree_util.tree_flatten(shapes)
        _SPECS[key] = (treedef, tuple((tuple(x.shape), np.dtype(x.dtype)) for x in leaves))
    return _SPECS[key]


def spec_zeros(spec: tuple):
    """The all-zero perturbation collection of a `perturbation_spec` (inside a program: no transfer)."""
    treedef, leaves = spec
    return jax.tree_util.tree_unflatten(treedef, [jnp.zeros(shape, dtype) for shape, dtype in leaves])


def point_shift(spec: tuple, points: Sequence[str], shift: dict[str, jax.Array] | None = None) -> dict[str, jax.Array]:
    """{point: shift or zeros} for each requested point (a fixed structure: one compiled program)."""
    flat = _flatten(jax.tree_util.tree_unflatten(spec[0], [jax.ShapeDtypeStruct(*leaf) for leaf in spec[1]]))
    missing = [p for p in points if p not in flat]
    if missing:
        raise ValueError(f"unknown explanation point(s) {missing}; this model has {list(flat)}")
    shift = dict(shift or {})
    unknown = [k for k in shift if k not in flat]
    if unknown:
        raise ValueError(f"shift at unknown point(s) {unknown}; points: {list(flat)}")
    return {p: shift.pop(p) if p in shift else np.zeros(flat[p].shape, flat[p].dtype) for p in points} | shift


def gradients(model, params, args: Sequence[Any], *, target, position=None, rules: str | Ops = "attnlrp",
              points: Sequence[str] = ("embeddings",), shift: dict[str, jax.Array] | None = None,
              logits_fn: Callable = default_logits, model_kwargs: dict | None = None, **rule_kwargs):
    """`(target [batch], values {point}, gradients {point})` of the target logit under `rules`.

    `shift` {point: array} is added at those points (IG and SmoothGrad move the input with it); a
    call with a shift at the requested points runs the program compiled for plain relevance.
    """
    ops = resolve_rules(rules, **rule_kwargs)
    kwargs = dict(model_kwargs or {})
    run = _program(model.clone(ops=ops), tuple(points), logits_fn, tuple(sorted(kwargs)))
    target = jnp.asarray(target, jnp.int32)
    position = None if position is None else jnp.asarray(position, jnp.int32)
    if target.ndim != 1:
        raise ValueError(f"target must be [batch] class/token ids, got shape {target.shape}")
    if position is not None and position.shape != target.shape:
        raise ValueError(f"position {position.shape} must match target {target.shape}")
    spec = perturbation_spec(model, params, tuple(args), kwargs)
    return run(params, tuple(args), kwargs, target, position, spec, point_shift(spec, points, shift))


def relevance(model, params, args: Sequence[Any], *, target, position=None, rules: str | Ops = "attnlrp",
              points: Sequence[str] = ("embeddings",), logits_fn: Callable = default_logits,
              model_kwargs: dict | None = None, **rule_kwargs) -> Explanation:
    """Relevance (value x modified gradient) of the target logit at each point.

    Args:
      model: a Flax module with an `ops` attribute and explanation points (Llama, Bert, ViT).
      params: its params.
      args: positional inputs of `model.apply` (e.g. `(tokens, positions)`).
      target: int [batch] class or token id to explain.
      position: int [batch] sequence position of the logit (models with per-position logits).
      rules: 'attnlrp', 'cp_lrp', 'gradient' (Gradient x Input) or an `Ops`.
      points: explanation points to return (input relevance and/or latent relevance).
      logits_fn: maps the model output to logits (default: the output or its first element).
      model_kwargs: keyword inputs of `model.apply` (e.g. `key_valid=`).
      **rule_kwargs: options of the rules (e.g. `gamma=0.25` for ViT linear layers).
    Returns:
      An Explanation (numpy arrays).
    """
    t, values, grads = gradients(model, params, args, target=target, position=position, rules=rules,
                                 points=points, logits_fn=logits_fn, model_kwargs=model_kwargs, **rule_kwargs)
    t, values, grads = jax.device_get((t, values, grads))
    rel = {p: (np.asarray(values[p], np.float32) * np.asarray(grads[p], np.float32)) for p in points}
    return Explanation(target=np.asarray(t), relevance=rel, values={p: np.asarray(v) for p, v in values.items()})


@functools.lru_cache(maxsize=16)
def _generation_program(model, point: str, chunk: int):
    """jitted `(params, tokens [1, L], positions, spec, positions_t [G], targets [G]) -> (logits_t [G],
    value [L, D], grads [G, L, D])`: one forward pass with its VJP, backward passes vmapped over
    chunks of `chunk` targets (the last chunk padded)."""

    def run(params, tokens, positions, spec, pos_t, tgt):
        def forward(perturbations):
            out, state = model.apply({"params": params, "perturbations": perturbations}, tokens, positions,
                                     mutable=["intermediates"])
            return default_logits(out)[0], _flatten(state["intermediates"])[point][0]

        zeros = spec_zeros(spec)
        logits, vjp_fn, value = jax.vjp(forward, zeros, has_aux=True)
        selected = logits[pos_t, tgt]

        def one(p, t):
            cot = jnp.zeros_like(logits).at[p, t].set(1.0)
            return _flatten(vjp_fn(cot)[0])[point][0]

        g = pos_t.shape[0]
        pad = (-g) % chunk
        p_all = jnp.concatenate([pos_t, jnp.zeros((pad,), pos_t.dtype)]).reshape(-1, chunk)
        t_all = jnp.concatenate([tgt, jnp.zeros((pad,), tgt.dtype)]).reshape(-1, chunk)
        grads = jax.lax.map(lambda pt: jax.vmap(one)(pt[0], pt[1]), (p_all, t_all))
        return selected, value, grads.reshape(-1, *grads.shape[2:])[:g]

    return jax.jit(run, static_argnums=3)


@dataclasses.dataclass(frozen=True)
class GenerationExplanation:
    """Attributes:
      tokens: int [P + G], the prompt then the generated tokens.
      prompt_length: P.
      target: float32 [G], the logit of each generated token at the step that produced it.
      relevance: float32 [G, P + G], relevance of every token (summed over features) for generated token
        k; the columns at and after position P + k are 0 (causal model: token k is predicted at P + k - 1).
    """

    tokens: np.ndarray
    prompt_length: int
    target: np.ndarray
    relevance: np.ndarray


def explain_generation(model, params, prompt_ids, generated_ids, *, rules: str | Ops = "attnlrp",
                       point: str = "embeddings", chunk: int = 8, **rule_kwargs) -> GenerationExplanation:
    """Relevance of every prompt and earlier generated token for every generated token.

    One forward pass over prompt + generated tokens and its VJP; the backward passes for the G
    generated tokens run vmapped in chunks of `chunk` (memory ~ chunk x one backward pass), so the
    cost is one forward plus G backward passes, against G forwards and G backwards for G separate
    `relevance` calls.

    Args:
      model: a causal decoder with explanation points (the shared Llama).
      prompt_ids: int [P] (P >= 1); generated_ids: int [G] (G >= 1), the continuation to explain.
      rules: 'attnlrp', 'cp_lrp', 'gradient' or an Ops; point: the explanation point (input relevance
        at 'embeddings').
    """
    prompt = np.asarray(prompt_ids, np.int64).reshape(-1)
    gen = np.asarray(generated_ids, np.int64).reshape(-1)
    if prompt.size < 1 or gen.size < 1:
        raise ValueError(f"explain_generation needs a prompt and at least one generated token, got {prompt.size} "
                         f"and {gen.size}")
    if chunk < 1:
        raise ValueError(f"chunk={chunk}: must be >= 1")
    tokens = np.concatenate([prompt, gen])
    n, p = tokens.size, prompt.size
    ids = jnp.asarray(tokens[None], jnp.int32)
    positions = jnp.arange(n, dtype=jnp.int32)[None]
    ruled = model.clone(ops=resolve_rules(rules, **rule_kwargs))
    spec = perturbation_spec(model, params, (ids, positions))
    pos_t = jnp.asarray(np.arange(p - 1, n - 1), jnp.int32)
    run = _generation_program(ruled, point, int(min(chunk, gen.size)))
    target, value, grads = jax.device_get(run(params, ids, positions, spec, pos_t, jnp.asarray(gen, jnp.int32)))
    rel = (np.asarray(value, np.float32)[None] * np.asarray(grads, np.float32)).sum(-1)
    return GenerationExplanation(tokens=tokens, prompt_length=p, target=np.asarray(target), relevance=rel)
