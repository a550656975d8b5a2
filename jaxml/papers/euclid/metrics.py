"""The counts and rates the Euclid experiments report, as pure functions (plain Python in, numbers out)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def rate(count: float, total: float) -> float:
    """count / total, and 0.0 for an empty total (no item scored)."""
    if count < 0 or total < 0 or count > total:
        raise ValueError(f"rate needs 0 <= count <= total, got {count} of {total}")
    return 0.0 if total == 0 else count / total


def accuracy(expected: Sequence[str], got: Sequence[str]) -> float:
    """The share of items whose category `got` equals the `expected` one."""
    if len(expected) != len(got):
        raise ValueError(f"{len(expected)} expected categories but {len(got)} results")
    return rate(sum(e == g for e, g in zip(expected, got)), len(expected))


def accuracy_by_kind(kinds: Sequence[str], expected: Sequence[str], got: Sequence[str]) -> dict[str, float]:
    """{kind: accuracy over the items of that kind}, for the kinds present, in order of first appearance."""
    if not len(kinds) == len(expected) == len(got):
        raise ValueError("kinds, expected and got must have the same length")
    out = {}
    for kind in dict.fromkeys(kinds):
        idx = [i for i, k in enumerate(kinds) if k == kind]
        out[kind] = accuracy([expected[i] for i in idx], [got[i] for i in idx])
    return out


def category_counts(categories: Iterable[str], known: Sequence[str]) -> dict[str, int]:
    """{category: how many items got it} for every category in `known` (zeros included); an item
    outside `known` is an error."""
    counts = {c: 0 for c in known}
    for c in categories:
        if c not in counts:
            raise ValueError(f"category {c!r} is not one of {tuple(known)}")
        counts[c] += 1
    return counts


PROOF_STATUSES = ("verified", "conditional", "failed")


def book_counts(satisfiable: Mapping[str, str], proofs: Mapping[str, str], propositions: Iterable[str]) -> dict[str, float]:
    """The Book I tallies from `satisfiable` {name: 'sat' / 'unsat' / 'timeout'} and `proofs` {name:
    'verified' / 'conditional' / 'failed'} (checker.ProofResult.status), split into the `propositions`
    (I.1 ... I.48) and the lemmas (every other name). `proofs_checked` / `lemmas_checked` count only
    verified proofs; a proof that checks but rests on an unproved statement is `*_conditional`."""
    for name, status in proofs.items():
        if status not in PROOF_STATUSES:
            raise ValueError(f"proof status {status!r} of {name} is not one of {PROOF_STATUSES}")
    props = set(propositions)
    sat = {n: s for n, s in satisfiable.items() if n in props}
    thm = {n: s for n, s in proofs.items() if n in props}
    lemmas = {n: s for n, s in proofs.items() if n not in props}
    return {"statements_parsed": float(len(props)),
            "statements_checked": float(len(sat)),
            "statements_satisfiable": float(sum(s == "sat" for s in sat.values())),
            "proofs_total": float(len(thm)),
            "proofs_checked": float(sum(s == "verified" for s in thm.values())),
            "proofs_conditional": float(sum(s == "conditional" for s in thm.values())),
            "lemmas_total": float(len(lemmas)),
            "lemmas_checked": float(sum(s == "verified" for s in lemmas.values())),
            "lemmas_conditional": float(sum(s == "conditional" for s in lemmas.values()))}
