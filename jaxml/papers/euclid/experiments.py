"""Euclid experiments: the Book I benchmark (`euclid/book`), the equivalence checker on hand-made
variants (`euclid/variants`), the autoformalization harness (`euclid/autoformalize`) and
`euclid/reproduce` (all three at one scale)."""

from __future__ import annotations

import json
import pathlib
import time

from jaxml import progress
from jaxml.core import registry
from jaxml.core.experiment import Claim, Result, gather_parts, make_workdir, verdict
from jaxml.papers.euclid import autoformalize, book, checker, equivalence, syntax, system_e, variants
from jaxml.papers.euclid import metrics as M

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
                         proof=None if p is None else p.status, proof_seconds=None if p is None else p.seconds,
                         proof_steps=None if p is None else len(p.steps),
                         uses=None if p is None else list(p.uses),
                         assumptions=None if p is None else list(p.assumptions),
                         warnings=None if p is None else p.warnings,
                         failure=None if p is None else p.failure))
        progress.log(f"{name}: hypotheses {v.status} ({v.seconds:.2f} s)"
                     + ("" if p is None else f", proof {p.status} ({p.seconds:.2f} s)"
                        + (f" assuming {', '.join(p.assumptions)}" if p.assumptions else "")))
    (workdir / "book.json").write_text(json.dumps(dict(rows=rows, wrong_step=wrong.failure), indent=1))
    families = system_e.count_by_family()
    props = book.statements()
    counts = M.book_counts({n: v.status for n, v in report.satisfiable.items()},
                           {n: p.status for n, p in report.proofs.items()}, props)
    checked = [n for n, p in report.proofs.items() if n in props and p.verified]
    conditional = {n: p.assumptions for n, p in report.proofs.items() if p.status == "conditional"}
    cond_text = "; ".join(f"{n} assuming {', '.join(a)}" for n, a in conditional.items())
    warned = {n: p.warnings for n, p in report.proofs.items() if p.warnings}
    wrong_rejected = not wrong.ok and "not entailed" in wrong.failure
    # Assumptions that are proofs of the file left out at this scale (names, skip_proofs) only keep the run
    # from speaking; any other (no proof in the file, or a failed one) makes the claim false.
    not_run = {it.statement.name for it in book.book1() if it.proof is not None} - set(report.proofs)
    open_assumptions = {a for p in report.proofs.values() for a in p.assumptions} - not_run
    if config.scale == "tiny":
        proofs_verdict = None
    elif not wrong_rejected or open_assumptions or not all(p.ok for p in report.proofs.values()):
        proofs_verdict = False
    else:
        proofs_verdict = True if not conditional else None
    metrics = {
        **counts,
        "proofs_with_warnings": float(len(warned)),
        "proof_obligations": float(sum(len(p.steps) for p in report.proofs.values())),
        "seconds_satisfiability": sum(v.seconds for v in report.satisfiable.values()),
        "seconds_proofs": sum(p.seconds for p in report.proofs.values()),
        "seconds_parse": parse_s,
        "wrong_step_rejected": float(wrong_rejected),
        "axioms_diagrammatic": float(families.get("diagrammatic", 0)),
        "axioms_metric": float(families.get("metric", 0) + families.get("rule:metric", 0)),
        "axioms_transfer": float(families.get("transfer", 0) + families.get("rule:transfer", 0)),
        "rules_construction": float(families.get("rule:construction", 0)),
        "rules_superposition": float(families.get("rule:superposition", 0)),
    }
    n_props, n_sat, n_checked = (int(counts[k]) for k in ("statements_parsed", "statements_satisfiable", "statements_checked"))
    n_ok, n_total = int(counts["proofs_checked"]), int(counts["proofs_total"])
    n_lem_ok, n_lem = int(counts["lemmas_checked"]), int(counts["lemmas_total"])
    skipped = ", ".join(config.skip_proofs)
    claims = [
        Claim(text=("Euclid's Elements Book I can be stated in formal system E: every proposition parses and its "
                    "hypotheses are satisfiable"),
              ours=(f"{n_props}/48 statements parse; hypotheses of {n_sat}/{n_checked} checked are satisfiable "
                    f"(z3 over ground axiom instances)"),
              paper="LeanEuclid states the 48 propositions of Book I in Lean 4 over system E",
              # Only a run that checks every statement speaks to "every".
              verdict=verdict(n_props == 48 and n_sat == n_checked if n_checked == n_props else None)),
        Claim(text=("Book I proofs check once an SMT solver fills the diagrammatic gaps, and a wrong step is rejected "
                    "(LeanEuclid: Lean tactics with Z3/cvc5)"),
              ours=(f"{n_ok}/{n_total} proofs check ({', '.join(checked)})"
                    + (f" and {n_lem_ok}/{n_lem} lemmas" if n_lem else "")
                    + (f"; checked only assuming statements not proved in this run: {cond_text}" if conditional else "")
                    + (f"; warnings: {warned}" if warned else "")
                    + f"; wrong step {'rejected' if wrong_rejected else 'NOT rejected'}"
                    + (f"; not checked at {config.scale} scale: {skipped}" if skipped else "")),
              paper="LeanEuclid's Book I proofs check in Lean with the SMT-filled gaps",
              verdict=verdict(proofs_verdict)),
    ]
    return Result(metrics=metrics, headline="proofs_checked", claims=claims,
                  notes=f"{n_props} statements parsed; hypotheses of {n_checked} checked "
                        f"({n_sat} satisfiable); proofs check for {n_ok}/{n_total} "
                        f"propositions ({', '.join(checked)})" + (f" and {n_lem_ok}/{n_lem} lemmas" if n_lem else "")
                        + (f" (not checked at this scale: {skipped})" if skipped else "")
                        + (f"; checked only assuming statements not proved in this run (not counted): {cond_text}"
                           if conditional else "")
                        + f"; a wrong step is rejected with: {wrong.failure[:160]}")


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
    kinds, expected, got = ([r[k] for r in rows] for k in ("kind", "expected", "got"))
    metrics.update({f"accuracy_{k}": a for k, a in M.accuracy_by_kind(kinds, expected, got).items()})
    metrics["accuracy"] = M.accuracy(expected, got)
    metrics["n_variants"] = float(len(rows))
    metrics["solver_seconds_total"] = sum(r["seconds"] for r in rows)
    metrics["solver_seconds_max"] = max(r["seconds"] for r in rows)
    (workdir / "variants.json").write_text(json.dumps(rows, indent=1))
    wrong = [f"{r['ground']}/{r['kind']}: {r['got']}" for r in rows if r["got"] != r["expected"]]
    n_right = sum(e == g for e, g in zip(expected, got))
    claim = Claim(
        text=("An E3-style equivalence checker tells a formalisation equivalent to the ground truth from a stronger, "
              "weaker or unrelated one"),
        ours=(f"{n_right}/{len(rows)} hand-made variants of {len(set(r['ground'] for r in rows))} statements classified "
              f"as expected (renamed and reordered: equivalent; dropped hypothesis: test_implies_ground; weakened "
              f"conclusion: ground_implies_test; unrelated: neither)" + (f"; wrong: {wrong}" if wrong else "")),
        paper="",
        verdict=verdict(metrics["accuracy"] == 1.0 if config.scale != "tiny" else None))
    return Result(metrics=metrics, headline="accuracy", claims=[claim],
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
    constrained = bool(config.get("constrained", False))
    if constrained and config.llm == "scripted":
        raise ValueError("constrained=True needs a local model's logits; the tiny scale's scripted LLM has none")
    report = autoformalize.run(llm, names, max_new_tokens=config.max_new_tokens, timeout_s=config.timeout_s,
                               constrained=constrained)
    rows = [dict(name=r.name, category=r.category, output=r.output, detail=r.detail) for r in report.rows]
    (workdir / "autoformalize.json").write_text(json.dumps(rows, indent=1))
    n = len(report.rows)
    counts = report.counts
    metrics = {f"count_{c}": float(k) for c, k in counts.items()}
    metrics.update(n_scored=float(n), equivalent_rate=report.equivalent_rate,
                   parse_rate=M.rate(n - counts["parse_error"], n),
                   generate_seconds=report.generate_seconds, solver_seconds=report.solver_seconds,
                   forced_tokens=float(report.forced_tokens), constraint_seconds=report.constraint_seconds)
    who = "a scripted fake LLM" if config.llm == "scripted" else (
        "SmolLM2-135M-Instruct" if config.llm == "smollm2" else f"{config.model} at {config.llm}")
    claim = Claim(
        text=("Few-shot LLM autoformalization yields Book I statements equivalent to the ground truth "
              "(the paper: GPT-4 and GPT-4V)"),
        ours=(f"{who}, greedy{' constrained to the statement grammar' if constrained else ''}, "
              f"{len(autoformalize.EXAMPLES)}-shot, {config.max_new_tokens} new tokens: "
              f"{counts['equivalent']}/{n} equivalent, {n - counts['parse_error']}/{n} parse"
              + (" (a 135M model in place of GPT-4: the paper's rates are not reproduced at this size)"
                 if config.llm == "smollm2" and counts["equivalent"] == 0 else "")),
        paper=("GPT-4's Book I statement-equivalence rate was not retrieved (anchors); the repository's README "
               "example prints a proof-checking rate of 1/43 = 2.33%"),
        verdict=verdict(counts["equivalent"] > 0 if config.llm != "scripted" else None))
    return Result(metrics=metrics, headline="equivalent_rate", claims=[claim],
                  notes=f"llm={config.llm}{'/' + config.model if config.model else ''}, greedy"
                        f"{', constrained' if constrained else ''}, "
                        f"{config.max_new_tokens} new tokens, {len(autoformalize.EXAMPLES)} few-shot examples "
                        f"{autoformalize.EXAMPLES}; {n} propositions: {counts}")


@registry.experiment("euclid/reproduce")
def reproduce(config, workdir) -> Result:
    """The Book I benchmark, the equivalence-checker variants and the autoformalization harness."""
    return gather_parts("euclid", config, pathlib.Path(__file__).parent / "configs", workdir)
