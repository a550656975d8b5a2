import pytest

from jaxml.papers.euclid import syntax as S
from jaxml.papers.euclid import system_e as E

# Axioms derivable from the other axioms over the same objects (ground instances): the ablation
# "unprovable without it" cannot hold for them, and they are listed here exactly.
REDUNDANT = {"between_same_line_in", "same_side_rfl", "same_side_symm", "same_side_not_on_line", "pasch_3",
             "pasch_4", "triple_incidence_1", "circle_line_intersections", "circle_points_between",
             "circle_points_extend", "point_on_circle_onlyif", "sum_areas_onlyif"}
# Probes with 4-5 points and 2-3 lines take seconds each: the slow suite covers them.
SLOW = {"triple_incidence_1", "triple_incidence_2", "triple_incidence_3", "sum_angles_if", "sum_angles_onlyif",
        "equal_angles", "circles_intersections_diff_side", "perpendicular_onlyif", "perpendicular_if", "pasch_4"}


def test_axiom_families_match_the_paper():
    counts = E.count_by_family()
    assert counts["diagrammatic"] == 36                 # LeanEuclid: 36
    assert counts["metric"] + counts["rule:metric"] == 11  # LeanEuclid: 11
    assert counts["transfer"] + counts["rule:transfer"] == 20  # LeanEuclid: 23 (3 parallelogram ones left out)
    assert counts["rule:superposition"] == 2            # SAS and SSS (Avigad et al. §3.7)
    assert len({a.name for a in E.axioms()}) == len(E.axioms())


def _probe(ax, exclude=()):
    st = ax.statement
    goal = st.conclusions[0] if len(st.conclusions) == 1 else S.And(st.conclusions)
    return E.statement_context(st, exclude=exclude).entails(goal)


@pytest.mark.parametrize("name", [pytest.param(a.name, marks=pytest.mark.slow) if a.name in SLOW else a.name
                                  for a in E.axioms()])
def test_each_axiom_does_what_its_name_says(name):
    """Its hypotheses (as facts) entail its conclusion; without it they do not, unless it is redundant."""
    ax = E.axiom(name)
    assert E.statement_context(ax.statement).consistent().status == "sat"   # its hypotheses fit the theory
    assert _probe(ax).status == "proved"
    without = _probe(ax, exclude=[name]).status
    assert without == ("proved" if name in REDUNDANT else "not_proved")


def test_theory_is_satisfiable_on_a_rich_configuration():
    ctx = E.Context({"a": "Point", "b": "Point", "c": "Point", "d": "Point", "L": "Line", "M": "Line",
                     "α": "Circle", "β": "Circle"})
    text = ("a != b and on_line(a, L) and on_line(b, L) and between(a, d, b) and on_line(c, M) and on_line(d, M) "
            "and not on_line(c, L) and centre(a, α) and on_circle(b, α) and centre(b, β) and on_circle(a, β) "
            "and on_circle(c, α) and on_circle(c, β) and triangle(a, b, c)")
    ctx.add_fact("configuration", S.parse_formula(text, ctx.objects))
    assert ctx.consistent().status == "sat"
    ctx.add_fact("bad", S.parse_formula("between(a, b, d)", ctx.objects))
    verdict = ctx.consistent()
    assert verdict.status == "unsat" and set(verdict.core) == {"configuration", "bad"}


def test_gap_filling_circles_of_I1_meet_with_unsat_core():
    ctx = E.Context({"a": "Point", "b": "Point", "α": "Circle", "β": "Circle"})
    f = lambda s: S.parse_formula(s, ctx.objects)  # noqa: E731
    ctx.add_fact("distinct", f("a != b"))
    ctx.add_fact("circle α", f("centre(a, α) and on_circle(b, α)"))
    ctx.add_fact("circle β", f("centre(b, β) and on_circle(a, β)"))
    ctx.add_fact("irrelevant", f("a = a"))
    v = ctx.entails(f("circles_meet(α, β)"))
    assert v.proved and set(v.core) == {"circle α", "circle β"}
    without = E.Context(ctx.objects, ctx.facts, exclude=["intersection_circle_circle_2"])
    assert without.entails(f("circles_meet(α, β)")).status == "not_proved"
    refuted = ctx.entails(f("between(a, b, a)"))
    assert refuted.status == "not_proved" and "`between(a, b, a)` is false" in refuted.detail


def test_resource_limit_is_reported_as_timeout_never_as_proof():
    st = S.parse_statement("forall (a b c d : Point) (L : Line), on_line(a, L) and on_line(b, L) and "
                           "between(a, c, b) and between(a, d, c) => between(a, d, b)")
    goal = st.conclusions[0]
    assert E.statement_context(st).entails(goal).status == "proved"
    v = E.statement_context(st, rlimit=1).entails(goal)
    assert v.status == "timeout" and not v.proved and "unknown" in v.detail


def test_bad_context_input_is_rejected():
    with pytest.raises(ValueError, match="unknown sort"):
        E.Context({"a": "Pt"})
    with pytest.raises(ValueError, match="unknown axioms"):
        E.Context(exclude=["no_such_axiom"])
    ctx = E.Context({"a": "Point"})
    with pytest.raises(ValueError, match="already exists"):
        ctx.add_object("a", "Line")
    with pytest.raises(ValueError, match="'L' is not bound"):
        ctx.entails(S.Pred("on_line", ("a", "L")))
