"""AttnLRP on SmolLM2-135M against LXT's efficient mode (PyPI `lxt`, torch) on the same weights (torch_ref).

Both explain the same logit (SmolLM2's greedy next token at the last position) in float32;
jaxml's `relevance(..., rules="attnlrp")` and `lxt.efficient` (monkey-patched transformers
`modeling_llama`, input embeddings x gradient) must give the same per-token relevance.

lxt 2.1 (the current PyPI release, tested upstream with transformers 4.52) needs two shims on
transformers 5, both confined to this module:
  * `import lxt.efficient` fails: its package `__init__` imports every model patch, including a
    copied BERT that imports `transformers.modeling_attn_mask_utils` (removed in transformers 5)
    and a torchvision ViT. We load only `lxt.efficient.models.llama` (and `patches`, `rules`)
    under stand-in parent packages and apply its `attnLRP` patch map exactly as
    `lxt.efficient.monkey_patch(modeling_llama)` would.
  * lxt replaces `modeling_llama.ALL_ATTENTION_FUNCTIONS` by a plain dict of wrapped attention
    functions; transformers 5 calls `ALL_ATTENTION_FUNCTIONS.get_interface(...)`, so we put the
    same wrapped functions into a fresh `AttentionInterface` (instance-local entries only; the
    library-wide registry is untouched).

The patch is global while it lasts (lxt patches classes and module globals: `LlamaMLP.forward`,
`LlamaRMSNorm.forward`, `torch.nn.Dropout.forward` -> identity for *every* Dropout in the process,
`modeling_llama.eager_attention_forward` and `modeling_llama.ALL_ATTENTION_FUNCTIONS`); the
module-scoped fixture restores all of them, and the stand-in packages, on teardown.
"""

import importlib
import pathlib
import sys
import types

import numpy as np
import pytest

pytestmark = pytest.mark.torch_ref

PROMPTS = [
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in "
    "want of a",
    "Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy disposition, seemed to "
    "unite some of the best blessings of",
    "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer the slings and "
    "arrows of",
    "Shall I compare thee to a summer's day? Thou art more lovely and more",
    "All the world's a stage, and all the men and women merely",
    "Elizabeth Bennet walked into the garden, where her sister Jane was reading a letter from",
]

_MISSING = object()


def _lxt_llama_module():
    """`lxt.efficient.models.llama` (its `attnLRP` patch map), importable on transformers 5 too."""
    pytest.importorskip("lxt")
    try:
        return importlib.import_module("lxt.efficient.models.llama"), []
    except ImportError:   # lxt 2.1 on transformers >= 5: the package __init__ imports a BERT copy that fails
        pass
    import lxt
    root = pathlib.Path(lxt.__file__).parent / "efficient"
    stand_ins = []
    for name, path in (("lxt.efficient", root), ("lxt.efficient.models", root / "models")):
        pkg = types.ModuleType(name)
        pkg.__path__ = [str(path)]
        sys.modules[name] = pkg
        stand_ins.append(name)
    return importlib.import_module("lxt.efficient.models.llama"), stand_ins


def _cos(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def patched():
    """(jaxml model, params, tokenizer, lxt-patched transformers model); the patch lives only in this module."""
    import torch
    from transformers.modeling_utils import AttentionInterface
    from transformers.models.llama import modeling_llama

    from jaxml.models import llama

    lxt_llama, stand_ins = _lxt_llama_module()
    patch_map = lxt_llama.attnLRP
    saved = [(modeling_llama.LlamaMLP, "forward"), (modeling_llama.LlamaRMSNorm, "forward"),
             (torch.nn.Dropout, "forward"), (modeling_llama, "eager_attention_forward"),
             (modeling_llama, "ALL_ATTENTION_FUNCTIONS")]
    assert set(patch_map) <= {obj for obj, _ in saved}, f"lxt patches more than this test restores: {patch_map}"
    saved = [(obj, name, vars(obj).get(name, _MISSING)) for obj, name in saved]
    try:
        for target, patch in patch_map.items():   # = lxt.efficient.monkey_patch(modeling_llama)
            assert patch(target), f"lxt could not patch {target}"
        if not hasattr(modeling_llama.ALL_ATTENTION_FUNCTIONS, "get_interface"):
            interface = AttentionInterface()
            for key, fn in modeling_llama.ALL_ATTENTION_FUNCTIONS.items():
                interface[key] = fn   # instance-local: the global registry is not changed
            modeling_llama.ALL_ATTENTION_FUNCTIONS = interface
        model, params, tok = llama.load_smollm2()
        hf = llama.to_transformers(model.config, params)   # built after patching
        hf.set_attn_implementation("eager")
        hf.requires_grad_(False)   # only the input embeddings need gradients
        assert hf.config._attn_implementation == "eager"
        assert next(hf.parameters()).dtype == torch.float32
        yield model, params, tok, hf
    finally:
        for obj, name, value in saved:
            if value is _MISSING:
                if name in vars(obj):
                    delattr(obj, name)
            else:
                setattr(obj, name, value)
        for name in stand_ins:
            sys.modules.pop(name, None)
    assert modeling_llama.LlamaRMSNorm.forward is saved[1][2] and torch.nn.Dropout.forward is saved[2][2]


def _explain_both(patched, prompt, attn_implementation="eager"):
    """(jaxml relevance [len], lxt relevance [len], jaxml Gradient x Input [len], target, logits) for one prompt."""
    import jax.numpy as jnp
    import torch

    from jaxml.papers.attnlrp import explain

    model, params, tok, hf = patched
    ids = tok.encode(prompt)
    n = len(ids)
    assert 10 <= n <= 30, (n, prompt)
    tokens, positions = jnp.asarray([ids], jnp.int32), jnp.arange(n, dtype=jnp.int32)[None]
    target = int(jnp.argmax(model.apply({"params": params}, tokens, positions)[0][0, -1]))
    ours = explain.relevance(model, params, (tokens, positions), target=[target], position=[n - 1],
                             rules="attnlrp")
    grad_x_input = explain.relevance(model, params, (tokens, positions), target=[target], position=[n - 1],
                                     rules="gradient").per_token("embeddings")[0]

    hf.set_attn_implementation(attn_implementation)
    try:
        embeds = hf.get_input_embeddings()(torch.tensor([ids])).detach().requires_grad_(True)
        assert embeds.dtype == torch.float32
        logits = hf(inputs_embeds=embeds, use_cache=False).logits
        assert int(logits[0, -1].argmax()) == target, "transformers' greedy token differs from jaxml's"
        logit = logits[0, -1, target]
        logit.backward()
        theirs = (embeds * embeds.grad).sum(-1)[0].detach().numpy()
    finally:
        hf.set_attn_implementation("eager")
    return (ours.per_token("embeddings")[0], theirs, grad_x_input, target,
            (float(ours.target[0]), float(logit.detach())))


# The recorded run (README, lxt 2.1, transformers 5.24, torch CPU float32): cosine 1.0000000 and max
# |difference| 3e-7 to 6e-6 per prompt. Asserted with some room for other BLAS builds; Gradient x
# Input (the wrong rules) is off by cosines of -0.64 to 0.67, i.e. errors of order 1.
MAX_ABS_DIFF = 2e-5
MAX_ONE_MINUS_COS = 1e-6


def _check(ours, theirs):
    diff, cos = np.abs(ours - theirs).max(), _cos(ours, theirs)
    assert diff <= MAX_ABS_DIFF and 1 - cos <= MAX_ONE_MINUS_COS, (diff, cos)


@pytest.mark.parametrize("index", range(len(PROMPTS)))
def test_attnlrp_matches_lxt_efficient(patched, index):
    ours, theirs, grad_x_input, target, (our_logit, their_logit) = _explain_both(patched, PROMPTS[index])
    cos = _cos(ours, theirs)
    cos_gxi = _cos(grad_x_input, theirs)
    tok = patched[2]
    print(f"\n[{index}] len {len(ours)} target {tok.decode([target])!r} logit jaxml {our_logit:.5f} "
          f"torch {their_logit:.5f}; cos(jaxml AttnLRP, lxt) = {cos:.7f}, max|diff| "
          f"{np.abs(ours - theirs).max():.2e} (sum {ours.sum():.4f} vs {theirs.sum():.4f}); "
          f"cos(Gradient x Input, lxt) = {cos_gxi:.4f}")
    assert abs(our_logit - their_logit) < 1e-3
    _check(ours, theirs)
    # The patched model really applies the rules: plain Gradient x Input is further from lxt.
    assert np.abs(grad_x_input - theirs).max() > 10 * np.abs(ours - theirs).max()


def test_attnlrp_matches_lxt_efficient_sdpa(patched):
    """lxt wraps every attention implementation; with SDPA the relevance is the same."""
    ours, theirs, *_ = _explain_both(patched, PROMPTS[0], attn_implementation="sdpa")
    print(f"\nsdpa: cos(jaxml AttnLRP, lxt) = {_cos(ours, theirs):.7f}, max|diff| {np.abs(ours - theirs).max():.2e}")
    _check(ours, theirs)
