#!/usr/bin/env python3
"""Seconds per training epoch of pcDEQ on Fashion-MNIST: jaxml against a PyTorch port of the
official training step, both on ONE pinned CPU thread (as the issue's reference timing).

    python scripts/bench_pcdeq.py [--models=linear,multi_conv] [--steps=0] [--output=fz] [--out=bench_pcdeq.json]

For each model (linear pcDEQ-1 tanh, 70,410 params; multi-conv pcDEQ-1 softsign, 41,278 params;
batch 64, AdamW lr 5e-4, wd 1.5e-2) both sides train the same number of steps from their own
pcDEQ init on the same Fashion-MNIST batches, after a warm-up (compilation excluded and reported):

* `jaxml`: the one loop's jitted train step (`jaxml.core.train.make_train_step`): forward solve in
  a `lax.while_loop`, implicit gradient by `custom_vjp`, projection W >= 0;
* `torch` (only when torch is installed, the `torch-ref` extra): the official algorithm, written
  here from its description: weight_norm layers, a no-grad Python fixed-point loop with the
  per-iteration `.item()` residual, one extra differentiable application of f, a backward hook that
  solves the adjoint with `autograd.grad`, AdamW, then clamping v, g >= 0.

The two sides are timed interleaved, `--block` steps (10) at a time on the same batches (which
side goes first flips every block), so that both see the same load on a shared machine; jaxml's
steps are waited for at the end of each block. Seconds per epoch = seconds per step (total / steps)
x 938 (60,000 / 64); the median over blocks is reported beside. By default the process keeps freed
heap memory (`jaxml.papers.pcdeq.cpu_memory.retain_freed_memory`, glibc `mallopt`, set before
either side runs, so both run under it): without it every jaxml step maps its temporary buffer
afresh (about 14,000 page faults per multi-conv step); `--noretain_heap` times the default
allocator. Minor page faults per step are reported for both sides. The mean forward/backward iteration
counts of the timed steps are printed beside, since they set the cost (they grow with training).
"""

from __future__ import annotations

import os

# One thread, pinned, before jax or torch start their thread pools.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1").strip()
os.environ.setdefault("OMP_NUM_THREADS", "1")
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

import json  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from absl import app, flags  # noqa: E402

_MODELS = flags.DEFINE_list("models", ["linear", "multi_conv"], "Networks to time: linear, multi_conv.")
_STEPS = flags.DEFINE_integer("steps", 0, "Timed steps per model (0: 938 = one epoch for linear, 120 for multi_conv).")
_TORCH = flags.DEFINE_bool("torch", True, "Also time the PyTorch port when torch is installed.")
_OUT = flags.DEFINE_string("out", None, "Write the results as JSON here.")
_BLOCK = flags.DEFINE_integer("block", 10, "Steps per block: the sides alternate block by block.")
_OUTPUT = flags.DEFINE_string("output", "", "jaxml's DEQ output, z (z*) or fz (f(z*), as the port); empty: the config's default.")
_RETAIN = flags.DEFINE_bool("retain_heap", True, "Keep freed heap memory in the process (both sides; see cpu_memory.py).")

STEPS_PER_EPOCH = 938
SPECS = {"linear": "model=linear,variant=pcdeq1,act=tanh",
         "multi_conv": "model=multi_conv,variant=pcdeq1,act=softsign"}


def _batches(images, labels, steps, seed=0):
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(labels))
    for s in range(steps):
        idx = order[(s * 64) % (len(labels) - 64):][:64]
        yield images[idx], labels[idx]


def setup_jaxml(model: str, images, labels):
    """jaxml's jitted train step, compiled and warmed up: `((step, sync), info)`; step(x, y) dispatches
    one step and returns its (fwd, bwd) iteration counts as device scalars, sync() waits for the last."""
    import jax

    from jaxml.core import mesh as mesh_lib, train
    from jaxml.core.config import load_config
    from jaxml.core.optim import make_optimizer
    from jaxml.papers.pcdeq.task import make_task

    output = f",output={_OUTPUT.value}" if _OUTPUT.value else ""
    config = load_config(f"jaxml/papers/pcdeq/configs/train.py:{SPECS[model]}{output}")
    task = make_task(config)
    mesh = mesh_lib.mesh_from_config(config.mesh, jax.devices()[:1])
    tx, schedule = make_optimizer(config.optimizer, config.schedule, 40 * STEPS_PER_EPOCH)
    sample = {"image": images[:2], "label": labels[:2]}
    state, shardings, _ = train.create_train_state(task, config, mesh, tx, sample)
    train_step = train.make_train_step(task, tx, schedule, shardings, mesh)
    holder = [state]

    def step(x, y):
        holder[0], m = train_step(holder[0], {"image": x, "label": y})
        return m["forward_iterations"], m["backward_iterations"]

    def sync():
        jax.block_until_ready(holder[0])

    warm = list(_batches(images, labels, 3, seed=1))
    t0 = time.perf_counter()
    step(*warm[0])
    sync()
    compile_s = time.perf_counter() - t0
    for x, y in warm[1:]:
        step(x, y)
    sync()
    return (step, sync), {"compile_s": compile_s}


def setup_torch(model: str, images, labels):
    """The PyTorch port's training step, warmed up: `(step(x, y) -> (fwd, bwd) iterations, info)`."""
    import torch
    from torch import nn
    import torch.nn.functional as F

    torch.set_num_threads(1)
    torch.manual_seed(0)

    def solve(f, z, tol=1e-4, max_iter=200):
        for k in range(1, max_iter + 1):
            z_next = f(z)
            res = torch.norm(z_next - z).item() / (torch.norm(z_next).item() + 1e-5)
            z = z_next
            if res < tol:
                break
        return z, k

    class DEQ(nn.Module):
        def __init__(self, ch, conv, act):
            super().__init__()
            lin = nn.Conv2d(ch, ch, 3, padding=1, bias=False) if conv else nn.Linear(ch, ch, bias=False)
            with torch.no_grad():
                shape = lin.weight.shape
                lin.weight.copy_(torch.rand(shape) * 1e-2 / float(shape[0] + shape[1]) ** 0.5)
            self.lin = nn.utils.parametrizations.weight_norm(lin)
            self.act = act
            self.iters = [0, 0]

        def f(self, z, x):
            return self.act(self.lin(z) + x)

        def forward(self, x):
            x = F.softplus(x, beta=5)
            with torch.no_grad():
                z, self.iters[0] = solve(lambda z: self.f(z, x), torch.zeros_like(x))
            z = self.f(z, x)
            z0 = z.clone().detach().requires_grad_()
            f0 = self.f(z0, x)

            def hook(grad):
                g, self.iters[1] = solve(lambda y: torch.autograd.grad(f0, z0, y, retain_graph=True)[0] + grad, grad)
                return g

            if z.requires_grad:
                z.register_hook(hook)
            return z

        def clamp(self):
            for p in self.lin.parametrizations.weight.original0, self.lin.parametrizations.weight.original1:
                p.data.clamp_(min=0)

    class Linear(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.bn1 = nn.Linear(784, 80), nn.BatchNorm1d(80)
            self.deq, self.bn2, self.out = DEQ(80, False, torch.tanh), nn.BatchNorm1d(80), nn.Linear(80, 10)
            self.blocks = [self.deq]

        def forward(self, x):
            return self.out(self.bn2(self.deq(self.bn1(self.l1(x.flatten(1))))))

    class MultiConv(nn.Module):
        def __init__(self, c=(12, 24, 48)):
            super().__init__()
            act = F.softsign
            self.conv1 = nn.Conv2d(1, c[0], 3, padding=1)
            self.d1, self.d2, self.d3 = DEQ(c[0], True, act), DEQ(c[1], True, act), DEQ(c[2], True, act)
            self.ds1, self.ds2 = nn.Conv2d(c[0], c[1], 3, stride=2), nn.Conv2d(c[1], c[2], 3, stride=2)
            self.bns = nn.ModuleList([nn.BatchNorm2d(k) for k in (c[0], c[0], c[1], c[1], c[2], c[2])])
            self.pool = nn.MaxPool2d(3, 1, 1)
            self.out = nn.Linear(c[2], 10)
            self.blocks = [self.d1, self.d2, self.d3]

        def forward(self, x):
            b = self.bns
            x = b[1](self.pool(self.d1(b[0](self.conv1(x)))))
            x = b[3](self.pool(self.d2(b[2](self.ds1(x)))))
            x = b[5](self.pool(self.d3(b[4](self.ds2(x)))))
            return self.out(F.avg_pool2d(x, 4).flatten(1))

    net = Linear() if model == "linear" else MultiConv()
    opt = torch.optim.AdamW(net.parameters(), lr=5e-4, weight_decay=1.5e-2)
    to_t = lambda x, y: (torch.from_numpy(x.astype(np.float32) / 255.0).permute(0, 3, 1, 2).contiguous(),
                         torch.from_numpy(y.astype(np.int64)))

    def train_step(x, y):
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        for blk in net.blocks:
            blk.clamp()
        return [sum(b.iters[i] for b in net.blocks) / len(net.blocks) for i in (0, 1)]

    for x, y in _batches(images, labels, 2, seed=1):
        train_step(*to_t(x, y))
    return ((lambda x, y: tuple(train_step(*to_t(x, y)))), lambda: None), {"torch": torch.__version__}


def bench_interleaved(sides: dict, steps: int, images, labels, block: int) -> dict:
    """Times the sides alternately, `block` steps at a time on the same batches (which side goes first
    flips every block), so that both see the same machine load; per side: seconds per step (total /
    steps), the median over blocks of the seconds per step, minor page faults per step and the mean
    iteration counts."""
    import jax

    names = list(sides)
    times = {n: [] for n in names}
    faults = {n: 0 for n in names}
    its = {n: [] for n in names}
    batches = list(_batches(images, labels, steps))
    for b, start in enumerate(range(0, steps, block)):
        chunk = batches[start:start + block]
        for n in (names if b % 2 == 0 else names[::-1]):
            step, sync = sides[n]
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = time.perf_counter()
            out = [step(x, y) for x, y in chunk]
            sync()
            times[n].append((time.perf_counter() - t0) / len(chunk))
            faults[n] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
            its[n].extend(jax.device_get(out))
    result = {}
    for n in names:
        a = np.asarray(its[n], np.float64)
        sizes = [len(batches[s:s + block]) for s in range(0, steps, block)]
        result[n] = {"s_per_step": float(np.dot(times[n], sizes)) / steps, "median_s_per_step": float(np.median(times[n])),
                     "page_faults_per_step": faults[n] / steps, "forward_iterations": float(a[:, 0].mean()),
                     "backward_iterations": float(a[:, 1].mean())}
    return result


def main(argv):
    del argv
    from jaxml.data import fashion_mnist
    from jaxml.papers.pcdeq.cpu_memory import retain_freed_memory

    retained = _RETAIN.value and retain_freed_memory()
    print(f"freed heap memory retained (both sides): {retained}", flush=True)
    train = fashion_mnist.load("train")
    arrays = train[np.arange(len(train))]
    images, labels = np.asarray(arrays["image"]), np.asarray(arrays["label"])
    results = {}
    for model in _MODELS.value:
        if model not in SPECS:
            raise app.UsageError(f"--models: {model!r} is not one of {sorted(SPECS)}")
        steps = _STEPS.value or (STEPS_PER_EPOCH if model == "linear" else 120)
        sides, info = {}, {}
        sides["jaxml"], info["jaxml"] = setup_jaxml(model, images, labels)
        skipped = "--notorch"
        if _TORCH.value:
            try:
                sides["torch"], info["torch"] = setup_torch(model, images, labels)
            except ImportError as e:
                skipped = f"torch not installed ({e}); pip install -e '.[torch-ref]'"
        timed = bench_interleaved(sides, steps, images, labels, _BLOCK.value)
        row = {"steps": steps, **{n: {**timed[n], **info[n]} for n in timed}}
        row.setdefault("torch", {"skipped": skipped})
        row["retain_heap"] = retained
        results[model] = row
        j, t = row["jaxml"], row["torch"]
        line = (f"{model}: jaxml {j['s_per_step'] * STEPS_PER_EPOCH:.1f} s/epoch "
                f"(fwd {j['forward_iterations']:.1f} / bwd {j['backward_iterations']:.1f} it, compile {j['compile_s']:.1f} s, "
                f"{j['page_faults_per_step']:.0f} page faults/step)")
        if "s_per_step" in t:
            row["speedup"] = t["s_per_step"] / j["s_per_step"]
            row["speedup_median"] = t["median_s_per_step"] / j["median_s_per_step"]
            line += (f"; torch {t['s_per_step'] * STEPS_PER_EPOCH:.1f} s/epoch (fwd {t['forward_iterations']:.1f} / "
                     f"bwd {t['backward_iterations']:.1f} it, {t['page_faults_per_step']:.0f} page faults/step); jaxml is {row['speedup']:.2f}x faster "
                     f"(median block: {j['median_s_per_step'] * 1e3:.2f} vs {t['median_s_per_step'] * 1e3:.2f} ms/step, "
                     f"{t['median_s_per_step'] / j['median_s_per_step']:.2f}x)")
        else:
            line += f"; torch not timed: {t['skipped']}"
        print(line, flush=True)
    if _OUT.value:
        pathlib.Path(_OUT.value).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    app.run(main)
