"""The one training loop: `train_and_evaluate(config, workdir)`.

Sections, in order: set-up (distributed, task, mesh) -> data -> optimizer -> abstract state and
shardings (`jax.eval_shape`) -> sharded init (`jit(out_shardings=...)`) or resume from the newest
checkpoint -> jitted, donated train step -> loop (progress line, JSONL metrics, periodic eval and
checkpoints, stop on a non-finite loss) -> final checkpoint and evaluation.

Training batches are a pure function of `(config.seed, step)` and the per-step random key is
`fold_in(state.rng, step)`, so a run killed and resumed from its newest checkpoint ends with the
same parameters, bit for bit, as one that was never interrupted.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import time
from typing import Any

import flax
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from jaxml.core import checkpoint as checkpoint_lib
from jaxml import progress
from jaxml.core import distributed, mesh as mesh_lib, registry
from jaxml.core.metrics import MetricWriter
from jaxml.core.optim import make_optimizer
from jaxml.core.task import check_task, is_stateful
from jaxml.data import pipeline


def default_config() -> ml_collections.ConfigDict:
    """The loop's keys with their defaults; experiment configs start from this and override."""
    c = ml_collections.ConfigDict()
    c.task = ""                      # registry name of the Task factory, "<slug>/<name>"
    c.seed = 0
    c.batch_size = 128               # global batch, split over the `data` mesh axis
    c.eval_batch_size = 1000
    c.num_steps = -1                 # > 0 wins over num_epochs
    c.num_epochs = 1.0
    c.optimizer = ml_collections.ConfigDict(
        dict(name="adamw", learning_rate=1e-3, weight_decay=1e-4, grad_clip_norm=0.0))
    c.schedule = ml_collections.ConfigDict(dict(name="cosine", warmup_steps=0, end_factor=0.0))
    c.mesh = ml_collections.ConfigDict(dict(data=-1, model=1))
    c.param_sharding = ()            # ((regex, partition spec tuple), ...) over parameter paths
    c.log_every_steps = 100
    c.eval_every_steps = 0           # 0: evaluate at the end only
    c.checkpoint_every_steps = 500
    c.keep_checkpoints = 2
    c.async_checkpoint = True
    c.jax_distributed = False
    return c


# The loop settings of a `tiny` training config (seconds on a CPU; the tests run it).
TINY_LOOP = dict(batch_size=32, eval_batch_size=200, num_steps=20, log_every_steps=5, eval_every_steps=10,
                 checkpoint_every_steps=10)


def stage_config(*, steps: int, batch_size: int, learning_rate: float, seed: int = 0, weight_decay: float = 1e-4,
                 warmup_fraction: float = 0.05, eval_batch_size: int | None = None) -> ml_collections.ConfigDict:
    """A loop config for one training stage run inside an experiment (a pre-training, a fine-tuning):
    `default_config()` with a fixed number of steps, AdamW with cosine decay after a linear warm-up
    of `warmup_fraction` of the steps, five log lines, one synchronous checkpoint at the end."""
    c = default_config()
    c.seed = seed
    c.batch_size = batch_size
    c.eval_batch_size = eval_batch_size or max(batch_size, 64)
    c.num_steps = steps
    c.optimizer.learning_rate = learning_rate
    c.optimizer.weight_decay = weight_decay
    c.schedule.warmup_steps = max(1, int(steps * warmup_fraction))
    c.log_every_steps = max(1, steps // 5)
    c.checkpoint_every_steps = steps
    c.async_checkpoint = False
    return c


def training_config(experiment: str, arg: str | None, **spec: Any) -> tuple[ml_collections.ConfigDict, str]:
    """`(config, scale)` for an experiment that trains with the loop: `default_config()` plus
    `experiment`, `task` (the same registry name), `seed` and the `spec` keys parsed from `arg`
    (see `jaxml.core.config.experiment_config`); at scale `tiny` the `TINY_LOOP` settings are applied."""
    from jaxml.core.config import experiment_config

    head, scale = experiment_config(experiment, arg, **spec)
    c = default_config()
    c.update(head.to_dict())
    c.task = experiment
    if scale == "tiny":
        c.update(TINY_LOOP)
    return c, scale


@flax.struct.dataclass
class TrainState:
    step: jax.Array
    params: Any
    opt_state: Any
    rng: jax.Array
    model_state: Any = dataclasses.field(default_factory=dict)   # see jaxml.core.task (stateful tasks)


@dataclasses.dataclass
class TrainOutcome:
    """What `train_and_evaluate` returns.

    Attributes:
      state: the final TrainState (sharded over the mesh).
      metrics: final evaluation metrics `{"<split>/<name>": float}` plus `train/loss` (the mean
        over the last logging window) and `train_time_s` (wall time of the training loop, step
        compilation and periodic evals included, summed over the runs of a resumed training).
      workdir: where checkpoints and metrics.jsonl live.
      resumed_from: the checkpoint step training resumed from (None for a fresh run).
    """

    state: TrainState
    metrics: dict[str, float]
    workdir: pathlib.Path
    resumed_from: int | None


class NonFiniteLossError(FloatingPointError):
    """Raised when the training loss (or the gradient norm) becomes NaN or infinite."""


def total_steps(config: ml_collections.ConfigDict, num_examples: int) -> int:
    """`num_steps` if positive, else `ceil(num_epochs * steps_per_epoch)`."""
    if config.num_steps > 0:
        return int(config.num_steps)
    if config.num_epochs <= 0:
        raise ValueError(f"set num_steps > 0 or num_epochs > 0 (got {config.num_steps}, {config.num_epochs})")
    return int(math.ceil(config.num_epochs * pipeline.steps_per_epoch(num_examples, config.batch_size)))


def _init_fn(task, config, tx):
    rng = jax.random.PRNGKey(config.seed)
    init_rng, train_rng = jax.random.split(rng)

    def init_fn(init_rng, batch):
        params = task.init(init_rng, batch)
        model_state = task.init_state(init_rng, batch) if is_stateful(task) else {}
        return TrainState(step=jnp.zeros((), jnp.int32), params=params, opt_state=tx.init(params),
                          rng=train_rng, model_state=model_state)

    return init_fn, init_rng


def abstract_train_state(task, config, mesh, tx, sample_batch: dict[str, np.ndarray]):
    """Returns `(abstract_state, state_shardings)` without computing anything (`jax.eval_shape`)."""
    init_fn, init_rng = _init_fn(task, config, tx)
    abstract = jax.eval_shape(init_fn, init_rng, sample_batch)
    task_rules = getattr(task, "param_sharding", None)
    rules = tuple(config.param_sharding) + (tuple(task_rules()) if callable(task_rules) else ())
    return abstract, mesh_lib.param_shardings(abstract, mesh, rules)


def create_train_state(task, config, mesh, tx, sample_batch: dict[str, np.ndarray]):
    """Returns `(state, state_shardings, abstract_state)`, the state created directly sharded."""
    init_fn, init_rng = _init_fn(task, config, tx)
    abstract, shardings = abstract_train_state(task, config, mesh, tx, sample_batch)
    state = jax.jit(init_fn, out_shardings=shardings)(init_rng, sample_batch)
    return state, shardings, abstract


def make_train_step(task, tx, schedule, state_shardings, mesh):
    """The jitted, donated `(state, batch) -> (state, metrics)` step (`schedule` may be None)."""
    project = getattr(task, "project", None)
    stateful = is_stateful(task)
    custom_value_and_grad = getattr(task, "value_and_grad", None)

    def train_step(state: TrainState, batch):
        rng = jax.random.fold_in(state.rng, state.step)
        extra = (state.model_state,) if stateful else ()
        if custom_value_and_grad is not None:
            (loss, aux), grads = custom_value_and_grad(state.params, batch, rng, *extra)
        else:
            (loss, aux), grads = jax.value_and_grad(
                lambda p: task.loss(p, batch, rng, *extra), has_aux=True)(state.params)
        metrics, model_state = aux if stateful else (aux, state.model_state)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        if project is not None:
            params = project(params)
        metrics = dict(metrics)
        metrics.update(loss=loss, grad_norm=optax.tree.norm(grads), param_norm=optax.tree.norm(params))
        if schedule is not None:
            metrics["learning_rate"] = jnp.asarray(schedule(state.step), jnp.float32)
        return state.replace(step=state.step + 1, params=params, opt_state=opt_state,
                             model_state=model_state), metrics

    return jax.jit(train_step,
                   in_shardings=(state_shardings, mesh_lib.batch_sharding(mesh)),
                   out_shardings=(state_shardings, mesh_lib.replicated(mesh)),
                   donate_argnums=0)


def make_eval_step(task, mesh):
    """The jitted `(params, model_state, batch) -> {name: masked sum, "count": n}` step."""
    extra = is_stateful(task)

    def eval_step(params, model_state, batch):
        mask = batch["mask"]
        inputs = {k: v for k, v in batch.items() if k != "mask"}
        per_example = task.evaluate(params, inputs, model_state) if extra else task.evaluate(params, inputs)
        sums = {}
        for name, values in per_example.items():
            if values.shape != mask.shape:
                raise ValueError(f"Task.evaluate: metric {name!r} has shape {values.shape}; "
                                 f"expected one value per example, {mask.shape}")
            sums[name] = jnp.sum(values.astype(jnp.float32) * mask)
        sums["count"] = jnp.sum(mask)
        return sums

    return jax.jit(eval_step, out_shardings=mesh_lib.replicated(mesh))


def evaluate(eval_step, params, sources: dict[str, pipeline.Source], batch_size: int, mesh,
             model_state: Any = None) -> dict[str, float]:
    """Averages the Task's per-example metrics over every example of every source."""
    model_state = {} if model_state is None else model_state
    mesh_lib.check_batch_divisible(batch_size, mesh, "eval_batch_size")
    rows = mesh_lib.process_slice(batch_size)
    out = {}
    for split, source in sources.items():
        totals = None
        for batch in pipeline.eval_batches(source, batch_size, rows):
            sums = eval_step(params, model_state, mesh_lib.global_batch(batch, mesh))
            totals = sums if totals is None else jax.tree_util.tree_map(jnp.add, totals, sums)
        totals = jax.device_get(totals)
        count = float(totals.pop("count"))
        out.update({f"{split}/{k}": float(v) / count for k, v in totals.items()})
    return out


def _check_finite(step: int, metrics: dict[str, float], ckpt: checkpoint_lib.Checkpointer) -> None:
    for key in ("loss", "grad_norm"):
        value = metrics.get(key)
        if value is not None and not math.isfinite(value):
            raise NonFiniteLossError(
                f"training stopped: {key} = {value} at step {step}. The newest checkpoint is step "
                f"{ckpt.latest_step()} in {ckpt.directory}. Lower optimizer.learning_rate, set "
                "optimizer.grad_clip_norm, or check the data for NaNs.")


def train_and_evaluate(config: ml_collections.ConfigDict, workdir: str | pathlib.Path, *,
                       task=None, devices=None) -> TrainOutcome:
    """Trains `task` (or the registered `config.task`) as `config` says; resumes from `workdir`.

    Args:
      config: a ConfigDict with the keys of `default_config()`.
      workdir: directory for checkpoints, `metrics.jsonl` and `config.json`.
      task: a Task; default `registry.get_task(config.task)(config)`.
      devices: devices for the mesh (default: all).
    Returns:
      A TrainOutcome with the final state and metrics.
    Raises:
      NonFiniteLossError: the loss or gradient norm became NaN/inf.
      ValueError: inconsistent batch sizes, mesh or config.
    """
    # --- Set-up -------------------------------------------------------------------------------
    distributed.initialize(bool(config.get("jax_distributed", False)))
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if task is None:
        if not config.get("task"):
            raise ValueError("train_and_evaluate: pass task=... or set config.task to a registered task name")
        task = registry.get_task(config.task)(config)
    check_task(task)
    mesh = mesh_lib.mesh_from_config(config.mesh, devices)
    _save_config(config, workdir)

    # --- Data -----------------------------------------------------------------------------------
    train_source = task.train_data()
    eval_sources = task.eval_data()
    mesh_lib.check_batch_divisible(config.batch_size, mesh)
    steps = total_steps(config, len(train_source))
    rows = mesh_lib.process_slice(config.batch_size)
    sample = train_source[np.arange(min(2, len(train_source)))]

    # --- Optimizer, state, checkpoints ----------------------------------------------------------
    optimizer_fn = getattr(task, "optimizer", None)
    if optimizer_fn is not None:
        tx, schedule = optimizer_fn(config), None
    else:
        tx, schedule = make_optimizer(config.optimizer, config.schedule, steps)
    ckpt = checkpoint_lib.Checkpointer(workdir, config.checkpoint_every_steps, config.keep_checkpoints,
                                       config.async_checkpoint)
    resumed_from = ckpt.latest_step()
    if resumed_from is None:
        state, state_shardings, abstract = create_train_state(task, config, mesh, tx, sample)
    else:
        abstract, state_shardings = abstract_train_state(task, config, mesh, tx, sample)
        state = ckpt.restore(checkpoint_lib.abstract_with_shardings(abstract, state_shardings))
        progress.log(f"resumed from checkpoint step {resumed_from} in {ckpt.directory}")
    start = int(jax.device_get(state.step))
    progress.log(f"{config.get('task') or type(task).__name__}: {mesh_lib.num_params(abstract.params):,} "
                 f"params, {steps} steps of batch {config.batch_size} on mesh {dict(mesh.shape)}")

    train_step = make_train_step(task, tx, schedule, state_shardings, mesh)
    eval_step = make_eval_step(task, mesh)
    writer = MetricWriter(workdir, resume_step=start)

    # --- Loop -----------------------------------------------------------------------------------
    rate = progress.Rate(start, steps)
    batches = pipeline.train_batches(train_source, config.batch_size, config.seed, start, rows)
    pending: tuple[int, Any] | None = None   # the previous step's metrics, still on device
    window: list[dict[str, float]] = []
    last_train: dict[str, float] = {}
    t0 = time.perf_counter()
    earlier_time = writer.last("train", "elapsed_s", 0.0) if start > 0 else 0.0  # runs before a resume

    def flush():
        nonlocal pending
        if pending is not None:
            step, metrics = pending
            host = {k: float(v) for k, v in jax.device_get(metrics).items()}
            _check_finite(step, host, ckpt)
            window.append(host)
            pending = None

    for step in range(start, steps):
        state, metrics = train_step(state, mesh_lib.global_batch(next(batches), mesh))
        flush()   # checks step-1 while this step runs
        pending = (step + 1, metrics)
        done = step + 1
        is_last = done == steps
        if done % config.log_every_steps == 0 or is_last:
            flush()
            last_train = {k: float(np.mean([w[k] for w in window])) for k in window[0]}
            window.clear()
            writer.write(done, "train", {**last_train, "elapsed_s": earlier_time + time.perf_counter() - t0})
            progress.log(f"{rate.line(done)} loss {last_train['loss']:.4f}")
        if config.eval_every_steps > 0 and done % config.eval_every_steps == 0 and not is_last:
            flush()
            eval_metrics = evaluate(eval_step, state.params, eval_sources, config.eval_batch_size, mesh,
                                    state.model_state)
            writer.write(done, "eval", eval_metrics)
            progress.log(f"eval at step {done}: " + _fmt(eval_metrics))
        if done % config.checkpoint_every_steps == 0 and not is_last:
            flush()
            ckpt.save(done, state)
    flush()
    train_time = earlier_time + time.perf_counter() - t0
    if steps > start or ckpt.latest_step() != steps:
        ckpt.save(steps, state, force=True)
    ckpt.close()

    # --- Final evaluation -------------------------------------------------------------------------
    final = (evaluate(eval_step, state.params, eval_sources, config.eval_batch_size, mesh, state.model_state)
             if eval_sources else {})
    writer.write(steps, "eval", final)
    writer.close()
    progress.log(f"final eval at step {steps}: " + _fmt(final))
    metrics = dict(final)
    if last_train:
        metrics["train/loss"] = last_train["loss"]
    metrics["train_time_s"] = train_time
    return TrainOutcome(state=state, metrics=metrics, workdir=workdir, resumed_from=resumed_from)


def _fmt(metrics: dict[str, float]) -> str:
    return " ".join(f"{k}={v:.4f}" for k, v in sorted(metrics.items()))


def _save_config(config: ml_collections.ConfigDict, workdir: pathlib.Path) -> None:
    """Writes `config.json`; an existing, different one is kept as `config.prev-N.json`."""
    if jax.process_index() != 0:
        return
    text = config.to_json_best_effort(indent=2, sort_keys=True)
    path = workdir / "config.json"
    if path.exists() and path.read_text() != text:
        n = 1
        while (workdir / f"config.prev-{n}.json").exists():
            n += 1
        path.rename(workdir / f"config.prev-{n}.json")
        progress.log(f"config changed since the last run in {workdir}; old one kept as config.prev-{n}.json")
    path.write_text(text)


def load_state_params(workdir: str | pathlib.Path, task, config, devices=None, step: int | None = None) -> Any:
    """Restores the params of the checkpoint at `step` (default: the newest) in `workdir` (for
    notebooks and evaluation)."""
    return load_train_state(workdir, task, config, devices, step).params


def load_train_state(workdir: str | pathlib.Path, task, config, devices=None, step: int | None = None
                     ) -> TrainState:
    """Restores the whole TrainState (params, optimizer state, model state) of the checkpoint at
    `step` (default: the newest)."""
    mesh = mesh_lib.mesh_from_config(config.mesh, devices)
    train_source = task.train_data()
    steps = total_steps(config, len(train_source))
    tx, _ = make_optimizer(config.optimizer, config.schedule, steps)
    sample = train_source[np.arange(min(2, len(train_source)))]
    abstract, shardings = abstract_train_state(task, config, mesh, tx, sample)
    ckpt = checkpoint_lib.Checkpointer(workdir, max(config.checkpoint_every_steps, 1))
    try:
        state = ckpt.restore(checkpoint_lib.abstract_with_shardings(abstract, shardings), step=step)
    finally:
        ckpt.close()
    return state
