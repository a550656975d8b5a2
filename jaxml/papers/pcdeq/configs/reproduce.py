"""pcDEQ on Fashion-MNIST: pcDEQ variants and the two baselines, plus the gradient check
(experiment `pcdeq/reproduce`).

Runbook:
    python scripts/reproduce.py --papers=pcdeq --scale=quick     # minutes
    python scripts/run.py --config=jaxml/papers/pcdeq/configs/reproduce.py --workdir=/tmp/pcdeq_full
The full table (linear: 40 epochs each; multi-conv: 10 epochs each) and its wall times are in
jaxml/papers/pcdeq/README.md.
"""

import ml_collections

from jaxml.core.config import parse_arg, scale_of

LINEAR = ("model=linear,variant=pcdeq1,act=tanh", "model=linear,variant=pcdeq1,act=softsign",
          "model=linear,variant=pcdeq1,act=relu6", "model=linear,variant=pcdeq2,act=sigmoid",
          "model=linear,variant=deq,act=tanh", "model=linear,variant=explicit,act=tanh",
          "model=linear,variant=pcdeq1,act=tanh,solver=anderson")
# The unconstrained conv DEQ stops converging during training (forward iterations 57 in epoch 1,
# 140 of at most 200 in epoch 2, test accuracy 0.85 -> 0.46; 15 min per epoch and rising on 2 CPU
# cores): the full table trains it for 2 epochs, not 10.
CONV = ("model=multi_conv,variant=pcdeq1,act=softsign", "model=multi_conv,variant=deq,act=tanh,epochs=2",
        "model=multi_conv,variant=explicit,act=tanh")


def get_config(arg=None) -> ml_collections.ConfigDict:
    arg = parse_arg(arg, tiny=False, quick=False, conv=True)
    c = ml_collections.ConfigDict()
    c.experiment = "pcdeq/reproduce"
    c.scale = scale_of(arg)
    c.runs = LINEAR + (CONV if arg.conv else ())
    c.gradcheck = True
    c.activations = ("tanh", "softsign", "relu6", "sigmoid")
    if c.scale == "quick":
        c.runs = LINEAR[:1] + LINEAR[3:6] + CONV[:1]
    if c.scale == "tiny":
        c.runs = (LINEAR[0], LINEAR[4])
        c.activations = ("tanh",)
    return c
