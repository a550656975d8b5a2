"""The trust study (experiment `comptrust/trust`): SmolLM2-135M-Instruct, dense and compressed by every
method and level, through the trust probes, the canary privacy probe and the utility measures.

Runbook:
    python scripts/run.py --config=jaxml/papers/comptrust/configs/trust.py --workdir=/tmp/comptrust
    python scripts/run.py --config=jaxml/papers/comptrust/configs/trust.py:quick --workdir=/tmp/comptrust_quick
    python scripts/run.py --config=jaxml/papers/comptrust/configs/trust.py:summarize_only=True --workdir=/tmp/comptrust
        # the table, claims and figure from the rows a stopped run left, each spec pooled over the seeds it reached
    (2 CPU cores; a run killed midway resumes from `rows.jsonl` and the saved fine-tuned model in its
    workdir. Full: the dense model fine-tuned on 8 canaries (plus 8 held out), then RTN/GPTQ/AWQ at
    W8/W4/W3 and magnitude/Wanda/SparseGPT at 50%, 1:2, 2:4, 4:8, calibration seeds 0-2 for GPTQ, AWQ,
    Wanda and SparseGPT (51 compressed or dense models), 196 probe prompts per model, 100 multiple-choice
    questions, perplexity on 2,048 held-out tokens; time and numbers in jaxml/papers/comptrust/README.md.
    Quick: no fine-tuning or privacy probe, dense/RTN W4/RTN W3/magnitude 2:4, 48 probe prompts per model.
    Tiny: the first decoder layer (numbers meaningless), no privacy probe, seconds.)
Metric: each dimension's 0-100 score (higher = more trustworthy) with a 95% bootstrap CI over probe units,
pooled over calibration seeds; refusal rate; multiple-choice accuracy and perplexity (utility).
Paper (LLaMA-2-13B-Chat etc.): 4-bit quantization keeps trust, 3-bit loses it sharply while benign
performance hides it, pruning loses trust already at 50% sparsity, quantization beats pruning.
"""

from jaxml.core.config import by_scale, experiment_config

QUANT = tuple(f"{m}-w{b}" for m in ("rtn", "gptq", "awq") for b in (8, 4, 3))
PRUNE = tuple(f"{m}-{p}" for m in ("magnitude", "wanda", "sparsegpt") for p in ("50%", "1:2", "2:4", "4:8"))


def get_config(arg=None):
    c, scale = experiment_config("comptrust/trust", arg, n_seeds=-1, summarize_only=False)
    c.decoder_layers = by_scale(scale, tiny=1, quick=0, full=0)      # 0 = all 30
    c.specs = by_scale(scale, tiny=("dense", "wanda-2:4"),
                       quick=("dense", "rtn-w4", "rtn-w3", "magnitude-2:4"), full=("dense",) + QUANT + PRUNE)
    if c.n_seeds <= 0:
        c.n_seeds = by_scale(scale, tiny=1, quick=1, full=3)
    c.seeds = tuple(range(c.n_seeds))         # calibration seeds
    c.probe_size = by_scale(scale, tiny="tiny", quick="tiny", full="quick")
    # Calibration: windows of Shakespeare (the training plays), drawn per seed.
    c.calib_sequences = by_scale(scale, tiny=2, quick=8, full=16)
    c.calib_length = by_scale(scale, tiny=32, quick=256, full=256)
    # Privacy: canaries planted by fine-tuning (0 = no fine-tuning, no privacy probe).
    c.canaries = by_scale(scale, tiny=0, quick=0, full=16)
    c.canary_repeats = by_scale(scale, tiny=2, quick=0, full=16)
    c.replay = by_scale(scale, tiny=4, quick=0, full=128)
    c.replay_tokens = by_scale(scale, tiny=8, quick=0, full=48)
    c.finetune_length = by_scale(scale, tiny=32, quick=64, full=64)
    c.finetune_batch = by_scale(scale, tiny=2, quick=8, full=8)
    c.finetune_lr = 1e-4
    # Utility.
    c.mc_questions = by_scale(scale, tiny=4, quick=16, full=100)
    c.heldout_tokens = by_scale(scale, tiny=96, quick=256, full=2048)
    c.ppl_context = by_scale(scale, tiny=64, quick=256, full=256)
    c.ppl_stride = by_scale(scale, tiny=32, quick=128, full=128)
    c.batch_size = by_scale(scale, tiny=16, quick=32, full=32)
    c.n_boot = by_scale(scale, tiny=100, quick=500, full=1000)
    return c
