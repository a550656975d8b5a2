"""Euclid / LeanEuclid: formal system E over z3, a proof checker, an equivalence checker (E3) and an
autoformalization harness (Murphy et al., ICML 2024)."""
