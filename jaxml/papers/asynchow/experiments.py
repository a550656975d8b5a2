"""AsyncHow experiments: the exact solver (`asynchow/solver`), the LLM benchmark (`asynchow/benchmark`), the
graph-native against the text-reading model (`asynchow/graph_vs_text`), and `asynchow/reproduce`.

`asynchow/benchmark` runs the prompt methods of the paper (zero-shot, CoT, BaG, k-shot, k-shot CoT and PLaG
with each graph type) and our LLM-graph + solver pipeline over one backend: SmolLM2-135M-Instruct in this
process, or any OpenAI-compatible server (`config.llm` = its URL, `config.model` = the served name). The
tasks are the fixed generated test split or, with `config.release_path`, the release's own files (all of
them, or the first `num_tasks`). Accuracy by method x plan type x complexity bin, with Wilson intervals;
the solver's own answers through the same parser as the oracle row. Generations are cached in the
workdir, so a killed run resumes.
"""

from __future__ import annotations

import json
import pathlib
import re
import time

import numpy as np

from jaxml import progress
from jaxml.core import registry
from jaxml.core.experiment import Claim, Result, gather_parts, make_workdir, pyplot, save_figure, verdict
from jaxml.llm.backends import make_llm
from jaxml.llm.cache import GenerationCache
from jaxml.papers.asynchow import evaluate, generator, metrics as am, neural, release
from jaxml.papers.asynchow.plan import critical_path, critical_path_enumerate

PLAN_TYPES = ("sequential", "parallel", "async")


def _slug(name: str) -> str:
    """A metric-key form of a name: 'LLM graph + solver' -> 'llm_graph_solver'."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _bin_key(label: str) -> str:
    """A complexity bin's metric key: '<=12' -> 'le12', '13-16' -> '13_16', '>=26' -> 'ge26'."""
    return label.replace("<=", "le").replace(">=", "ge").replace("-", "_")


# --- The solver ----------------------------------------------------------------------------------------

@registry.experiment("asynchow/solver")
def solver(config, workdir) -> Result:
    """The DP solver against path enumeration on generated plans (every answer equal), and their speed."""
    make_workdir(workdir)
    plans = generator.generate_plans(config.num_plans, config.seed, text_source="synthetic")
    t0 = time.perf_counter()
    dp = [critical_path(p) for p in plans]
    t_dp = time.perf_counter() - t0
    t0 = time.perf_counter()
    enum = [critical_path_enumerate(p) for p in plans]
    t_enum = time.perf_counter() - t0
    agree = sum(a == b for a, b in zip(dp, enum))
    intervals = sum(not g.exact for g in dp)
    metrics = dict(plans=float(len(plans)), agree=float(agree), agree_rate=agree / len(plans),
                   interval_golds=float(intervals), dp_us_per_plan=1e6 * t_dp / len(plans),
                   enumeration_us_per_plan=1e6 * t_enum / len(plans), speedup=t_enum / max(t_dp, 1e-12))
    progress.log(f"asynchow solver: DP = enumeration on {agree}/{len(plans)} plans; DP {metrics['dp_us_per_plan']:.0f} "
                 f"us/plan, enumeration {metrics['enumeration_us_per_plan']:.0f} us/plan")
    claims = [Claim(text="The gold answer is the longest START -> END path with interval durations (months [28, 31], "
                         "years [365, 366] days); a DAG dynamic program computes it exactly",
                    ours=f"DP = path enumeration on {agree}/{len(plans)} generated plans ({intervals} with interval "
                         f"golds), {metrics['speedup']:.1f}x faster",
                    paper="the release enumerates all paths (a DP on the upper bound reproduces its task_time "
                          "on all 1598 async tasks, per the anchors)",
                    verdict=verdict(agree == len(plans)))]
    return Result(metrics=metrics, headline="agree_rate", claims=claims,
                  notes=f"{len(plans)} generated plans (seed {config.seed}), one process, timed back to back.")


# --- The LLM benchmark ---------------------------------------------------------------------------------

def _tasks(config) -> tuple[list, str]:
    if config.release_path:
        tasks = list(release.load_tasks(config.release_path))
        return tasks[:config.num_tasks] if config.num_tasks else tasks, f"the release's files ({config.release_path})"
    plans = generator.split("test", config.num_tasks)
    return release.make_tasks(plans), f"the generated test split (first {len(plans)} plans)"


def _llm(config):
    if config.llm == "smollm2":
        return make_llm("smollm2", batch_size=config.batch_size, prompt_bucket=64, row_multiple=config.row_multiple)
    return make_llm(config.llm, model=config.model, batch_size=config.batch_size)


def _bin_figure(workdir, rows, methods, title) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    bins = list(generator.COMPLEXITY_BINS)
    for method in methods:
        table = am.accuracy_table([r for r in rows if r["method"] == method], ("complexity",))
        xs = [i for i, b in enumerate(bins) if (b,) in table]
        ax.plot(xs, [table[(bins[i],)].accuracy for i in xs], marker="o", label=method)
    ax.set_xticks(range(len(bins)), bins)
    ax.set_xlabel("complexity |V| + |E|")
    ax.set_ylabel("accuracy")
    ax.set_ylim(-0.03, 1.03)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    return save_figure(fig, pathlib.Path(workdir) / f"{_slug(title)[:40]}.png")


def _table_metrics(rows, method_names) -> dict[str, float]:
    out = {}
    for method in method_names:
        sub = [r for r in rows if r["method"] == method]
        if not sub:
            continue
        key = _slug(method)
        c = am.cell([r["correct"] for r in sub])
        out[f"{key}_accuracy"], out[f"{key}_lo"], out[f"{key}_hi"] = c.accuracy, c.lo, c.hi
        for (group,), cc in am.accuracy_table(sub, ("plan_type",)).items():
            out[f"{key}_{group}_accuracy"] = cc.accuracy
        for (group,), cc in am.accuracy_table(sub, ("complexity",)).items():
            out[f"{key}_bin_{_bin_key(group)}_accuracy"] = cc.accuracy
        slope, se = am.complexity_slope([r["ve_count"] for r in sub], [r["correct"] for r in sub])
        if np.isfinite(slope):
            out[f"{key}_slope_per10"], out[f"{key}_slope_se"] = slope, se
    return out


def accuracy_markdown(rows, methods, groups=("plan_type", "complexity")) -> str:
    """A Markdown table: one row per method, accuracy (correct/count) per plan type and complexity bin."""
    cols = [(g, v) for g, values in (("plan_type", PLAN_TYPES), ("complexity", generator.COMPLEXITY_BINS))
            if g in groups for v in values]
    lines = ["| method | all | " + " | ".join(v for _, v in cols) + " |", "|---" * (len(cols) + 2) + "|"]
    for method in methods:
        sub = [r for r in rows if r["method"] == method]
        if not sub:
            continue
        c = am.cell([r["correct"] for r in sub])
        cells = [f"{c.accuracy:.2f} ({c.correct}/{c.count})"]
        for g, v in cols:
            hit = [r["correct"] for r in sub if r[g] == v]
            cells.append(f"{np.mean(hit):.2f} ({int(np.sum(hit))}/{len(hit)})" if hit else "-")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


@registry.experiment("asynchow/benchmark")
def benchmark(config, workdir) -> Result:
    """The paper's prompt methods and the LLM-graph + solver pipeline on AsyncHow tasks, one backend."""
    workdir = make_workdir(workdir)
    tasks, source = _tasks(config)
    llm = _llm(config)
    label = "SmolLM2-135M-Instruct (local)" if config.llm == "smollm2" else f"{config.model} via {config.llm}"
    cache = GenerationCache(workdir / "generations.jsonl")
    shots = evaluate.illustration_plans()
    progress.log(f"asynchow benchmark: {len(tasks)} tasks from {source}; methods {list(config.methods)}; {label}")
    rows = evaluate.run_benchmark(llm, tasks, tuple(config.methods), cache, shots=shots,
                                  template_seed=config.seed, answer_tokens=config.answer_tokens,
                                  cot_tokens=config.cot_tokens, batch=config.batch_size)
    solver_tasks = tasks
    if config.graph_solver_tasks > len(tasks) and not config.release_path:
        solver_tasks = release.make_tasks(generator.split("test", config.graph_solver_tasks))
    gs_rows = evaluate.run_benchmark(llm, solver_tasks, (), cache, template_seed=config.seed,
                                     batch=config.batch_size, graph_solver_mode="per_constraint")
    rows += [r for r in gs_rows if r["method"] == evaluate.GRAPH_SOLVER]
    if config.whole_list:
        whole = evaluate.run_benchmark(llm, tasks, (), cache, shots=shots, template_seed=config.seed,
                                       batch=config.batch_size, graph_solver_mode="whole")
        rows += [r for r in whole if r["method"] == evaluate.GRAPH_SOLVER_WHOLE]
    with (workdir / "rows.jsonl").open("w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    methods = list(config.methods) + [evaluate.GRAPH_SOLVER] + ([evaluate.GRAPH_SOLVER_WHOLE] if config.whole_list
                                                                else []) + [evaluate.ORACLE]
    metrics = _table_metrics(rows, methods)
    gs_sub = [r for r in rows if r["method"] == evaluate.GRAPH_SOLVER]
    metrics["graph_solver_edges_exact"] = float(np.mean([r["edges_exact"] for r in gs_sub]))
    metrics["tasks"], metrics["graph_solver_tasks"] = float(len(tasks)), float(len(gs_sub))
    table = accuracy_markdown(rows, methods)
    (workdir / "accuracy.md").write_text(table + "\n")
    progress.log("asynchow accuracy:\n" + table)
    figure = _bin_figure(workdir, rows, methods[:-1], f"AsyncHow accuracy by complexity, {label}")
    claims = _benchmark_claims(metrics, config, label, len(tasks), len(gs_sub))
    return Result(metrics=metrics, headline=f"{_slug(evaluate.GRAPH_SOLVER)}_accuracy", figures=[figure], claims=claims,
                  notes=f"{label}; {len(tasks)} tasks from {source} for the prompt methods, {len(gs_sub)} for the "
                        f"LLM-graph + solver pipeline (one edge per constraint sentence); greedy decoding; "
                        f"accuracy table in {workdir / 'accuracy.md'}.")


def _benchmark_claims(m, config, label, n, n_gs) -> list[Claim]:
    def acc(method):
        k = _slug(method)
        return m.get(f"{k}_accuracy", float("nan")), m.get(f"{k}_lo", float("nan")), m.get(f"{k}_hi", float("nan"))

    enough = n >= 40
    claims = []
    direct = [x for x in config.methods]
    best = max(direct, key=lambda x: acc(x)[0]) if direct else None
    gs_key = _slug(evaluate.GRAPH_SOLVER)
    gs = acc(evaluate.GRAPH_SOLVER)
    if best is not None:
        b = acc(best)
        claims.append(Claim(
            text="Graphs help LLMs reason about asynchronous plans (PLaG); here the graph is extracted by the LLM "
                 "under a grammar and the arithmetic is exact",
            ours=f"{label}: LLM graph + solver {gs[0]:.3f} [{gs[1]:.3f}, {gs[2]:.3f}] on {n_gs} tasks vs the best "
                 f"prompt method ({best}) {b[0]:.3f} [{b[1]:.3f}, {b[2]:.3f}] on {n}",
            paper="PLaG gives state-of-the-art results (GPT-3.5/4, Command, LLaMA-2, Mistral; tables not available to us)",
            verdict=verdict(gs[1] > b[2] if enough else None)))
    slope, se = m.get(f"{gs_key}_slope_per10", float("nan")), m.get(f"{gs_key}_slope_se", float("nan"))
    claims.append(Claim(
        text="Accuracy falls as the task's complexity |V| + |E| grows",
        ours=f"LLM graph + solver: {slope:+.3f} accuracy per +10 of |V| + |E| (s.e. {se:.3f}, {n_gs} tasks)",
        paper="drastic degradation with complexity even with PLaG",
        verdict=verdict(slope + 2 * se < 0 if n_gs >= 40 and np.isfinite(slope) else None)))
    if "zero-shot" in config.methods:
        z = acc("zero-shot")
        plag = [x for x in direct if x.startswith("PLaG")]
        p = max((acc(x) for x in plag), default=(float("nan"),) * 3)
        best_plag = (f"best PLaG {p[0]:.3f} [{p[1]:.3f}, {p[2]:.3f}]" if plag
                     else "PLaG not run at this scale (methods=...)")
        claims.append(Claim(
            text="Without illustrations LLMs do poorly; PLaG (graph + k-shot CoT) improves on them",
            ours=f"{label}: zero-shot {z[0]:.3f} [{z[1]:.3f}, {z[2]:.3f}], {best_plag} on {n} tasks",
            paper="poor without illustrations; PLaG boosts every model (numbers not available to us)",
            verdict=verdict(p[1] > z[2] if enough and plag else None)))
    return claims


# --- Graph-native against text-reading models ------------------------------------------------------------

MODEL_NAMES = {"graph": "graph model", "text": "text model", "graph_all": "graph model (all test plans)"}


@registry.experiment("asynchow/graph_vs_text")
def graph_vs_text(config, workdir) -> Result:
    """The same small transformer reading the plan as a graph or as text, trained with the one loop on
    generated plans (critical-parent pointers), scored on held-out plans by complexity, one run per seed."""
    workdir = make_workdir(workdir)
    runs = []
    for seed in config.seeds:
        c = neural.neural_config(config.scale, seed=seed)
        if config.num_steps > 0:
            c.num_steps = config.num_steps
        if config.train_plans > 0:
            c.data.train_plans = config.train_plans
        progress.log(f"asynchow graph vs text: seed {seed}, {c.num_steps} steps on {c.data.train_plans} plans each")
        runs.append(neural.train_and_compare(c, workdir / f"seed{seed}"))
    first = runs[0]
    rows = [dict(method=MODEL_NAMES[m], seed=seed, complexity=b, plan_type=t, ve_count=ve, correct=bool(ok))
            for seed, run in zip(config.seeds, runs) for m in ("graph", "text")
            for b, t, ve, ok in zip(run["bins"], run["types"], run["ve_counts"], run["per_plan"][m]["correct"])]
    metrics = {}
    for m in ("graph", "text", "graph_all"):
        accs = [r["accuracy"][m] for r in runs]
        metrics[f"{m}_accuracy"] = float(np.mean(accs))
        metrics[f"{m}_accuracy_seed_std"] = float(np.std(accs, ddof=1)) if len(accs) > 1 else 0.0
        metrics[f"{m}_pointer_accuracy"] = float(np.mean([r["pointer_accuracy"][m] for r in runs]))
        for b in generator.COMPLEXITY_BINS:
            vals = [r["by_bin"][m][b][0] for r in runs if b in r["by_bin"][m] and r["by_bin"][m][b][1]]
            if vals:
                metrics[f"{m}_bin_{_bin_key(b)}_accuracy"] = float(np.mean(vals))
        for t in PLAN_TYPES:
            vals = [r["by_type"][m][t][0] for r in runs if t in r["by_type"][m] and r["by_type"][m][t][1]]
            if vals:
                metrics[f"{m}_{t}_accuracy"] = float(np.mean(vals))
    ve = np.asarray(first["ve_counts"])
    for m in ("graph", "text"):
        sub = [r for r in rows if r["method"] == MODEL_NAMES[m]]
        slope, se = am.complexity_slope([r["ve_count"] for r in sub], [r["correct"] for r in sub])
        metrics[f"{m}_slope_per10"], metrics[f"{m}_slope_se"] = slope, se
        c = am.cell(first["per_plan"][m]["correct"])
        metrics[f"{m}_seed0_lo"], metrics[f"{m}_seed0_hi"] = c.lo, c.hi
        metrics[f"{m}_params"] = float(first["params"][m])
        metrics[f"{m}_train_seconds"] = float(np.mean([r["train_time_s"][m] for r in runs]))
    metrics["test_plans"] = float(ve.size)
    metrics["excluded_test_plans"] = float(sum(first["excluded_test_plans"].values()))
    table = accuracy_markdown(rows, [MODEL_NAMES["graph"], MODEL_NAMES["text"]])
    (workdir / "accuracy.md").write_text(table + "\n")
    progress.log("asynchow graph vs text:\n" + table)
    figure = _bin_figure(workdir, rows, [MODEL_NAMES["graph"], MODEL_NAMES["text"]],
                         f"Trained models on held-out plans ({len(config.seeds)} seed(s))")
    g, t = metrics["graph_accuracy"], metrics["text_accuracy"]
    enough = ve.size >= 200
    claims = [
        Claim(text="Graph structure helps asynchronous plan reasoning (the paper's PLaG claim, controlled): the same "
                   "model reading the plan as a graph beats it reading the plan as text",
              ours=f"held-out plans ({int(ve.size)}, {len(runs)} seed(s)): graph {g:.3f} vs text {t:.3f} plan accuracy "
                   f"(seed 0 Wilson 95%: graph [{metrics['graph_seed0_lo']:.3f}, {metrics['graph_seed0_hi']:.3f}], "
                   f"text [{metrics['text_seed0_lo']:.3f}, {metrics['text_seed0_hi']:.3f}])",
              paper="PLaG (graphs in the prompt) improves every LLM tested",
              verdict=verdict(metrics["graph_seed0_lo"] > metrics["text_seed0_hi"] if enough else None)),
        Claim(text="Accuracy falls as complexity |V| + |E| grows, and graph structure does not remove the fall",
              ours=f"per +10 of |V| + |E|: text {metrics['text_slope_per10']:+.3f} (s.e. {metrics['text_slope_se']:.3f}), "
                   f"graph {metrics['graph_slope_per10']:+.3f} (s.e. {metrics['graph_slope_se']:.3f})",
              paper="drastic degradation with complexity even with PLaG",
              verdict=verdict(metrics["text_slope_per10"] + 2 * metrics["text_slope_se"] < 0
                              and metrics["graph_slope_per10"] + 2 * metrics["graph_slope_se"] < 0 if enough else None)),
    ]
    return Result(metrics=metrics, headline="graph_accuracy", figures=[figure], claims=claims,
                  notes=f"Critical-parent pointers decoded to an exact answer; {int(ve.size)} held-out test plans whose "
                        f"text fits {neural.neural_config(config.scale).model.max_text_len} tokens "
                        f"({int(metrics['excluded_test_plans'])} longer ones left out for both); seeds {tuple(config.seeds)}.")


@registry.experiment("asynchow/reproduce")
def reproduce(config, workdir) -> Result:
    """Solver, LLM benchmark and graph-vs-text models at one scale."""
    return gather_parts("asynchow", config, pathlib.Path(__file__).parent / "configs", workdir,
                        headline_part="benchmark")
