"""Train one pcDEQ network (or a baseline) on Fashion-MNIST with the one loop (experiment `pcdeq/train`).

Runbook:
    python scripts/run.py --config=jaxml/papers/pcdeq/configs/train.py:model=linear,variant=pcdeq1,act=tanh --workdir=/tmp/pcdeq_lin
    python scripts/run.py --config=jaxml/papers/pcdeq/configs/train.py:model=multi_conv,variant=pcdeq1,act=softsign --workdir=/tmp/pcdeq_mc
Arguments: model in {linear, single_conv, multi_conv}; variant in {pcdeq1, pcdeq2, deq, explicit};
act (pcdeq1: tanh/softsign/relu6; pcdeq2: sigmoid; deq/explicit: tanh by default); solver in
{iteration, anderson}; output in {z, fz} (the DEQ blocks return z* or, as the official forward,
f(z*)); epochs (0: the scale's default); seed; `tiny` or `quick`.

Hyperparameters are the official README's MNIST ones (AdamW lr 5e-4, weight decay 1.5e-2, batch
64, MultiStepLR x0.1 at 3/4 of training; images in [0, 1], no augmentation), on Fashion-MNIST.
Full scale: linear 40 epochs (the README's count), conv 10 epochs (a CPU budget; the README trains
40). Quick: linear one epoch, conv 50 steps. Tiny (tests, notebook): 20 steps (conv: 8, channels / 6)
on 256 images. Measured numbers: jaxml/papers/pcdeq/README.md.
"""

import ml_collections

from jaxml.core.config import by_scale, experiment_config
from jaxml.core.train import default_config

STEPS_PER_EPOCH = 937   # 60000 // 64: the loop drops the last partial batch


def get_config(arg=None) -> ml_collections.ConfigDict:
    a, scale = experiment_config("pcdeq/train", arg, model="linear", variant="pcdeq1", act="", solver="iteration",
                                 epochs=0, implementation="auto", output="z")
    from jaxml.papers.pcdeq.models import DEFAULT_WIDTHS
    if a.model not in DEFAULT_WIDTHS:
        raise ValueError(f"model={a.model!r}; accepted: {sorted(DEFAULT_WIDTHS)}")
    conv = a.model != "linear"
    act = a.act or {"pcdeq1": "tanh" if not conv else "softsign", "pcdeq2": "sigmoid"}.get(a.variant, "tanh")
    c = default_config()
    c.experiment = a.experiment
    c.task = "pcdeq/train"
    c.seed = a.seed
    c.model = ml_collections.ConfigDict(dict(
        architecture=a.model, variant=a.variant, activation=act, widths=DEFAULT_WIDTHS[a.model],
        solver=a.solver, tol=1e-4, max_iter=200, unroll=8, implementation=a.implementation,
        output=a.output))
    c.data = ml_collections.ConfigDict(dict(train_examples=-1, test_examples=-1))
    c.batch_size = 64
    c.eval_batch_size = 512
    c.num_epochs = float(a.epochs) if a.epochs > 0 else by_scale(scale, tiny=1.0, quick=1.0,
                                                                  full=10.0 if conv else 40.0)
    c.optimizer = ml_collections.ConfigDict(dict(name="adamw", learning_rate=5e-4, weight_decay=1.5e-2,
                                                 grad_clip_norm=0.0))
    c.schedule = ml_collections.ConfigDict(dict(name="multistep", milestones=(0.75,), gamma=0.1,
                                                warmup_steps=0))
    c.log_every_steps = STEPS_PER_EPOCH            # one line (and one metrics record) per epoch
    c.eval_every_steps = STEPS_PER_EPOCH if scale == "full" else 0
    c.checkpoint_every_steps = STEPS_PER_EPOCH
    c.convergence_batch = 256                      # test images for the residual-vs-iteration curves
    c.convergence_anderson = True                  # Anderson's curve beside plain iteration's
    if scale == "quick" and conv:   # mostly compilation: the steps cost 0.1 s each on 2 CPU cores
        c.num_steps = 50
        c.log_every_steps = 25
        c.checkpoint_every_steps = 50
        c.data.test_examples = 500
        c.convergence_batch = 64
        c.convergence_anderson = False
    if scale == "tiny":
        c.data.train_examples = 256
        c.data.test_examples = 200
        c.eval_batch_size = 40          # a multiple of 8: the tests run on 8 fake devices
        c.num_steps = 8 if conv else 20
        c.log_every_steps = 4
        c.checkpoint_every_steps = c.num_steps   # the final checkpoint only
        c.convergence_batch = 32
        c.convergence_anderson = not conv        # the conv blocks' Anderson path: tested at quick scale
        if conv:
            c.model.widths = tuple(max(2, w // 6) for w in c.model.widths)
    return c
