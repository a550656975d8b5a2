#!/usr/bin/env python3
"""The two adjective vocabularies of aitext side by side on the shipped corpus: the WordNet word list
(`adjectives`) and the adjectives tagged in context (`pos`, TextBlob's Pattern tagger).

    python scripts/aitext_vocabularies.py

For each vocabulary: the table's size, the WordNet words the tagger's table drops, and, per pool
(human / AI sentences of the fit and the in-distribution test split), the vocabulary words per
sentence, the mean log ratio d = log Q/P, the share of sentences with d > 0, and the MLE of alpha on
the pure AI and pure human test pools (1 and 0 if the tables were exact). The gap between the AI fit
and AI test pools shows how much of q is fitted noise (the AI corpus has 1,661 fit sentences).
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))


def main():
    from jaxml.papers.aitext import corpus, estimator, experiments
    from jaxml.papers.aitext import text as textlib

    pools = corpus.human_passages()
    records = corpus.load_ai_records("shipped")
    human = {s: corpus.sentence_pool([p.text for p in pools[s]]) for s in ("fit", "test")}
    ai = {s: corpus.sentence_pool([r["text"] for r in records if r["split"] == s]) for s in ("fit", "test")}
    tables = {}
    for name in ("adjectives", "pos"):
        kind = experiments.tokens(name)
        h = {s: textlib.tokenize(v, kind) for s, v in human.items()}
        a = {s: textlib.tokenize(v, kind) for s, v in ai.items()}
        t = tables[name] = estimator.fit_tables(h["fit"], a["fit"], vocabulary=experiments.vocabulary(name),
                                                tokens=kind, name=name)
        print(f"{name}: {len(t.words)} words; most AI-leaning: {', '.join(t.words[:15])}")
        for who, pool in (("human", h), ("AI", a)):
            for split in ("fit", "test"):
                enc = estimator.encode(t, pool[split])
                d = estimator.log_ratio(t, enc)
                print(f"  {who} {split}: {len(enc)} sentences, {enc.indices.size / len(enc):.3f} vocabulary words "
                      f"per sentence, mean d {d.mean():+.3f}, d > 0 in {(d > 0).mean():.1%}")
        pure_ai, pure_human = (estimator.mle(estimator.log_ratio(t, estimator.encode(t, x["test"]))) for x in (a, h))
        print(f"  MLE of alpha on the pure AI test pool {pure_ai:.3f}, on the pure human test pool {pure_human:.4f}")
    dropped = [w for w in tables["adjectives"].words if w not in tables["pos"].index]
    added = [w for w in tables["pos"].words if w not in tables["adjectives"].index]
    print(f"WordNet-list words not in the tagger's table ({len(dropped)}), most AI-leaning first: "
          f"{', '.join(dropped[:30])}")
    print(f"tagger's words not in the WordNet list ({len(added)}): {', '.join(added)}")


if __name__ == "__main__":
    main()
