"""The paper's claims as `Claim`s with verdicts computed from measured metrics (pure functions).

* faithfulness (Table 1): AttnLRP's area between the MoRF and LeRF curves is larger than that of
  the gradient baselines (Gradient x Input, Integrated Gradients) and of random relevance. It
  holds when every paired difference (AttnLRP minus baseline, same examples) exceeds two standard
  errors.
* cost (abstract: "computational efficiency similar to a single backward pass"): AttnLRP costs
  about one forward+backward pass (at most 1.5x the time of a plain one) and far less than IG (IG
  with `steps` path points takes at least steps / 2 times AttnLRP's time).
* conservation: reported with our numbers; the paper's Table A3 numbers were not available to us.
"""

from __future__ import annotations

from jaxml.core.experiment import Claim, verdict
from jaxml.papers.attnlrp.faithfulness import clearly_positive

NAMES = {"attnlrp": "AttnLRP", "attnlrp_gamma": "AttnLRP+gamma", "cp_lrp": "CP-LRP", "cp_lrp_gamma": "CP-LRP+gamma",
         "gradient_x_input": "Gradient x Input", "integrated_gradients": "Integrated Gradients",
         "smoothgrad": "SmoothGrad x Input", "attention_rollout": "attention rollout", "atman": "AtMan",
         "kernel_shap": "KernelSHAP", "random": "random"}
HEADLINE_BASELINES = ("gradient_x_input", "integrated_gradients", "random")
SE_MULTIPLE = 2.0
ABOUT_ONE_PASS = 1.5   # AttnLRP / plain forward+backward at most this for "about one pass"


def faithfulness_verdict(metrics: dict[str, float], reference: str = "attnlrp",
                         baselines=HEADLINE_BASELINES, comparable: bool = True) -> bool | None:
    """True if `reference` beats every baseline by more than SE_MULTIPLE paired standard errors, False
    if it does not beat one of them, None (not comparable) when `comparable` is False, a baseline
    was not run, or a standard error is undefined."""
    if not comparable or any(f"{reference}_minus_{m}" not in metrics for m in baselines):
        return None
    each = [clearly_positive(metrics[f"{reference}_minus_{m}"], metrics[f"{reference}_minus_{m}_se"], SE_MULTIPLE)
            for m in baselines]
    return None if any(v is None for v in each) else all(each)


def _pm(metrics, key, signed=False) -> str:
    return f"{metrics[key]:{'+' if signed else ''}.2f} +- {metrics[key + '_se']:.2f}"


def faithfulness_claim(metrics: dict[str, float], setting: str, reference: str = "attnlrp",
                       baselines=HEADLINE_BASELINES, comparable: bool = True, ig_steps: int | None = None,
                       paper: str = "") -> Claim:
    """The Table 1 claim for one model: `setting` names the model, data and number of examples."""
    names = dict(NAMES, integrated_gradients=f"IG-{ig_steps}" if ig_steps else "IG")
    ran = [m for m in baselines if f"abc_{m}" in metrics]
    ours = (f"{setting}: area between curves {names[reference]} {_pm(metrics, 'abc_' + reference)}; "
            + ", ".join(f"{names[m]} {_pm(metrics, 'abc_' + m)}" for m in ran)
            + f". Paired {names[reference]} minus: "
            + ", ".join(f"{names[m]} {_pm(metrics, f'{reference}_minus_{m}', signed=True)}" for m in ran)
            + f" (mean +- 1 SE; holds if each exceeds {SE_MULTIPLE:g} SE)")
    text = (f"{names[reference]} is more faithful than the gradient baselines (Gradient x Input, Integrated "
            "Gradients) and random relevance: a larger area between the MoRF and LeRF perturbation curves "
            "(Table 1)")
    return Claim(text=text, ours=ours, paper=paper,
                 verdict=verdict(faithfulness_verdict(metrics, reference, baselines, comparable)))


def cost_ratios(seconds_forward_backward: float, seconds_attnlrp: float, seconds_ig: float) -> dict[str, float]:
    """AttnLRP's time over a plain forward+backward pass, and IG's time over AttnLRP's."""
    if min(seconds_forward_backward, seconds_attnlrp, seconds_ig) <= 0:
        raise ValueError("cost_ratios: times must be positive, got "
                         f"{(seconds_forward_backward, seconds_attnlrp, seconds_ig)}")
    return {"attnlrp_over_forward_backward": seconds_attnlrp / seconds_forward_backward,
            "ig_over_attnlrp": seconds_ig / seconds_attnlrp}


def cost_verdict(attnlrp_over_forward_backward: float, ig_over_attnlrp: float, ig_steps: int,
                 comparable: bool = True) -> bool | None:
    """About one pass (<= ABOUT_ONE_PASS) and far cheaper than IG (IG >= ig_steps / 2 times AttnLRP)."""
    if not comparable:
        return None
    return attnlrp_over_forward_backward <= ABOUT_ONE_PASS and ig_over_attnlrp >= ig_steps / 2


def cost_claim(metrics: dict[str, float], setting: str, ig_steps: int, comparable: bool = True) -> Claim:
    r_fb, r_ig = metrics["attnlrp_over_forward_backward"], metrics["ig_over_attnlrp"]
    return Claim(
        text=("AttnLRP costs about one forward and backward pass, far less than perturbation or path methods "
              f"such as Integrated Gradients (abstract; here: at most {ABOUT_ONE_PASS:g}x a plain "
              f"forward+backward, and IG-{ig_steps} at least {ig_steps / 2:g}x AttnLRP)"),
        ours=(f"{setting}: AttnLRP {r_fb:.2f}x a plain forward+backward pass "
              f"({1e3 * metrics['seconds_attnlrp']:.0f} ms vs {1e3 * metrics['seconds_forward_backward']:.0f} ms); "
              f"IG-{ig_steps} {r_ig:.1f}x AttnLRP ({metrics['seconds_ig']:.2f} s)"),
        verdict=verdict(cost_verdict(r_fb, r_ig, ig_steps, comparable)))


def conservation_claim(metrics: dict[str, float], setting: str) -> Claim:
    """Reported, not judged: the paper's conservation numbers (appendix) were not available to us."""
    return Claim(
        text=("Relevance is approximately conserved from the explained logit to the input (the softmax rule "
              "is not exactly conservative; the paper's appendix Table A3)"),
        ours=(f"{setting}: sum of input relevance / logit, median {metrics['conservation_median']:.2f} "
              f"(mean {metrics['conservation_mean']:.2f}, range {metrics['conservation_min']:.2f} to "
              f"{metrics['conservation_max']:.2f})"),
        verdict=verdict(None))
