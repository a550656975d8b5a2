"""One package per ICML 2024 paper, `jaxml.papers.<slug>`; found by the registry from its slug."""
