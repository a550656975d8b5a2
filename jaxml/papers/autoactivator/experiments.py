"""AutoActivator experiments: the class-incremental benchmark (experiment `autoactivator/cil`) and
`autoactivator/reproduce`.

For every benchmark in `config.benchmarks` and every seed in `config.seeds`, on the same sessions:
  * AutoActivator (rehearsal-free): growth under the supervisory mechanism, closed-form heads,
    reactivation at inference; and its ablations, without reactivation (every unit takes part;
    the same network) and without the supervisory check (a random candidate batch per step);
  * the loop-trained MLP baselines: fine-tuning, EWC, a replay buffer (stores data: an upper
    reference) and joint training (the upper bound);
  * per method: average incremental accuracy, final accuracy, forgetting, training seconds per
    session, and for AutoActivator the units added per session.
Benchmarks: `fmnist_pixels` (Split Fashion-MNIST, 5 x 2 classes, raw pixels), `fmnist_cnn` (the
same on frozen features of a CNN trained with the loop on the first session's classes only) and
`digits` (scikit-learn's digits, 10 sessions of one class, raw pixels).

Every finished (benchmark, method, seed) is a row of `rows.jsonl` in the workdir and every loop
run resumes from its checkpoints, so a run killed midway resumes where it stopped.
"""

from __future__ import annotations

import pathlib

import jax
import numpy as np
import scipy.stats

from jaxml import progress
from jaxml.core import registry
from jaxml.core.experiment import Claim, Result, Rows, gather_parts, make_workdir, pyplot, save_figure, verdict
from jaxml.core.metrics import mean_std
from jaxml.papers.autoactivator import baselines
from jaxml.papers.autoactivator import metrics as cm
from jaxml.papers.autoactivator.backbone import pretrain_backbone
from jaxml.papers.autoactivator.model import GrowthConfig, learn_stream
from jaxml.papers.autoactivator.stream import digits_stream, fashion_mnist_stream

BENCHMARKS = {
    "fmnist_pixels": "Split Fashion-MNIST 5x2, pixels",
    "fmnist_cnn": "Split Fashion-MNIST 5x2, CNN features (session-1 classes only)",
    "digits": "Split digits 10x1, pixels",
}
# AutoActivator and the ablations that grow their own network (growth-config changes); the
# no-reactivation ablation evaluates AutoActivator's own network with every unit active.
VARIANTS = {"autoactivator": {}, "no_check": {"check": False}, "no_connect": {"connect": False}}
OURS = ("autoactivator", "no_reactivation", "no_check", "no_connect")
METHOD_NAMES = {"autoactivator": "AutoActivator", "no_reactivation": "  without reactivation",
                "no_check": "  without supervisory check", "no_connect": "  without connections to existing units",
                "finetune": "Fine-tuning", "ewc": "EWC",
                "replay": "Replay buffer (stores data)", "joint": "Joint training (upper bound)"}


def build_stream(config, benchmark: str, workdir: pathlib.Path):
    """The sessions of `benchmark` (cut to `config.sessions`), and the backbone's test accuracy on
    its own session for `fmnist_cnn` (else None)."""
    if benchmark not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {benchmark!r}; accepted: {sorted(BENCHMARKS)}")
    if benchmark == "digits":
        stream = digits_stream(seed=0)
    else:
        stream = fashion_mnist_stream(config.data.train_per_class, config.data.test_per_class, seed=0)
    if config.sessions > 0:
        stream = stream[:config.sessions]
    if benchmark != "fmnist_cnn":
        return stream, None
    backbone = pretrain_backbone(stream[0], (28, 28, 1), config.backbone, workdir / "backbone", seed=0)
    return backbone.transform(stream), backbone.test_accuracy


def growth_config(config, benchmark: str, **changes) -> GrowthConfig:
    """`config.growth` with `config.growth_overrides[benchmark]` and `changes` applied."""
    g = dict(config.growth)
    g.update(dict(config.growth_overrides.get(benchmark, {})))
    g.update(changes)
    g["scales"] = tuple(g["scales"])
    g["r_schedule"] = tuple(g["r_schedule"])
    return GrowthConfig(**g)


def baseline_config(config, benchmark: str):
    """`config.baseline` with `config.baseline_overrides[benchmark]` applied."""
    c = config.baseline.copy_and_resolve_references()
    c.update(dict(config.baseline_overrides.get(benchmark, {})))
    return c


def run_autoactivator(stream, cfg: GrowthConfig, seed: int) -> dict:
    """Learns the stream; the accuracy matrices with and without reactivation, units, seconds."""
    net, logs = learn_stream(stream, jax.random.PRNGKey(seed), cfg)
    return dict(acc=net.accuracy_matrix(stream).tolist(),
                acc_no_reactivation=net.accuracy_matrix(stream, reactivate=False).tolist(),
                units=net.units_per_session, seconds=[log.seconds for log in logs],
                stops=[log.stop for log in logs], final_residual=[log.residual[-1] for log in logs])


def within_session_difficulty(stream) -> list[float]:
    """An independent difficulty measure per session: the training error of a ridge least-squares
    linear classifier on the session's own classes (pixels or features)."""
    out = []
    for s in stream:
        if len(s.classes) < 2:
            out.append(float("nan"))
            continue
        x = np.concatenate([s.x_train, np.ones((len(s.x_train), 1), np.float32)], axis=1).astype(np.float64)
        y = (s.y_train[:, None] == np.asarray(s.classes)[None]).astype(np.float64)
        w = np.linalg.solve(x.T @ x + 1e-2 * np.eye(x.shape[1]), x.T @ y)
        out.append(float(np.mean(np.argmax(x @ w, 1) != np.searchsorted(s.classes, s.y_train))))
    return out


@registry.experiment("autoactivator/cil")
def cil(config, workdir) -> Result:
    """The benchmark table: AutoActivator, its ablations and the baselines on every benchmark."""
    workdir = make_workdir(workdir)
    rows = Rows(workdir / "rows.jsonl")
    metrics: dict[str, float] = {}
    claims, figures, tables, lengths = [], [], [], []
    for benchmark in config.benchmarks:
        bdir = workdir / benchmark
        stream, backbone_acc = build_stream(config, benchmark, bdir)
        sizes = [len(s.y_test) for s in stream]
        lengths.append(f"{benchmark} {len(stream)}")
        progress.log(f"{benchmark}: {len(stream)} sessions, {sum(len(s.y_train) for s in stream)} training "
                     f"examples, {stream[0].dim} features")
        runs: dict[str, list[dict]] = {m: [] for m in OURS + tuple(config.methods)}
        for seed in config.seeds:
            for variant, changes in VARIANTS.items():
                key = f"{benchmark}/{variant}/seed{seed}"
                row = rows.get(key) or rows.add(key, **run_autoactivator(
                    stream, growth_config(config, benchmark, **changes), seed))
                runs[variant].append(row)
                if variant == "autoactivator":
                    runs["no_reactivation"].append(dict(row, acc=row["acc_no_reactivation"]))
                progress.log(f"{key}: final {100 * cm.final_accuracy(row['acc'], sizes):.2f}%, units {row['units']}")
            for method in config.methods:
                key = f"{benchmark}/{method}/seed{seed}"
                row = rows.get(key)
                if row is None:
                    run = baselines.run_baseline(method, stream, baseline_config(config, benchmark),
                                                 bdir / "baselines", seed)
                    row = rows.add(key, acc=run.acc.tolist(), seconds=run.seconds)
                runs[method].append(row)
                progress.log(f"{key}: final {100 * cm.final_accuracy(row['acc'], sizes):.2f}%")
        m = summarize(runs, sizes)
        if backbone_acc is not None:
            m["backbone_session1_accuracy"] = backbone_acc
        difficulty = within_session_difficulty(stream)
        for t, d in enumerate(difficulty):
            m[f"difficulty_session{t + 1}"] = d
        metrics.update({f"{benchmark}/{k}": v for k, v in m.items()})
        claims += benchmark_claims(config, benchmark, m, difficulty, len(stream), runs)
        tables.append(benchmark_table(benchmark, m, len(stream), len(config.seeds)))
        figures.append(plot_curves(benchmark, runs, sizes, workdir / f"{benchmark}_curves.png"))
    if config.sweep.tolerances:
        m, sweep_claims, table, figure = tolerance_sweep(config, rows, workdir)
        metrics.update(m)
        claims += sweep_claims
        tables.append(table)
        figures.append(figure)
    (workdir / "tables.md").write_text("\n\n".join(tables) + "\n")
    first = config.benchmarks[0]
    metrics["final_accuracy"] = metrics[f"{first}/autoactivator/final"]
    return Result(metrics=metrics, headline="final_accuracy", claims=claims, figures=figures,
                  notes=(f"sessions: {', '.join(lengths)}; seeds {tuple(config.seeds)}; "
                         f"tables in {workdir / 'tables.md'}."))


def tolerance_sweep(config, rows: Rows, workdir: pathlib.Path):
    """Units against final accuracy as the residual tolerance varies, with and without the
    supervisory check (benchmark `config.sweep.benchmark`, seeds `config.sweep.seeds`)."""
    benchmark = config.sweep.benchmark
    stream, _ = build_stream(config, benchmark, workdir / benchmark)
    sizes = [len(s.y_test) for s in stream]
    m: dict[str, float] = {}
    points = {True: [], False: []}
    for check in (True, False):
        name = "check" if check else "no_check"
        for tol in config.sweep.tolerances:
            finals, units = [], []
            for seed in config.sweep.seeds:
                key = f"{benchmark}/sweep/{name}/tol{tol}/seed{seed}"
                cfg = growth_config(config, benchmark, check=check, tolerance=float(tol),
                                    max_units=int(config.sweep.max_units))
                row = rows.get(key) or rows.add(key, **run_autoactivator(stream, cfg, seed))
                finals.append(cm.final_accuracy(row["acc"], sizes))
                units.append(float(sum(row["units"])))
            prefix = f"sweep/{name}/tol{tol}"
            m[f"{prefix}/final"], m[f"{prefix}/final_std"] = mean_std(finals)
            m[f"{prefix}/units_total"], m[f"{prefix}/units_total_std"] = mean_std(units)
            points[check].append((m[f"{prefix}/units_total"], m[f"{prefix}/final"]))
            progress.log(f"sweep {name} tolerance {tol}: {m[f'{prefix}/units_total']:.0f} units, "
                         f"final {100 * m[f'{prefix}/final']:.2f}%")
    # at the sizes both curves cover, the check's accuracy minus the unchecked curve's (interpolated)
    unchecked = sorted(points[False])
    gaps = [acc - np.interp(u, [p[0] for p in unchecked], [p[1] for p in unchecked])
            for u, acc in points[True] if unchecked[0][0] <= u <= unchecked[-1][0]]
    label = BENCHMARKS[benchmark]
    claims = [Claim(
        f"{label}: at the same number of units, growth under the supervisory check is at least as accurate as "
        "unchecked random growth (tolerance sweep)",
        "; ".join(f"tol {tol}: {m[f'sweep/check/tol{tol}/units_total']:.0f} units {100 * m[f'sweep/check/tol{tol}/final']:.1f}% "
                  f"vs {m[f'sweep/no_check/tol{tol}/units_total']:.0f} units {100 * m[f'sweep/no_check/tol{tol}/final']:.1f}%"
                  for tol in config.sweep.tolerances)
        + (f"; mean gap at equal units {100 * np.mean(gaps):+.2f} points" if gaps else "; the curves do not overlap"),
        "near-minimal networks", verdict(bool(np.mean(gaps) >= -0.005) if gaps else None))]
    lines = [f"### Tolerance sweep, {label} ({len(config.sweep.seeds)} seed(s), max {config.sweep.max_units} units a session)\n",
             "| tolerance | units, check | final %, check | units, no check | final %, no check |", "|---|---|---|---|---|"]
    for tol in config.sweep.tolerances:
        c, n = f"sweep/check/tol{tol}", f"sweep/no_check/tol{tol}"
        lines.append(f"| {tol} | {m[f'{c}/units_total']:.0f} | {100 * m[f'{c}/final']:.2f} ± {100 * m[f'{c}/final_std']:.2f} | "
                     f"{m[f'{n}/units_total']:.0f} | {100 * m[f'{n}/final']:.2f} ± {100 * m[f'{n}/final_std']:.2f} |")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for check, label_ in ((True, "supervisory check"), (False, "no check (random batches)")):
        u, a = zip(*sorted(points[check]))
        ax.plot(u, 100 * np.asarray(a), marker="o", label=label_)
    ax.set(xlabel="units after the last session", ylabel="final accuracy (%)", title=f"{label}: tolerance sweep")
    ax.legend(fontsize=8)
    figure = save_figure(fig, workdir / f"{benchmark}_sweep.png")
    return m, claims, "\n".join(lines), figure


def summarize(runs: dict[str, list[dict]], sizes) -> dict[str, float]:
    """Mean and std over seeds of every method's metrics."""
    m: dict[str, float] = {}
    for method, rs in runs.items():
        if not rs:
            continue
        values = {
            "aia": [cm.average_incremental_accuracy(r["acc"], sizes) for r in rs],
            "final": [cm.final_accuracy(r["acc"], sizes) for r in rs],
            "forgetting": [cm.forgetting(r["acc"]) for r in rs],
            "seconds_per_session": [float(np.mean(r["seconds"])) for r in rs],
        }
        if "units" in rs[0]:
            values["units_total"] = [float(sum(r["units"])) for r in rs]
            units = np.asarray([r["units"] for r in rs], np.float64)
            for t, u in enumerate(units.mean(axis=0)):
                m[f"{method}/units_session{t + 1}"] = float(u)
        for name, v in values.items():
            m[f"{method}/{name}"], m[f"{method}/{name}_std"] = mean_std(v)
    return m


def fewer_units_every_seed(runs: dict[str, list[dict]], a: str, b: str) -> bool:
    """Method `a` ends with fewer units than `b` under every seed (paired by seed)."""
    return all(sum(ra["units"]) < sum(rb["units"]) for ra, rb in zip(runs[a], runs[b]))


def benchmark_claims(config, benchmark: str, m: dict[str, float], difficulty, sessions: int,
                     runs: dict[str, list[dict]]) -> list[Claim]:
    label = BENCHMARKS[benchmark]
    if sessions < 3 or len(config.seeds) < 2:
        note = " (tiny run: too few sessions or seeds to judge)"
    else:
        note = ""

    def fin(method):
        return f"{100 * m[f'{method}/final']:.1f} ± {100 * m[f'{method}/final_std']:.1f}%"

    def beats(a, b):
        if note:
            return None
        gap = m[f"{a}/final"] - m[f"{b}/final"]
        return gap > 2 * np.hypot(m[f"{a}/final_std"], m[f"{b}/final_std"]) and gap > 0.01

    methods = set(config.methods)
    claims = []
    if {"finetune", "ewc"} <= methods:
        claims.append(Claim(
            f"{label}: rehearsal-free AutoActivator beats fine-tuning and EWC on final accuracy",
            f"AutoActivator {fin('autoactivator')} vs fine-tuning {fin('finetune')}, EWC {fin('ewc')}{note}",
            "AutoActivator above the regularisation baselines on Split (Fashion-)MNIST (tables not available to us)",
            verdict(None if note else bool(beats("autoactivator", "finetune") and beats("autoactivator", "ewc")))))
    if "joint" in methods:
        claims.append(Claim(
            f"{label}: AutoActivator lands between fine-tuning and joint training",
            f"fine-tuning {fin('finetune') if 'finetune' in methods else 'n/a'} < AutoActivator "
            f"{fin('autoactivator')} < joint {fin('joint')}{note}", "",
            verdict(None if note else bool(m["joint/final"] > m["autoactivator/final"]
                                           and ("finetune" not in methods or beats("autoactivator", "finetune"))))))
    if "replay" in methods:
        claims.append(Claim(
            f"{label}: rehearsal-free AutoActivator matches or beats a replay buffer of "
            f"{config.baseline.buffer_size} stored examples",
            f"AutoActivator {fin('autoactivator')} vs replay {fin('replay')}{note}",
            "competitive with rehearsal methods without storing data",
            verdict(None if note else m["autoactivator/final"] >= m["replay/final"] - 0.01)))
    claims.append(Claim(
        f"{label}: reactivation is what keeps old classes: without it (every unit active) accuracy falls",
        f"final {fin('autoactivator')} with vs {fin('no_reactivation')} without{note}", "",
        verdict(None if note else beats("autoactivator", "no_reactivation"))))
    claims.append(Claim(
        f"{label}: the supervisory mechanism gives a more compact network (fewer units to the same tolerance, "
        "under every seed)",
        f"units {m['autoactivator/units_total']:.0f} ± {m['autoactivator/units_total_std']:.0f} with the check vs "
        f"{m['no_check/units_total']:.0f} ± {m['no_check/units_total_std']:.0f} without; final "
        f"{fin('autoactivator')} vs {fin('no_check')}{note}", "near-minimal expansion",
        verdict(None if note else fewer_units_every_seed(runs, "autoactivator", "no_check"))))
    claims.append(Claim(
        f"{label}: connecting new units to the existing ones (knowledge transfer) needs fewer new units (every seed)",
        f"units {m['autoactivator/units_total']:.0f} ± {m['autoactivator/units_total_std']:.0f} connected vs "
        f"{m['no_connect/units_total']:.0f} ± {m['no_connect/units_total_std']:.0f} reading the input only; final "
        f"{fin('autoactivator')} vs {fin('no_connect')}{note}", "new nodes join existing ones for knowledge transfer",
        verdict(None if note else fewer_units_every_seed(runs, "autoactivator", "no_connect"))))
    units = [m[f"autoactivator/units_session{t + 1}"] for t in range(sessions)]
    if sessions >= 4 and np.all(np.isfinite(difficulty)):
        rho = float(scipy.stats.spearmanr(units, difficulty).statistic)
        claims.append(Claim(
            f"{label}: the units added per session track the session's difficulty (Spearman rho >= 0.5 with the "
            "error of a within-session linear classifier)",
            f"units {', '.join(f'{u:.0f}' for u in units)}; linear error "
            f"{', '.join(f'{100 * d:.1f}%' for d in difficulty)}; rho = {rho:.2f}{note}",
            "growth size commensurate with the task's complexity", verdict(None if note else rho >= 0.5)))
    return claims


def benchmark_table(benchmark: str, m: dict[str, float], sessions: int, seeds: int) -> str:
    head = (f"### {BENCHMARKS[benchmark]} ({sessions} sessions, {seeds} seed{'s' if seeds > 1 else ''}, mean ± std)\n\n"
            "| method | avg. incremental acc. % | final acc. % | forgetting % | units per session | s per session |\n"
            "|---|---|---|---|---|---|")
    lines = [head]
    for method, name in METHOD_NAMES.items():
        if f"{method}/final" not in m:
            continue

        def pct(key):
            return f"{100 * m[f'{method}/{key}']:.2f} ± {100 * m[f'{method}/{key}_std']:.2f}"

        units = "/".join(f"{m[f'{method}/units_session{t + 1}']:.0f}" for t in range(sessions)) \
            if f"{method}/units_session1" in m else "–"
        lines.append(f"| {name.strip()} | {pct('aia')} | {pct('final')} | {pct('forgetting')} | {units} | "
                     f"{m[f'{method}/seconds_per_session']:.1f} |")
    return "\n".join(lines)


def plot_curves(benchmark: str, runs: dict[str, list[dict]], sizes, out: pathlib.Path) -> str:
    """Accuracy on all seen classes after each session (mean over seeds), every method."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for method, rs in runs.items():
        if not rs:
            continue
        curve = np.mean([cm.step_accuracies(r["acc"], sizes) for r in rs], axis=0)
        style = "-" if method == "autoactivator" else ("--" if method in OURS else ":")
        ax.plot(np.arange(1, len(curve) + 1), 100 * curve, style, marker="o", ms=3,
                label=METHOD_NAMES[method].strip())
    ax.set(xlabel="session", ylabel="accuracy on seen classes (%)", title=BENCHMARKS[benchmark], ylim=(0, 101),
           xticks=np.arange(1, len(sizes) + 1))
    ax.legend(fontsize=7)
    return save_figure(fig, out)


@registry.experiment("autoactivator/reproduce")
def reproduce(config, workdir) -> Result:
    """The parts of configs/reproduce.py at one scale, as one Result."""
    return gather_parts("autoactivator", config, pathlib.Path(__file__).parent / "configs", workdir)

