"""Euclid experiments: the Book I benchmark (`euclid/book`), the equivalence checker on hand-made
variants (`euclid/variants`), the autoformalization harness (`euclid/autoformalize`) and
`euclid/reproduce` (all three at one scale)."""

from __future__ import annotations

import json
import pathlib
import time

from jaxml import progress
from jaxml.core import registry
from jaxml.core.experiment import Result, gather_parts, make_workdir
from jaxml.papers.euclid import autoformalize, book, checker, equivalence, syntax, system_e, variants

# A proof of I.1 with a wrong step: c is not between a and b.
WRONG_PROOF = """
theorem I.1: forall (a b : Point), a != b =>
  exists (c : Point), |a b| = |a c| and |a b| = |b c| and c != a and c != b
proof
  obtain α by circle(a, b)
  obtain β by circle(b, a)
  obtain c by intersection_circles(α, β)
  have between(a, c, b)
qed
"""


@registry.experiment("euclid/book")
def book_experiment(config, workdir) -> Result:
    """Parses Book I, checks every statement's hypotheses for satisfiability and every proof."""
    workdir = make_workdir(workdir)
    t0 = time.perf_counter()
    book.book1.cache_clear()
    book.book1()
    parse_s = time.perf_counter() - t0
    names = list(config.names) if config.names else None
    report = book.check_book(names=names, timeout_s=config.timeout_s, skip_proofs=tuple(config.skip_proofs))
    wrong = checker.check_text(WRONG_PROOF, timeout_s=config.timeout_s)[0]
    rows = []
    for name, v in report.satisfiable.items():
        p = report.proofs.get(name)
        rows.append(dict(name=name, hypotheses=v.status, sat_seconds=v.seconds, instances=v.n_instances,
                         proof=None if p is None else p.ok, proof_seconds=None if p is None else p.seconds,
                         proof_steps=None if p is None else len(p.steps),
                         failure=None if p is None else p.failure))
        progress.log(f"{name}: hypotheses {v.status} ({v.seconds:.2f} s)"
                     + ("" if p is None else f", proof {'checks' if p.ok else 'FAILS'} ({p.seconds:.2f} s)"))
    (workdir / "book.json").write_text(json.dumps(dict(rows=rows, wrong_step=wrong.failure), indent=1))
    families = system_e.count_by_family()
    props = book.statements()
    sat = {n: v for n, v in report.satisfiable.items() if n in props}
    proofs = {n: p for n, p in report.proofs.items() if n in props}
    lemmas = {n: p for n, p in report.proofs.items() if n not in props}
    proofs_ok = sum(p.ok for p in proofs.values())
    metrics = {
        "statements_parsed": float(len(props)),
        "statements_satisfiable": float(sum(v.status == "sat" for v in sat.values())),
        "statements_checked": float(len(sat)),
        "proofs_checked": float(proofs_ok),
        "proofs_total": float(len(proofs)),
        "lemmas_checked": float(sum(p.ok for p in lemmas.values())),
        "proof_obligations": float(sum(len(p.steps) for p in report.proofs.values())),
        "seconds_satisfiability": sum(v.seconds for v in report.satisfiable.values()),
        "seconds_proofs": sum(p.seconds for p in report.proofs.values()),
        "seconds_parse": parse_s,
        "wrong_step_rejected": float(not wrong.ok and "not entailed" in wrong.failure),
        "axioms_diagrammatic": float(families.get("diagrammatic", 0)),
        "axioms_metric": float(families.get("metric", 0) + families.get("rule:metric", 0)),
        "axioms_transfer": float(families.get("transfer", 0) + families.get("rule:transfer", 0)),
        "rules_construction": float(families.get("rule:construction", 0)),
        "rules_superposition": float(families.get("rule:superposition", 0)),
    }
    return Result(metrics=metrics, headline="proofs_checked",
                  notes=f"{len(props)} statements parsed; hypotheses of {len(sat)} checked "
                        f"({int(metrics['statements_satisfiable'])} satisfiable); proofs check for {proofs_ok}/{len(proofs)} "
                        f"propositions ({', '.join(n for n, p in proofs.items() if p.ok)}) and "
                        f"{int(metrics['lemmas_checked'])}/{len(lemmas)} lemmas; a wrong step is rejected with: "
                        f"{wrong.failure[:160]}")


@registry.experiment("euclid/variants")
def variants_experiment(config, workdir) -> Result:
    """The equivalence checker on the hand-made variants: accuracy per kind, solver time."""
    workdir = make_workdir(workdir)
    sts = book.statements()
    vs = [v for v in variants.make_variants() if not config.names or v.ground in config.names]
    rows, metrics = [], {}
    for v in vs:
        r = equivalence.check_equivalence(sts[v.ground], v.statement, timeout_s=config.timeout_s)
        rows.append(dict(ground=v.ground, kind=v.kind, expected=v.expected, got=r.category,
                         seconds=r.solver_seconds, unifications=r.n_unifications,
                         test=syntax.format_statement(v.statement, header=False)))
    for kind in variants.EXPECTED:
        sel = [r for r in rows if r["kind"] == kind]
        if sel:
            metrics[f"accuracy_{kind}"] = sum(r["got"] == r["expected"] for r in sel) / len(sel)
    metrics["accuracy"] = sum(r["got"] == r["expected"] for r in rows) / len(rows)
    metrics["n_variants"] = float(len(rows))
    metrics["solver_seconds_total"] = sum(r["seconds"] for r in rows)
    metrics["solver_seconds_max"] = max(r["seconds"] for r in rows)
    (workdir / "variants.json").write_text(json.dumps(rows, indent=1))
    wrong = [f"{r['ground']}/{r['kind']}: {r['got']}" for r in rows if r["got"] != r["expected"]]
    return Result(metrics=metrics, headline="accuracy",
                  notes=f"{len(rows)} variants of {len(rows) // 5} statements; misclassified: {wrong or 'none'}")


def _llm(config):
    if config.llm == "scripted":
        sts = book.statements()
        answers = {}
        for i, name in enumerate(config.names):
            st = sts[name]
            if i % 2 == 0:        # the ground truth, renamed by the printer's round trip: equivalent
                answers[name] = syntax.format_statement(st, header=False)
            else:                 # a flawed formalisation: the hypotheses dropped
                answers[name] = syntax.format_statement(
                    syntax.Statement(name, st.universals, (), st.existentials, st.conclusions), header=False)
        return autoformalize.ScriptedLLM(answers)
    return autoformalize.make_llm(config.llm, model=config.model, batch_size=config.batch_size)


@registry.experiment("euclid/autoformalize")
def autoformalize_experiment(config, workdir) -> Result:
    """Few-shot autoformalization of Book I statements, scored with the equivalence checker."""
    workdir = make_workdir(workdir)
    names = list(config.names) if config.names else None
    llm = _llm(config)
    report = autoformalize.run(llm, names, max_new_tokens=config.max_new_tokens, timeout_s=config.timeout_s)
    rows = [dict(name=r.name, category=r.category, output=r.output, detail=r.detail) for r in report.rows]
    (workdir / "autoformalize.json").write_text(json.dumps(rows, indent=1))
    n = len(report.rows)
    metrics = {f"count_{c}": float(k) for c, k in report.counts.items()}
    metrics.update(n_scored=float(n), equivalent_rate=report.equivalent_rate,
                   parse_rate=1 - report.counts["parse_error"] / max(1, n),
                   generate_seconds=report.generate_seconds, solver_seconds=report.solver_seconds)
    return Result(metrics=metrics, headline="equivalent_rate",
                  notes=f"llm={config.llm}{'/' + config.model if config.model else ''}, greedy, "
                        f"{config.max_new_tokens} new tokens, {len(autoformalize.EXAMPLES)} few-shot examples "
                        f"{autoformalize.EXAMPLES}; {n} propositions: {report.counts}")


@registry.experiment("euclid/reproduce")
def reproduce(config, workdir) -> Result:
    """The Book I benchmark, the equivalence-checker variants and the autoformalization harness."""
    return gather_parts("euclid", config, pathlib.Path(__file__).parent / "configs", workdir)
