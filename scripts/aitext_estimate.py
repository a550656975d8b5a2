#!/usr/bin/env python3
"""Estimate the fraction of AI-generated sentences in a folder of documents.

    python scripts/aitext_estimate.py --docs=my_corpus/ --tables=jaxml/papers/aitext/data/tables/adjectives
        [--pattern='*.txt'] [--n_boot=1000] [--seed=0] [--json=out.json]

`--tables` is a p/q table saved by `Tables.save` (`<name>.npz` plus `<name>.words.txt`): the ones
fitted on the shipped corpus live in `jaxml/papers/aitext/data/tables/`, and `aitext/validate`
writes its own under `<workdir>/tables/`. Prints the MLE, the 95% percentile-bootstrap interval,
its midpoint (what the reference code reports) and what was read.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from absl import app, flags  # noqa: E402

_DOCS = flags.DEFINE_string("docs", None, "Folder of documents (one file per document).", required=True)
_TABLES = flags.DEFINE_string("tables", None, "p/q table: path of <name>.npz (or <name>).", required=True)
_PATTERN = flags.DEFINE_string("pattern", "*.txt", "Files to read under --docs (recursive glob).")
_BOOT = flags.DEFINE_integer("n_boot", 1000, "Bootstrap resamples.")
_SEED = flags.DEFINE_integer("seed", 0, "Bootstrap seed.")
_JSON = flags.DEFINE_string("json", None, "Also write the result as JSON here.")


def main(argv):
    del argv
    from jaxml.papers.aitext import estimator, monitor

    tables = estimator.Tables.load(_TABLES.value)
    est, stats = monitor.estimate_folder(_DOCS.value, tables, pattern=_PATTERN.value, n_boot=_BOOT.value,
                                         seed=_SEED.value)
    print(f"documents: {stats.documents} ({stats.empty_documents} empty, skipped); sentences: {stats.sentences}, "
          f"{stats.sentences_with_vocabulary} with a word of the table ({len(tables.words)} words)")
    print(est.summary())
    if _JSON.value:
        out = {"mle": est.mle, "ci": list(est.ci), "midpoint": est.midpoint, "half_width": est.half_width,
               **dataclasses.asdict(stats), "tables": _TABLES.value}
        pathlib.Path(_JSON.value).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    app.run(main)
