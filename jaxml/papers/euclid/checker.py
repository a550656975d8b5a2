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

The steps after a `cases ... end` block are the continuation of every branch: each branch runs its
own steps, then the steps after `end`, then the goal, in its own context (so those steps are checked
once per branch, and may use objects every branch constructs under one name). Nested splits compose:
the continuation of an inner split is the rest of its branch and then the rest of the outer one.

At the end of a proof (in every branch) the theorem's conclusions must follow, with its existential
variables naming objects of the proof (construct them under those names). Every check is one z3 query
with a timeout; `unknown` fails the proof as 'timeout', never passes it.

Every theorem's hypotheses are also checked: one `Context.consistent()` query, on a context of the
hypotheses alone (`system_e.hypotheses_satisfiable`), asks whether they are satisfiable with E. If
they are contradictory every step passes (the theorem is vacuous), so 'unsat' is a warning in
`ProofResult.warnings` (with the unsat core; the verdict is in `ProofResult.hypotheses`) and, with
`Checker(strict=True)`, the proof fails with that reason (it takes precedence over a step's failure);
'timeout' is a warning in both modes. Its answer does not depend on the steps, so it runs after them
(`Checker.check`), and `check_text` and `book.check_book` run all of a file's after all its proofs
(`check(..., hypotheses=False)` then `check_hypotheses`; under `strict` with each proof, since there
it decides `ok`): z3's run time depends on the history of the process (term ids), and satisfiable
queries interleaved with the proofs slowed Book I's proofs from 110 s to 172 s in one measurement
(I.23 alone, query before its steps: 37 s to 53-60 s of CPU), though the queries took 1.2 s.

What a verdict rests on. `Checker.library` (read-only) holds the rules of E and the statements a proof
may apply; statements enter it through the constructor (`library`: statements the caller vouches for
as checked) or `Checker.add(statement, result)`, which records what the statement rests on:

  * nothing, when `result.ok` and its proof rests on nothing (a verified proof);
  * the statement itself, when it has no proof (`result=None`), its proof failed, or it is a user
    `axiom`/`rule` without a checked proof: an *assumption*;
  * the assumptions of its proof, when the proof checked but applies assumptions.

Every `ProofResult` lists the library statements it applies (`uses`, rules of E left out) and the
transitive closure of the assumptions under them (`assumptions`); `ok` means every step and the goal
checked, `verified` means `ok` and no assumptions, and `status` is 'verified', 'conditional' (ok but
resting on assumptions) or 'failed'. `check_text` adds every item of a file in order, proved or not,
so a file can be explored, and its verdicts say what they rest on. A proof may not apply the theorem it
proves. Two statements with one name, or a statement named like a rule of E, are a `DuplicateNameError`
(naming both lines): a later proof could not tell which one it applies.
"""

from __future__ import annotations

import dataclasses
import difflib
import time
import types
from collections.abc import Iterable, Mapping

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
      case: the case split(s) the obligation is checked under, e.g. 'a = c; b != c' ('' outside
        any split); a step after `cases ... end` has one obligation per branch.
    """
    where: str
    step: str
    status: str
    reason: str = ""
    core: tuple = ()
    seconds: float = 0.0
    case: str = ""


@dataclasses.dataclass
class ProofResult:
    """The verdict on one proof.

    Attributes:
      name: the theorem's name.
      ok: every step (in every case branch) and the goal checked (under `strict`, also: the
        hypotheses are not contradictory).
      steps: the StepResult of every obligation, in order.
      seconds: wall time, the consistency query included.
      failure: the first failure, readable ('' when ok).
      uses: the library statements the proof applies (rules of E left out), in order of first use.
      assumptions: the unproved statements (no proof, failed proof, user axiom/rule) the verdict rests
        on, through every statement in `uses` transitively.
      warnings: readable warnings (contradictory hypotheses, with the unsat core; an unknown answer).
      hypotheses: the `Context.consistent()` verdict on the hypotheses ('sat' / 'unsat' / 'timeout').
      statement: the statement proved (`Checker.add` takes the result only for that statement).
    """
    name: str
    ok: bool
    steps: list
    seconds: float
    failure: str = ""
    uses: tuple = ()
    assumptions: tuple = ()
    warnings: list = dataclasses.field(default_factory=list)
    hypotheses: E.Verdict | None = None
    statement: S.Statement | None = dataclasses.field(default=None, repr=False)

    @property
    def timed_out(self) -> bool:
        return any(s.status == "timeout" for s in self.steps)

    @property
    def verified(self) -> bool:
        """Checked, and resting on nothing unproved."""
        return self.ok and not self.assumptions

    @property
    def status(self) -> str:
        """'verified', 'conditional' (checked, but resting on `assumptions`) or 'failed'."""
        return "failed" if not self.ok else "conditional" if self.assumptions else "verified"


class ProofError(ValueError):
    """A malformed proof step (unknown rule, wrong arguments, reused name): not a solver failure."""


class DuplicateNameError(ValueError):
    """Two statements with one name, or a statement named like a rule of E."""


def _describe(st: S.Statement, source: str = "") -> str:
    at = f"line {st.line}" if st.line else "an unknown line"
    return f"{st.kind} {st.name!r} at {at}{' of ' + source if source else ''}"


def check_names(statements: Iterable[S.Statement], source: str = "") -> None:
    """Raises DuplicateNameError, naming both lines, when two of `statements` share a name or one has
    the name of a rule of E (`source`, e.g. a file name, goes into the message)."""
    seen: dict[str, S.Statement] = {}
    for st in statements:
        _check_name(st, seen, source)
        seen[st.name] = st


def _check_name(st: S.Statement, library: Mapping[str, S.Statement], source: str = "") -> None:
    rules = E.rules()
    if st.name in rules:
        raise DuplicateNameError(f"{_describe(st, source)} has the name of a rule of system E (line "
                                 f"{rules[st.name].line} of system_e.RULES_SOURCE); rename it")
    if st.name in library:
        first = library[st.name]
        at = f"line {first.line}" if first.line else "an unknown line"
        raise DuplicateNameError(f"{_describe(st, source)} repeats the name of the {first.kind} at {at}; "
                                 f"rename one of them")


class _Failed(Exception):
    pass


@dataclasses.dataclass
class _Proof:
    """The state of one proof being checked: the obligations so far, the library statements applied
    and the case split(s) of the step being checked."""
    statement: S.Statement
    log: list = dataclasses.field(default_factory=list)
    uses: dict = dataclasses.field(default_factory=dict)
    case: tuple = ()


class Checker:
    """Checks proofs against the rules of E and a library of earlier theorems.

    Args:
      library: {name: Statement} of theorems a proof may apply, vouched for by the caller as checked
        (the rules of E are always there; a name of a rule of E is a DuplicateNameError).
      timeout_s: z3 timeout per query.
      rlimit: optional z3 resource limit per query (deterministic budget; 0 = none).
      exclude: axiom names left out of the background theory.
      strict: a theorem whose hypotheses are contradictory fails (else: a warning).
      max_instances, max_memory_mb: the per-context bounds of `system_e.Context` (a query over them
        is a 'timeout' with the reason, never a crash).
    """

    def __init__(self, library: Mapping[str, S.Statement] | None = None, *, timeout_s: float = 15.0,
                 rlimit: int = 0, exclude=(), strict: bool = False, max_instances: int = E.MAX_INSTANCES,
                 max_memory_mb: int = E.MAX_MEMORY_MB):
        self._library = dict(E.rules())
        self._rests_on: dict[str, tuple] = {}       # non-E statement -> the assumptions it rests on
        self._given: set[str] = set()
        for name, st in (library or {}).items():
            if name in self._library:
                raise DuplicateNameError(f"library statement {name!r} has the name of a rule of system E "
                                         f"(line {self._library[name].line} of system_e.RULES_SOURCE); rename it")
            self._library[name] = st
            self._rests_on[name] = ()
            self._given.add(name)
        self.timeout_s, self.rlimit, self.exclude, self.strict = timeout_s, rlimit, tuple(exclude), strict
        self.max_instances, self.max_memory_mb = max_instances, max_memory_mb

    @property
    def library(self) -> Mapping[str, S.Statement]:
        """{name: Statement} a proof may apply (read-only: statements enter through `add`)."""
        return types.MappingProxyType(self._library)

    def assumptions_of(self, name: str) -> tuple:
        """The unproved statements library statement `name` rests on (() for a rule of E, a statement
        passed in as checked, or a verified proof; (name,) for an unproved statement)."""
        if name in self._rests_on:
            return self._rests_on[name]
        if name in self._library:
            return ()
        raise KeyError(f"{name!r} is not in the library")

    def add(self, statement: S.Statement, result: ProofResult | None = None) -> None:
        """Makes `statement` available to later proofs. `result` is the verdict on its proof (None: no
        proof); unless `result.ok` the statement is an assumption of every proof that applies it,
        and a checked proof passes on its own assumptions. A name already in the library (or of a
        rule of E) is a DuplicateNameError."""
        if result is not None and (result.name != statement.name or result.statement != statement):
            raise ValueError(f"the result is for {result.name!r}, not for the statement {statement.name!r} "
                             f"given: check that statement's proof and add its result")
        self._check_new(statement)
        self._library[statement.name] = statement
        self._rests_on[statement.name] = (tuple(result.assumptions) if result is not None and result.ok
                                          else (statement.name,))

    def _check_new(self, statement: S.Statement) -> None:
        if statement.name in self._given:
            raise DuplicateNameError(f"{_describe(statement)} is already in the library (a statement passed in "
                                     f"as checked); rename it")
        _check_name(statement, {n: st for n, st in self._library.items() if n in self._rests_on})

    def check(self, statement: S.Statement, proof, *, hypotheses: bool = True) -> ProofResult:
        """Checks `proof` (a tuple of steps) of `statement`; malformed steps fail with a reason too.
        With `hypotheses=False` the consistency query is left to a later `check_hypotheses(result)`
        (not under `strict`, where it decides `ok`)."""
        if self.strict and not hypotheses:
            raise ValueError("under strict the hypotheses decide the verdict: check them with the proof")
        t0 = time.perf_counter()
        state = _Proof(statement)
        options = dict(timeout_s=self.timeout_s, rlimit=self.rlimit, exclude=self.exclude,
                       max_instances=self.max_instances, max_memory_mb=self.max_memory_mb)
        ok, failure = True, ""
        try:
            self._run(E.statement_context(statement, **options), tuple(proof), state)
        except _Failed:
            ok = False
            bad = state.log[-1]
            case = f" (case {bad.case})" if bad.case else ""
            failure = f"{statement.name}, {bad.where}{case}: `{bad.step}` {bad.status}: {bad.reason}"
        except ProofError as e:
            ok = False
            case = "; ".join(state.case)
            failure = f"{statement.name}{f' (case {case})' if case else ''}: {e}"
            state.log.append(StepResult("", "", "failed", str(e), case=case))
        uses = tuple(state.uses)
        assumptions = tuple(dict.fromkeys(a for u in uses for a in self.assumptions_of(u)))
        result = ProofResult(statement.name, ok, state.log, time.perf_counter() - t0, failure, uses, assumptions,
                             [], None, statement)
        return self.check_hypotheses(result) if hypotheses else result

    def check_hypotheses(self, result: ProofResult) -> ProofResult:
        """The consistency query on the hypotheses of `result.statement` (alone, in a context of their
        own): records the verdict in `result.hypotheses`, a warning for 'unsat' (with the core) or
        'timeout', and under `strict` fails the proof on 'unsat'. Returns `result`, updated."""
        if result.hypotheses is not None:
            raise ValueError(f"the hypotheses of {result.name} are already checked")
        t0 = time.perf_counter()
        hyp = E.hypotheses_satisfiable(result.statement, timeout_s=self.timeout_s, rlimit=self.rlimit,
                                       exclude=self.exclude, max_instances=self.max_instances,
                                       max_memory_mb=self.max_memory_mb)
        result.hypotheses = hyp
        if hyp.status == "unsat":
            result.warnings.append("the hypotheses are contradictory (unsat core: " + "; ".join(hyp.core)
                                   + "): every conclusion follows, the theorem is vacuous")
            if self.strict:
                result.ok, result.failure = False, f"{result.name}: {result.warnings[-1]}"
        elif hyp.status == "timeout":
            result.warnings.append(f"the consistency of the hypotheses is unknown: {hyp.detail}")
        result.seconds += time.perf_counter() - t0
        return result

    # -- steps
    def _run(self, ctx: E.Context, steps: tuple, state: _Proof) -> None:
        """Runs `steps` then the goal in `ctx`; a `cases` step runs the rest of `steps` in each branch."""
        for i, step in enumerate(steps):
            if isinstance(step, S.Cases):
                self._cases(ctx, step, steps[i + 1:], state)
                return
            if isinstance(step, S.Obtain):
                self._obtain(ctx, step, state)
            elif isinstance(step, S.Have):
                where = f"line {step.line}, column {step.column}"
                try:
                    S.check_sorts(step.formula, ctx.objects)
                except ValueError as e:
                    raise ProofError(f"{where}: {e}") from None
                self._require(ctx, step.formula, where, S.format_step(step).strip(), state)
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
        self._goal(ctx, state)

    def _goal(self, ctx: E.Context, state: _Proof) -> None:
        statement = state.statement
        for name, sort in statement.existentials:
            if ctx.objects.get(name) != sort:
                have = f"it is a {ctx.objects[name]}" if name in ctx.objects else "no such object"
                raise ProofError(f"the conclusion needs a {sort} named {name!r} ({have}); construct it under "
                                 f"that name")
        goal = S.And(statement.conclusions) if len(statement.conclusions) > 1 else statement.conclusions[0]
        self._require(ctx, goal, "end of proof", "conclusion " + S.format_formula(goal), state)

    def _cases(self, ctx: E.Context, step: S.Cases, rest: tuple, state: _Proof) -> None:
        """The split must be exhaustive; each branch runs its steps, then `rest` (the steps after
        `end`), then the goal, with its case as a fact."""
        where = f"line {step.line}, column {step.column}"
        formulas = [f for f, _ in step.branches]
        for f in formulas:
            try:
                S.check_sorts(f, ctx.objects)
            except ValueError as e:
                raise ProofError(f"{where}: case {S.format_formula(f)}: {e}") from None
        split = S.Or(tuple(formulas)) if len(formulas) > 1 else formulas[0]
        self._require(ctx, split, where, f"cases {S.format_formula(split)} (exhaustive)", state)
        outer = state.case
        for f, steps in step.branches:
            branch = ctx.copy()
            branch.add_fact(f"line {step.line}: case {S.format_formula(f)}", f)
            state.case = outer + (S.format_formula(f),)
            self._run(branch, tuple(steps) + tuple(rest), state)
        state.case = outer

    def _obtain(self, ctx: E.Context, step: S.Obtain, state: _Proof) -> None:
        where = f"line {step.line}, column {step.column}"
        text = S.format_step(step).strip()
        if step.rule == state.statement.name:
            raise ProofError(f"{where}: a proof of {step.rule} may not apply {step.rule} itself")
        rule = self._library.get(step.rule)
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
        if step.rule in self._rests_on:
            state.uses.setdefault(step.rule, None)
        mapping = dict(zip([n for n, _ in rule.universals], step.args))
        mapping.update(zip([n for n, _ in rule.existentials], step.names))
        for i, h in enumerate(rule.hypotheses, 1):
            inst = E.substitute(h, mapping)
            self._require(ctx, inst, where, f"{text}: hypothesis {i} `{S.format_formula(inst)}`", state)
        for name, (_, sort) in zip(step.names, rule.existentials):
            ctx.add_object(name, sort)
        concl = [E.substitute(c, mapping) for c in rule.conclusions]
        ctx.add_fact(f"line {step.line}: {text}", S.And(tuple(concl)) if len(concl) > 1 else concl[0])

    def _require(self, ctx: E.Context, goal, where: str, text: str, state: _Proof) -> None:
        verdict = ctx.entails(goal)
        case = "; ".join(state.case)
        if verdict.proved:
            state.log.append(StepResult(where, text, "ok", "", verdict.core, verdict.seconds, case))
            return
        status = "timeout" if verdict.status == "timeout" else "failed"
        reason = (f"z3 gave up after {ctx.timeout_s:g} s: {verdict.detail}" if status == "timeout"
                  else f"not entailed by the context: {verdict.detail}")
        state.log.append(StepResult(where, text, status, reason, (), verdict.seconds, case))
        raise _Failed()


def check_text(source: str, library: Mapping[str, S.Statement] | None = None, **kwargs) -> list[ProofResult]:
    """Parses a file's text and checks every theorem that has a proof, in file order. Every item is
    then added to the library (`Checker.add`), proved or not, so later proofs may apply it; their
    verdicts list the unproved statements they rest on (`assumptions`). `library` holds statements the
    caller vouches for as checked; `kwargs` go to `Checker`. Duplicate names (in the file, with
    `library` or with a rule of E) are a DuplicateNameError, raised before any proof is checked."""
    items = S.parse_file(source)
    check_names([item.statement for item in items])
    checker = Checker(library, **kwargs)
    for item in items:      # a clash with `library` too, before any proof is checked
        checker._check_new(item.statement)
    results = []
    for item in items:      # the hypotheses after all the proofs (see the module doc), unless strict
        result = (None if item.proof is None
                  else checker.check(item.statement, item.proof, hypotheses=checker.strict))
        if result is not None:
            results.append(result)
        checker.add(item.statement, result)
    return [r if r.hypotheses is not None else checker.check_hypotheses(r) for r in results]
