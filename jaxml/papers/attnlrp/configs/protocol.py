"""The faithfulness protocol study on SmolLM2-135M (experiment `attnlrp/protocol`).

Runbook:
    python scripts/run.py --config=jaxml/papers/attnlrp/configs/protocol.py --workdir=/tmp/attnlrp_protocol
Each setting (BOS mode x replacement value) runs `attnlrp/faithfulness_llm` on the same prefixes
and methods; the table gives, per corpus and overall, the area between the MoRF and LeRF curves,
each area separately, and AttnLRP minus each method with a paired 95% bootstrap interval.
Numbers and times: jaxml/papers/attnlrp/README.md.
"""

from jaxml.core.config import by_scale, experiment_config

METHODS = ("attnlrp", "cp_lrp", "gradient_x_input", "integrated_gradients", "smoothgrad", "attention_rollout",
           "atman", "kernel_shap", "random")


def get_config(arg=None):
    c, scale = experiment_config("attnlrp/protocol", arg)
    c.faithfulness_arg = by_scale(scale, tiny="tiny", quick="quick", full="")
    c.bos_modes = by_scale(scale, tiny=(True,), quick=(True, False), full=(True, False))   # BOS first: the paper's protocol
    c.replacements = by_scale(scale, tiny=("mean",), quick=("zero", "mean"), full=("zero", "mean"))
    c.num_examples = by_scale(scale, tiny=4, quick=16, full=1000)
    c.methods = by_scale(scale, tiny=("attnlrp", "atman", "kernel_shap", "random"),
                         quick=("attnlrp", "gradient_x_input", "integrated_gradients", "atman", "random"), full=METHODS)
    # Overrides of the faithfulness config (0: keep its value, as the full scale does)
    for key in ("length", "steps", "batch_size", "ig_steps", "smoothgrad_samples", "shap_budget"):
        c[key] = 0
    return c
