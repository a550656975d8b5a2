"""Implicit gradient of pcDEQ layers vs unrolled backprop and finite differences
(experiment `pcdeq/gradcheck`).

Runbook:
    python scripts/run.py --config=jaxml/papers/pcdeq/configs/gradcheck.py --workdir=/tmp/pcdeq_grad
Seconds on CPU; numbers in jaxml/papers/pcdeq/README.md. Full: dense and 3x3 conv layers with all
four activations; quick: the dense layer with all four and the conv layer with tanh (each case is
its own compiled program, and the conv ones cost most); tiny: the dense tanh layer (the conv one is
a unit test).
"""

from jaxml.core.config import by_scale, experiment_config

ACTIVATIONS = ("tanh", "softsign", "relu6", "sigmoid")


def get_config(arg=None):
    c, scale = experiment_config("pcdeq/gradcheck", arg)
    dense = tuple(f"dense_{a}" for a in ACTIVATIONS)
    conv = tuple(f"conv_{a}" for a in ACTIVATIONS)
    c.cases = by_scale(scale, tiny=("dense_tanh",), quick=dense + ("conv_tanh",), full=dense + conv)
    return c
