"""Graph-native against text-reading models (experiment `asynchow/graph_vs_text`): the same small transformer
(width 64, 4 heads) reads a plan as a graph (attention along its edges) or as the benchmark's text (tokens
without step texts), is trained with the one loop to point at each node's critical parent, and is scored
on held-out plans by complexity bin (exact answers decoded from the pointers).

Runbook:
    python scripts/run.py --config=jaxml/papers/asynchow/configs/graph_vs_text.py --workdir=/tmp/asynchow_gvt
    (2 CPU cores; full: 2,500 steps of batch 32 on 20,000 plans per model, depth 4, seeds 0 and 1,
    10m28s per seed alone (the text model 85% of it), 14m05s sharing the cores with the LLM benchmark; quick: 120 steps on 2,000 plans, depth 3, one seed; tiny: 30 steps, width 32.)
Metric: plan accuracy (the decoded critical path equals the gold) on the test plans whose text fits 128
tokens, by complexity bin and plan type. Full (968 plans x 2 seeds): graph 0.972 vs text 0.789 (seed std
0.004 and 0.034); per +10 of |V| + |E|: graph -0.033, text -0.367. Quick (1 seed): graph 0.843, text 0.256.
Paper: graphs help LLMs (PLaG) and accuracy degrades with complexity (LLM prompting; no trained models).
"""

from jaxml.core.config import by_scale, experiment_config


def get_config(arg=None):
    c, scale = experiment_config("asynchow/graph_vs_text", arg, num_steps=-1, train_plans=-1)
    c.scale = scale
    c.seeds = by_scale(scale, tiny=(0,), quick=(0,), full=(0, 1))
    if c.num_steps < 0:
        c.num_steps = by_scale(scale, tiny=0, quick=120, full=0)      # 0: the neural_config default
    if c.train_plans < 0:
        c.train_plans = by_scale(scale, tiny=0, quick=2000, full=0)
    return c
