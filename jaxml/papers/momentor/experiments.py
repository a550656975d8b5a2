"""Momentor experiments.

  * `momentor/encodings`: the data engine's videos (train / held-out test), the frame encoder
    pre-trained and frozen, then for each timestamp encoding (discrete tokens, + interpolation,
    + neighbour propagation = Momentor's TPM, decimal text) and seed the same video LLM trained through
    the three stages (alignment, grounded event-sequence modelling, instruction tuning) at equal
    steps and batch, and evaluated on the held-out videos: temporal grounding R@1 at IoU 0.3/0.5/0.7
    and mIoU, dense captioning (event matching P/R/F1 and caption accuracy), highlight mAP and
    HIT@1, segment captioning and event sequencing accuracy. Mean and spread over seeds.
  * `momentor/reproduce`: the parts of configs/reproduce.py at one scale, with the claims.
"""

from __future__ import annotations

import pathlib
import time

import numpy as np

from jaxml import progress
from jaxml.core import registry
from jaxml.core.experiment import (DOES_NOT_HOLD, HOLDS, NOT_COMPARABLE, SUGGESTIVE, Claim, Result, Rows, gather_parts,
                                   make_workdir, paired_verdict, pyplot, save_figure)
from jaxml.core.metrics import paired_t_test
from jaxml.core.train import stage_config, train_and_evaluate
from jaxml.data.pipeline import ArraySource
from jaxml.papers.momentor import encoder, engine, metrics as metrics_lib, model, text, tpm

# The paper's zero-shot numbers (percent) on the real benchmarks, for orientation only.
PAPER = {"charades_r1_iou0.5": 26.6, "charades_miou": 28.5, "qvhighlights_map": 7.6, "anet_meteor": 4.7}
STAGES = ("alignment", "gesm", "instruct")
ENCODING_LABELS = {"discrete": "discrete tokens", "interpolate": "+ interpolation",
                   "propagate": "+ neighbour propagation (Momentor)", "text": "decimal text (seconds)"}


def _video_kw(config) -> dict:
    return dict(events_range=tuple(config.data.events_range), duration_range=tuple(config.data.duration_range))


def build_data(config, workdir: pathlib.Path) -> dict:
    """Videos, the frozen encoder's features (cached in `features.npz`) and the encoder's test metrics."""
    m = config.num_frames
    train = engine.make_videos("train", config.data.train_videos, config.seed, **_video_kw(config))
    test = engine.make_videos("test", config.data.test_videos, config.seed, **_video_kw(config))
    cache = workdir / "features.npz"
    rows = Rows(workdir / "rows.jsonl")
    if cache.exists() and rows.get("encoder") is not None:
        z = np.load(cache)
        want = {"train": (len(train), m, encoder.FEATURE_DIM), "test": (len(test), m, encoder.FEATURE_DIM)}
        if any(z[k].shape != shape for k, shape in want.items()):
            raise ValueError(f"{cache} holds features of shapes {z['train'].shape} / {z['test'].shape}, this config "
                             f"needs {want['train']} / {want['test']}: use a fresh workdir for a different config")
        return {"train": train, "test": test, "train_features": z["train"], "test_features": z["test"],
                "encoder": rows.get("encoder")["metrics"]}
    t0 = time.perf_counter()
    train_frames, train_labels = encoder.render_all(train, m, config.seed)
    test_frames, test_labels = encoder.render_all(test, m, config.seed)
    progress.log(f"rendered {len(train)} + {len(test)} videos of {m} frames in {time.perf_counter() - t0:.1f} s")
    task = encoder.FrameEncoderTask(encoder.frame_source(train_frames, train_labels),
                                    {"test": encoder.frame_source(test_frames, test_labels)})
    loop = stage_config(steps=config.encoder.steps, batch_size=config.encoder.batch_size,
                        learning_rate=config.encoder.learning_rate, seed=config.seed, eval_batch_size=512)
    outcome = train_and_evaluate(loop, workdir / "encoder", task=task)
    params = outcome.state.params
    enc_metrics = {k.split("/", 1)[1]: float(v) for k, v in outcome.metrics.items() if k.startswith("test/")}
    progress.log("frame encoder (test frames): " + ", ".join(f"{k} {v:.3f}" for k, v in enc_metrics.items()))
    train_f, test_f = encoder.features(params, train_frames), encoder.features(params, test_frames)
    np.savez(cache, train=train_f, test=test_f)
    rows.add("encoder", metrics=enc_metrics)
    return {"train": train, "test": test, "train_features": train_f, "test_features": test_f, "encoder": enc_metrics}


def stage_source(videos, features, examples, vocab, encoding: str, num_frames: int) -> ArraySource:
    rows = text.encode(examples, videos, vocab, encoding, num_frames)
    video = rows.pop("video")
    return ArraySource({**rows, "features": features[video]})


def train_variant(config, data: dict, encoding: str, seed: int, workdir: pathlib.Path):
    """The video LLM with one timestamp encoding through the three stages; returns (spec, params, metrics)."""
    vocab = text.Vocab.build()
    spec = model.ModelSpec(len(vocab), config.num_frames, encoder.FEATURE_DIM, encoding, **dict(config.model))
    formats = {"alignment": ("alignment",), "gesm": ("gesm",), "instruct": engine.TASKS}
    params, out = None, {}
    for stage, steps in zip(STAGES, config.stage_steps):
        if not steps:
            continue
        train = stage_source(data["train"], data["train_features"],
                             engine.make_examples(data["train"], formats[stage], seed=seed,
                                                 every_event=config.train_every_event),
                             vocab, encoding, config.num_frames)
        test_ex = engine.make_examples(data["test"], formats[stage], seed=seed)[:config.eval_examples]
        test = stage_source(data["test"], data["test_features"], test_ex, vocab, encoding, config.num_frames)
        task = model.MomentorTask(spec, train, {"test": test}, start_params=params,
                                  loss_weighting=config.get("loss_weighting", "video"))
        loop = stage_config(steps=steps, batch_size=config.batch_size, learning_rate=config.learning_rate, seed=seed,
                            eval_batch_size=64)
        outcome = train_and_evaluate(loop, workdir / stage, task=task)
        params = outcome.state.params
        out.update({f"{stage}/{k.split('/', 1)[1]}": float(v) for k, v in outcome.metrics.items()
                    if k.startswith("test/")})
        out[f"{stage}/train_time_s"] = float(outcome.metrics.get("train_time_s", float("nan")))
    return spec, params, out


def _answers(spec, params, data, examples, vocab):
    """Generated pieces for each example (times in seconds)."""
    videos, feats = data["test"], data["test_features"]
    prompt = text.prompts(examples, videos, vocab, spec.encoding, spec.num_frames)
    longest = (text.encode(examples, videos, vocab, spec.encoding, spec.num_frames)["target_kind"] > 0).sum(1).max()
    ids, pos = model.generate(params, spec, prompt, feats[[ex.video for ex in examples]], int(longest) + 2)
    return [text.decode(i, p, vocab, spec.encoding, videos[ex.video].duration, spec.num_frames)
            for i, p, ex in zip(ids, pos, examples)]


def evaluate_variant(spec, params, data: dict, tasks=engine.TASKS) -> dict[str, float]:
    """The tasks on the held-out videos (every event of each video for the single-event tasks)."""
    unknown = set(tasks) - set(engine.TASKS)
    if unknown:
        raise ValueError(f"eval tasks {sorted(unknown)} are not known; accepted: {', '.join(engine.TASKS)}")
    vocab = text.Vocab.build()
    videos, m = data["test"], spec.num_frames
    out = {}
    if "grounding" in tasks:
        out.update(_grounding(spec, params, data, vocab))
    for task in ("captioning", "sequencing"):
        if task in tasks:
            ex = engine.make_examples(videos, (task,), every_event=True)
            got = _answers(spec, params, data, ex, vocab)
            out[f"{task}/accuracy"] = metrics_lib.caption_accuracy([text.words_of(g) for g in got],
                                                                   [" ".join(e.answer) for e in ex])
            out[f"{task}/n"] = float(len(ex))
    if "highlight" in tasks:
        ex = engine.make_examples(videos, ("highlight",))
        got = _answers(spec, params, data, ex, vocab)
        ranked = [np.clip(np.round(tpm.position(np.asarray(text.times_of(g), np.float64), videos[e.video].duration,
                                                m)), 0, m - 1).astype(np.int64) for g, e in zip(got, ex)]
        out.update({f"highlight/{k}": float(v) for k, v in metrics_lib.highlight_metrics(
            ranked, [videos[e.video].saliency(m) for e in ex]).items()})
    if "dense" in tasks:
        ex = engine.make_examples(videos, ("dense",))
        got = _answers(spec, params, data, ex, vocab)
        refs = [[(e.start, e.end, e.caption) for e in videos[x.video].events] for x in ex]
        dense = metrics_lib.dense_caption_metrics([text.parse_events(g) for g in got], refs)
        out.update({f"dense/{k}": float(v) for k, v in dense.items() if "@" not in k or k.endswith("@0.5")})
    return out


def _grounding(spec, params, data, vocab) -> dict[str, float]:
    out = {}
    ex = engine.make_examples(data["test"], ("grounding",), every_event=True)
    got = _answers(spec, params, data, ex, vocab)
    pred = np.asarray([text.parse_span(g) for g in got], np.float64)
    gt = np.asarray([(ex_.answer[0].seconds, ex_.answer[2].seconds) for ex_ in ex])
    out.update({f"grounding/{k}": float(v) for k, v in metrics_lib.grounding_metrics(pred, gt).items()})
    out["grounding/unparsed"] = float(np.isnan(pred).any(-1).mean())
    return out


SUMMARY = ("grounding/r1_iou0.3", "grounding/r1_iou0.5", "grounding/r1_iou0.7", "grounding/miou",
           "dense/f1", "dense/caption_f1", "highlight/map", "highlight/hit1", "captioning/accuracy",
           "sequencing/accuracy")


def aggregate(per_run: dict[str, dict[str, float]], encodings, seeds) -> dict[str, float]:
    """`<encoding>/<metric>` mean and `<encoding>/<metric>_std` (sample std over seeds, 0 for one seed);
    for the grounding metrics also the paired differences to Momentor's encoding, seed by seed (the
    same seed gives every encoding the same initialisation and batch order):
    `paired/propagate_minus_<encoding>/<metric>` (mean), `..._std`, `..._p` (paired t-test) and `..._positive` (the share of
    seeds where the difference is above 0)."""
    out = {}
    for enc in encodings:
        runs = [per_run[f"{enc}/seed{s}"] for s in seeds]
        for k in sorted(set().union(*runs)):
            vals = np.asarray([r.get(k, np.nan) for r in runs], np.float64)
            out[f"{enc}/{k}"] = float(vals.mean())
            if k in SUMMARY:
                out[f"{enc}/{k}_std"] = float(vals.std(ddof=1)) if len(vals) > 1 else 0.0
    if "propagate" in encodings:
        for enc in encodings:
            if enc == "propagate":
                continue
            for k in SUMMARY[:4]:
                d = paired_differences(per_run, enc, k, seeds)
                if d is None:
                    continue
                test = paired_t_test(d)
                key = f"paired/propagate_minus_{enc}/{k}"
                out[key] = test["mean"]
                out[key + "_std"] = test["std"]
                out[key + "_positive"] = test["positive"]
                out[key + "_p"] = test["p"]
    return out


def paired_differences(per_run: dict, baseline: str, key: str, seeds) -> np.ndarray | None:
    """Momentor's encoding minus `baseline` on `key`, seed by seed ([seeds]; None where not measured)."""
    if any(key not in per_run.get(f"{e}/seed{s}", {}) for e in ("propagate", baseline) for s in seeds):
        return None
    return np.asarray([per_run[f"propagate/seed{s}"][key] - per_run[f"{baseline}/seed{s}"][key] for s in seeds])


def _pm(metrics, key, pct=True):
    mean, std = metrics.get(key, float("nan")), metrics.get(key + "_std", float("nan"))
    f = 100.0 if pct else 1.0
    return f"{mean * f:.1f} ± {std * f:.1f}"


def table_markdown(metrics: dict, encodings, n: dict, seeds) -> str:
    cols = [("grounding/r1_iou0.3", "R@1 0.3"), ("grounding/r1_iou0.5", "R@1 0.5"), ("grounding/r1_iou0.7", "R@1 0.7"),
            ("grounding/miou", "mIoU"), ("dense/f1", "dense F1"), ("dense/caption_f1", "dense F1 + caption"),
            ("highlight/map", "highlight mAP"), ("highlight/hit1", "HIT@1"), ("captioning/accuracy", "captioning"),
            ("sequencing/accuracy", "sequencing")]
    lines = ["| timestamp encoding | " + " | ".join(c for _, c in cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for enc in encodings:
        lines.append(f"| {ENCODING_LABELS[enc]} | " + " | ".join(_pm(metrics, f"{enc}/{k}") for k, _ in cols) + " |")
    lines.append(f"| Momentor, Charades-STA / QVHighlights (paper, zero-shot) | - | {PAPER['charades_r1_iou0.5']} | - | "
                 f"{PAPER['charades_miou']} | - | - | {PAPER['qvhighlights_map']} | - | - | - |")
    lines.append("")
    pairs = [e for e in encodings if e != "propagate" and f"paired/propagate_minus_{e}/grounding/miou" in metrics]
    if pairs:
        lines.append("Paired by seed (same initialisation and batch order), mIoU of Momentor's encoding minus: " + "; ".join(
            f"{ENCODING_LABELS[e]} {100 * metrics[f'paired/propagate_minus_{e}/grounding/miou']:+.1f} ± "
            f"{100 * metrics[f'paired/propagate_minus_{e}/grounding/miou_std']:.1f} points (above 0 in "
            f"{metrics[f'paired/propagate_minus_{e}/grounding/miou_positive']:.0%} of seeds, paired t-test p = "
            f"{metrics[f'paired/propagate_minus_{e}/grounding/miou_p']:.2g})" for e in pairs) + ".")
        lines.append("")
    lines.append(f"Percent, mean ± std over seeds {tuple(seeds)}; held-out videos: {n['videos']}; grounding queries "
                 f"{n['grounding']}, captioning {n['captioning']}, sequencing {n['sequencing']}, highlight "
                 f"{n['highlight']}, dense-captioning videos {n['videos']}.")
    return "\n".join(lines)


def plot_encodings(metrics: dict, encodings, path: pathlib.Path) -> pathlib.Path:
    plt = pyplot()
    keys = [("grounding/r1_iou0.3", "R@1 IoU 0.3"), ("grounding/r1_iou0.5", "R@1 IoU 0.5"),
            ("grounding/r1_iou0.7", "R@1 IoU 0.7"), ("grounding/miou", "mIoU"), ("dense/f1", "dense F1"),
            ("highlight/map", "highlight mAP")]
    fig, ax = plt.subplots(figsize=(9, 3.4))
    width = 0.8 / len(encodings)
    for j, enc in enumerate(encodings):
        vals = [100 * metrics.get(f"{enc}/{k}", np.nan) for k, _ in keys]
        errs = [100 * metrics.get(f"{enc}/{k}_std", 0.0) for k, _ in keys]
        ax.bar(np.arange(len(keys)) + j * width, vals, width, yerr=errs, capsize=2, label=ENCODING_LABELS[enc])
    ax.set_xticks(np.arange(len(keys)) + 0.4 - width / 2)
    ax.set_xticklabels([lab for _, lab in keys], fontsize=8)
    ax.set_ylabel("percent (held-out videos)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, path)


_VERDICT_RANK = {DOES_NOT_HOLD: 0, NOT_COMPARABLE: 1, SUGGESTIVE: 2, HOLDS: 3}


def encoding_claims(metrics: dict, per_run: dict, encodings, config) -> list[Claim]:
    """Momentor's claims at our scale: the continuous temporal token space (interpolation + neighbour
    propagation) grounds better than discrete temporal tokens and than timestamps as text.

    Each comparison's verdict is `paired_verdict` on the per-seed mIoU differences (a paired t-test;
    'holds' needs at least `MIN_SEEDS` seeds and p < 0.05, 'suggestive' below that); a claim over two
    baselines takes the weaker of the two verdicts. A tiny run is not comparable."""
    tiny = config.scale == "tiny"
    seeds = tuple(config.seeds)
    out = []
    others = [e for e in ("discrete", "text") if e in encodings]
    def judge(baseline):
        d = paired_differences(per_run, baseline, "grounding/miou", seeds)
        return (NOT_COMPARABLE, "") if tiny or d is None else paired_verdict(100 * d)

    judged = {e: judge(e) for e in encodings if e != "propagate"} if "propagate" in encodings else {}
    main = [judged[e][0] for e in others if e in judged]
    out.append(Claim(
        "The TPM's continuous temporal tokens (interpolation + neighbour propagation) ground events in time "
        "more precisely than discrete temporal tokens or timestamps written as text",
        ours="R@1 IoU 0.5 / mIoU on held-out videos (percent, mean ± std over seeds): " + "; ".join(
            f"{ENCODING_LABELS[e]} {_pm(metrics, f'{e}/grounding/r1_iou0.5')} / {_pm(metrics, f'{e}/grounding/miou')}"
            for e in encodings) + ("; mIoU points of Momentor's encoding minus each baseline, " + "; ".join(
                f"vs {ENCODING_LABELS[e]} {judged[e][1]}" for e in judged if judged[e][1])
                if any(w for _, w in judged.values()) else ""),
        paper=f"Momentor zero-shot on Charades-STA: R@1 IoU 0.5 {PAPER['charades_r1_iou0.5']}, mIoU "
              f"{PAPER['charades_miou']} (the paper's ablations credit the TPM)",
        verdict=min(main, key=_VERDICT_RANK.get) if main else NOT_COMPARABLE))
    if "interpolate" in judged:
        out.append(Claim(
            "Neighbouring token propagation improves on interpolation alone",
            ours=f"mIoU {_pm(metrics, 'propagate/grounding/miou')} with propagation vs "
                 f"{_pm(metrics, 'interpolate/grounding/miou')} without"
                 + (f"; {judged['interpolate'][1]}" if judged["interpolate"][1] else ""),
            paper="the paper reports propagation helps (no separate number in the anchors)",
            verdict=judged["interpolate"][0]))
    return out


@registry.experiment("momentor/encodings")
def encodings_experiment(config, workdir) -> Result:
    """The timestamp-encoding comparison (see the module docstring)."""
    workdir = make_workdir(workdir)
    data = build_data(config, workdir)
    rows = Rows(workdir / "rows.jsonl")
    per_run = {}
    for enc in config.encodings:
        for seed in config.seeds:
            key = f"{enc}/seed{seed}"
            row = rows.get(key)
            if row is None:
                t0 = time.perf_counter()
                spec, params, train_metrics = train_variant(config, data, enc, seed, workdir / enc / f"seed{seed}")
                t1 = time.perf_counter()
                evals = evaluate_variant(spec, params, data, tuple(config.eval_tasks))
                row = rows.add(key, metrics={**evals, **{f"train/{k}": v for k, v in train_metrics.items()},
                                             "time/train_s": t1 - t0, "time/eval_s": time.perf_counter() - t1})
                progress.log(f"{key}: " + ", ".join(f"{k} {row['metrics'][k]:.3f}" for k in SUMMARY if k in row['metrics']))
            per_run[key] = row["metrics"]
    metrics = aggregate(per_run, config.encodings, config.seeds)
    metrics.update({f"encoder/{k}": v for k, v in data["encoder"].items()})
    n_events = sum(len(v.events) for v in data["test"])
    n = {"videos": len(data["test"]), "grounding": n_events, "captioning": n_events,
         "sequencing": n_events - len(data["test"]), "highlight": len(data["test"])}
    table = table_markdown(metrics, config.encodings, n, config.seeds)
    (workdir / "table.md").write_text(table + "\n")
    progress.log("\n" + table)
    figures = [plot_encodings(metrics, config.encodings, workdir / "momentor_encodings.png")]
    head = "propagate/grounding/miou" if "propagate" in config.encodings else f"{config.encodings[0]}/grounding/miou"
    return Result(metrics=metrics, headline=head, claims=encoding_claims(metrics, per_run, config.encodings, config),
                  figures=figures,
                  reference={"propagate/grounding/r1_iou0.5": PAPER["charades_r1_iou0.5"] / 100,
                             "propagate/grounding/miou": PAPER["charades_miou"] / 100},
                  notes=f"data engine: {len(data['train'])} training / {len(data['test'])} held-out videos, "
                        f"{config.num_frames} frames and temporal tokens, {n_events} held-out events; "
                        f"stages {dict(zip(STAGES, config.stage_steps))} steps of batch {config.batch_size}; "
                        f"seeds {tuple(config.seeds)}; loss weighted per {config.get('loss_weighting', 'video')}; "
                        f"the paper's numbers are Charades-STA / QVHighlights, "
                        "for orientation only")


@registry.experiment("momentor/reproduce")
def reproduce(config, workdir) -> Result:
    """The parts of `config.parts` at one scale (the encoding comparison, with its claims)."""
    return gather_parts("momentor", config, pathlib.Path(__file__).parent / "configs", workdir,
                        headline_part="encodings")

