"""Euclid / LeanEuclid (Murphy et al., ICML 2024): formal system E over z3, a proof checker that fills
diagrammatic gaps, an E3-style statement-equivalence checker and an autoformalization harness.

    from jaxml.papers.euclid import parse_statement, check_equivalence, Checker, book
    st = parse_statement("forall (a b : Point), a != b => exists (c : Point), |a b| = |a c| and |a b| = |b c|")
    book.check_book(names=["I.1"]).proofs["I.1"].verified       # True (checked, resting on nothing unproved)
"""

from jaxml.papers.euclid import experiments  # noqa: F401  (registers the experiments)
from jaxml.papers.euclid import book
from jaxml.papers.euclid.autoformalize import ScriptedLLM, make_llm, prompt_for, score_output
from jaxml.papers.euclid.checker import Checker, DuplicateNameError, ProofResult, check_text
from jaxml.papers.euclid.equivalence import CATEGORIES, Equivalence, check_equivalence
from jaxml.papers.euclid.syntax import (EuclidSyntaxError, format_statement, parse_file, parse_formula,
                                        parse_statement)
from jaxml.papers.euclid.system_e import Context, Verdict, axioms, hypotheses_satisfiable, rules

__all__ = ["CATEGORIES", "Checker", "Context", "DuplicateNameError", "Equivalence", "EuclidSyntaxError", "ProofResult", "ScriptedLLM",
           "Verdict", "axioms", "book", "check_equivalence", "check_text", "format_statement",
           "hypotheses_satisfiable", "make_llm", "parse_file", "parse_formula", "parse_statement",
           "prompt_for", "rules", "score_output"]
