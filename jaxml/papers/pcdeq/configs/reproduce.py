"""pcDEQ on Fashion-MNIST: pcDEQ variants and the two baselines at equal parameter count, plus the
gradient check (experiment `pcdeq/reproduce`; each part is `pcdeq/train` or `pcdeq/gradcheck`).

Runbook:
    python scripts/reproduce.py --papers=pcdeq --scale=quick     # under a minute on 2 CPU cores
    python scripts/run.py --config=jaxml/papers/pcdeq/configs/reproduce.py --workdir=/tmp/pcdeq_full
The full table (linear: 40 epochs each; multi-conv: 10 epochs each) and its wall times are in
jaxml/papers/pcdeq/README.md, with what the quick run stands for. `conv=false` drops the conv runs.
"""

from jaxml.core.config import reproduce_config

LINEAR = ("train:model=linear,variant=pcdeq1,act=tanh", "train:model=linear,variant=pcdeq1,act=softsign",
          "train:model=linear,variant=pcdeq1,act=relu6", "train:model=linear,variant=pcdeq2,act=sigmoid",
          "train:model=linear,variant=deq,act=tanh", "train:model=linear,variant=explicit,act=tanh",
          "train:model=linear,variant=pcdeq1,act=tanh,solver=anderson")
# The unconstrained conv DEQ stops converging during training (forward iterations 57 in epoch 1,
# 140 of at most 200 in epoch 2, test accuracy 0.85 -> 0.46; 15 min per epoch and rising on 2 CPU
# cores): the full table trains it for 2 epochs, not 10.
CONV = ("train:model=multi_conv,variant=pcdeq1,act=softsign", "train:model=multi_conv,variant=deq,act=tanh,epochs=2",
        "train:model=multi_conv,variant=explicit,act=tanh")
# Quick: the linear networks of the full table (the four pcDEQ variants and the two baselines; not the
# Anderson-trained one) for one epoch each, and the gradient check. A multi-conv run is compilation-bound
# (33 s of CPU for 50 steps), so the conv rows are full-scale only; the conv layers' convergence and
# gradients are unit-tested.
QUICK = LINEAR[:6] + ("gradcheck",)


def get_config(arg=None):
    c = reproduce_config("pcdeq", arg, tiny=("gradcheck",), quick=QUICK, full=LINEAR + CONV + ("gradcheck",),
                         conv=True)
    if not c.conv:
        c.parts = tuple(p for p in c.parts if "conv" not in p)
    return c
