"""The proof checker: proofs as sequences of construction and inference steps, with the premises a
step does not state discharged by z3 against the background theory (diagrammatic gap filling).

Steps (see `syntax` for the grammar):

    obtain c by intersection_circles(α, β)   apply a rule / earlier theorem with an existential
                                             conclusion: each hypothesis of the rule, instantiated
                                             with the arguments, must follow from the context; the
                                             new objects get the given names, its conclusions
                                             become facts
    apply I.4(a, b, c, d, e, f)              the same for a rule without new objects
    have |a c| = |a b|                       the formula must follow from the context
    let l = c                                a new name for an existing object (a witness)
    cases case F1: steps... case F2: steps... end
                                             F1 or F2 or ... must follow from the context; each
                                             branch, with its F as a fact, must reach the goal

At the end of a proof (or of each case branch) the theorem's conclusions must follow, with its
existential variables naming objects of the proof (construct them under those names). Every check is
one z3 query with a timeout; `unknown` fails the proof as 'timeout', never passes it.
"""

from __future__ import annotations

import dataclasses
import difflib
import time
from collections.abc import Mapping

from jaxml.papers.euclid import syntax as S
from jaxml.papers.euclid import system_e as E


@dataclasses.dataclass
class StepResult:
    """One checked obligation of a proof.

    Attributes:
      where: 'line L, column C' of the step in the source (or 'end of proof').
      step: the step's text.
      status: 'ok', 'failed' or 'timeout'.
      reason: why it failed (empty when ok).
      core: the context facts z3 used (its unsat core) when ok.
      seconds: solver time of the step's queries.
    """
    where: str
    step: str
    status: str
    reason: str = ""
    core: tuple = ()
    seconds: float = 0.0


@dataclasses.dataclass
class ProofResult:
    """`ok` when every step and the final goal checked; `failure` is the first failure, readable."""
    name: str
    ok: bool
    steps: list
    seconds: float
    failure: str = ""

    @property
    def timed_out(self) -> bool:
        return any(s.status == "timeout" for s in self.steps)


class ProofError(ValueError):
    """A malformed proof step (unknown rule, wrong arguments, reused name): not a solver failure."""


class _Failed(Exception):
    pass


class Checker:
    """Checks proofs against the rules of E and a library of earlier theorems.

    Args:
      library: {name: Statement} of theorems a proof may apply (the rules of E are always there).
      timeout_s: z3 timeout per query.
      rlimit: optional z3 resource limit per query (deterministic budget; 0 = none).
      exclude: axiom names left out of the background theory.
    """

    def __init__(self, library: Mapping[str, S.Statement] | None = None, *, timeout_s: float = 15.0,
                 rlimit: int = 0, exclude=()):
        self.library = dict(E.rules())
        self.library.update(library or {})
        self.timeout_s, self.rlimit, self.exclude = timeout_s, rlimit, tuple(exclude)

    def check(self, statement: S.Statement, proof) -> ProofResult:
        """Checks `proof` (a tuple of steps) of `statement`; malformed steps fail with a reason too."""
        t0 = time.perf_counter()
        log: list[StepResult] = []
        ctx = E.statement_context(statement, timeout_s=self.timeout_s, rlimit=self.rlimit, exclude=self.exclude)
        try:
            self._run(ctx, tuple(proof), statement, log)
            ok, failure = True, ""
        except _Failed:
            ok = False
            bad = log[-1]
            failure = f"{statement.name}, {bad.where}: `{bad.step}` {bad.status}: {bad.reason}"
        except ProofError as e:
            ok, failure = False, f"{statement.name}: {e}"
            log.append(StepResult("", "", "failed", str(e)))
        return ProofResult(statement.name, ok, log, time.perf_counter() - t0, failure)

    # -- steps
    def _run(self, ctx: E.Context, steps: tuple, statement: S.Statement, log: list) -> None:
        for step in steps:
            if isinstance(step, S.Cases):
                self._cases(ctx, step, statement, log)
                return
            if isinstance(step, S.Obtain):
                self._obtain(ctx, step, log)
            elif isinstance(step, S.Have):
                where = f"line {step.line}, column {step.column}"
                try:
                    S.check_sorts(step.formula, ctx.objects)
                except ValueError as e:
                    raise ProofError(f"{where}: {e}") from None
                self._require(ctx, step.formula, where, S.format_step(step).strip(), log)
                ctx.add_fact(f"line {step.line}: have {S.format_formula(step.formula)}", step.formula)
            elif isinstance(step, S.Let):
                where = f"line {step.line}, column {step.column}"
                if step.target not in ctx.objects:
                    raise ProofError(f"{where}: {step.target!r} is not an object of the proof")
                if step.name in ctx.objects:
                    raise ProofError(f"{where}: {step.name!r} already names an object; choose a fresh name")
                ctx.add_object(step.name, ctx.objects[step.target])
                ctx.add_fact(f"line {step.line}: let {step.name} = {step.target}", S.ObjEq(step.name, step.target))
            else:
                raise ProofError(f"not a proof step: {step!r}")
        self._goal(ctx, statement, log)

    def _goal(self, ctx: E.Context, statement: S.Statement, log: list) -> None:
        for name, sort in statement.existentials:
            if ctx.objects.get(name) != sort:
                have = f"it is a {ctx.objects[name]}" if name in ctx.objects else "no such object"
                raise ProofError(f"the conclusion needs a {sort} named {name!r} ({have}); construct it under "
                                 f"that name")
        goal = S.And(statement.conclusions) if len(statement.conclusions) > 1 else statement.conclusions[0]
        self._require(ctx, goal, "end of proof", "conclusion " + S.format_formula(goal), log)

    def _cases(self, ctx: E.Context, step: S.Cases, statement: S.Statement, log: list) -> None:
        where = f"line {step.line}, column {step.column}"
        formulas = [f for f, _ in step.branches]
        for f in formulas:
            try:
                S.check_sorts(f, ctx.objects)
            except ValueError as e:
                raise ProofError(f"{where}: case {S.format_formula(f)}: {e}") from None
        split = S.Or(tuple(formulas)) if len(formulas) > 1 else formulas[0]
        self._require(ctx, split, where, f"cases {S.format_formula(split)} (exhaustive)", log)
        for f, steps in step.branches:
            branch = ctx.copy()
            branch.add_fact(f"line {step.line}: case {S.format_formula(f)}", f)
            self._run(branch, steps, statement, log)

    def _obtain(self, ctx: E.Context, step: S.Obtain, log: list) -> None:
        where = f"line {step.line}, column {step.column}"
        text = S.format_step(step).strip()
        rule = self.library.get(step.rule)
        if rule is None:
            close = difflib.get_close_matches(step.rule, list(self.library), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ProofError(f"{where}: unknown rule or theorem {step.rule!r}{hint}")
        if len(step.args) != len(rule.universals):
            want = ", ".join(f"{n} : {s}" for n, s in rule.universals)
            raise ProofError(f"{where}: {step.rule} takes {len(rule.universals)} arguments ({want}), "
                             f"got {len(step.args)}")
        for arg, (var, sort) in zip(step.args, rule.universals):
            if arg not in ctx.objects:
                raise ProofError(f"{where}: {arg!r} is not an object of the proof (objects: "
                                 f"{', '.join(ctx.objects)})")
            if ctx.objects[arg] != sort:
                raise ProofError(f"{where}: argument {var} of {step.rule} must be a {sort}; {arg!r} is a "
                                 f"{ctx.objects[arg]}")
        if len(step.names) != len(rule.existentials):
            want = " ".join(n for n, _ in rule.existentials)
            raise ProofError(f"{where}: {step.rule} constructs {len(rule.existentials)} object(s) ({want or 'none'}); "
                             f"{'use apply' if not rule.existentials else 'name each after obtain'}, got "
                             f"{len(step.names)} name(s)")
        for name in step.names:
            if name in ctx.objects:
                raise ProofError(f"{where}: {name!r} already names an object; choose a fresh name")
        if len(set(step.names)) != len(step.names):
            raise ProofError(f"{where}: the new names {step.names} repeat")
        mapping = dict(zip([n for n, _ in rule.universals], step.args))
        mapping.update(zip([n for n, _ in rule.existentials], step.names))
        for i, h in enumerate(rule.hypotheses, 1):
            inst = E.substitute(h, mapping)
            self._require(ctx, inst, where, f"{text}: hypothesis {i} `{S.format_formula(inst)}`", log)
        for name, (_, sort) in zip(step.names, rule.existentials):
            ctx.add_object(name, sort)
        concl = [E.substitute(c, mapping) for c in rule.conclusions]
        ctx.add_fact(f"line {step.line}: {text}", S.And(tuple(concl)) if len(concl) > 1 else concl[0])

    def _require(self, ctx: E.Context, goal, where: str, text: str, log: list) -> None:
        verdict = ctx.entails(goal)
        if verdict.proved:
            log.append(StepResult(where, text, "ok", "", verdict.core, verdict.seconds))
            return
        status = "timeout" if verdict.status == "timeout" else "failed"
        reason = (f"z3 gave up after {ctx.timeout_s:g} s: {verdict.detail}" if status == "timeout"
                  else f"not entailed by the context: {verdict.detail}")
        log.append(StepResult(where, text, status, reason, (), verdict.seconds))
        raise _Failed()


def check_text(source: str, library: Mapping[str, S.Statement] | None = None, **kwargs) -> list[ProofResult]:
    """Parses a file's text and checks every theorem that has a proof; earlier theorems of the file
    are available to later proofs."""
    library = dict(library or {})
    results = []
    checker = Checker(library, **kwargs)
    for item in S.parse_file(source):
        if item.proof is not None:
            results.append(checker.check(item.statement, item.proof))
        checker.library[item.statement.name] = item.statement
    return results
