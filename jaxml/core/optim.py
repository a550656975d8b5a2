"""Optax optimizers and learning-rate schedules built from the config.

    config.optimizer = {"name": "adamw", "learning_rate": 1e-3, "weight_decay": 1e-4,
                        "grad_clip_norm": 0.0, ...any other keyword of optax.<name>}
    config.schedule  = {"name": "cosine", "warmup_steps": 0, "end_factor": 0.0}

Schedules: `constant`, `cosine` (warmup then cosine decay to `end_factor * lr`), `linear`
(warmup then linear decay), `rsqrt` (warmup then 1/sqrt decay), `multistep` (PyTorch's
MultiStepLR: the rate is multiplied by `gamma` at each of `milestones`, given as fractions of the
total steps, e.g. `milestones=(0.75,)` for epoch 30 of 40).
"""

from __future__ import annotations

from typing import Any, Callable

import optax

SCHEDULES = ("constant", "cosine", "linear", "rsqrt", "multistep")


def make_schedule(schedule_config: Any, learning_rate: float, total_steps: int) -> Callable[[Any], Any]:
    name = schedule_config.get("name", "constant")
    warmup = int(schedule_config.get("warmup_steps", 0))
    end = float(schedule_config.get("end_factor", 0.0)) * learning_rate
    if warmup < 0 or warmup > total_steps:
        raise ValueError(f"schedule.warmup_steps={warmup} must be in [0, total steps={total_steps}]")
    if name == "constant":
        main = optax.constant_schedule(learning_rate)
    elif name == "cosine":
        main = optax.cosine_decay_schedule(learning_rate, max(total_steps - warmup, 1), alpha=end / learning_rate if learning_rate else 0.0)
    elif name == "linear":
        main = optax.linear_schedule(learning_rate, end, max(total_steps - warmup, 1))
    elif name == "multistep":
        milestones = tuple(float(m) for m in schedule_config.get("milestones", ()))
        if any(not 0.0 < m < 1.0 for m in milestones) or list(milestones) != sorted(milestones):
            raise ValueError(f"schedule.milestones={milestones} must be increasing fractions of the "
                             "total steps in (0, 1)")
        gamma = float(schedule_config.get("gamma", 0.1))
        main = optax.piecewise_constant_schedule(
            learning_rate, {max(int(round(m * total_steps)) - warmup, 1): gamma for m in milestones})
    elif name == "rsqrt":
        main = lambda step: learning_rate / (1.0 + step / max(warmup, 1)) ** 0.5
    else:
        raise ValueError(f"schedule.name={name!r} is not one of {SCHEDULES}")
    if warmup == 0:
        return main
    return optax.join_schedules([optax.linear_schedule(0.0, learning_rate, warmup), main], [warmup])


def make_optimizer(optimizer_config: Any, schedule_config: Any, total_steps: int
                   ) -> tuple[optax.GradientTransformation, Callable[[Any], Any]]:
    """Returns `(optax transformation, learning-rate schedule)`."""
    opt = dict(optimizer_config)
    name = opt.pop("name", "adamw")
    lr = float(opt.pop("learning_rate"))
    clip = float(opt.pop("grad_clip_norm", 0.0) or 0.0)
    factory = getattr(optax, name, None)
    if factory is None or not callable(factory):
        raise ValueError(f"optimizer.name={name!r} is not an optax optimizer (for example adamw, sgd, adam, lion)")
    schedule = make_schedule(schedule_config, lr, total_steps)
    try:
        tx = factory(learning_rate=schedule, **opt)
    except TypeError as e:
        raise ValueError(f"optimizer {name!r}: bad keyword in {sorted(opt)}: {e}") from e
    if clip > 0:
        tx = optax.chain(optax.clip_by_global_norm(clip), tx)
    return tx, schedule
