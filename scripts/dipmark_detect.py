#!/usr/bin/env python3
"""Detects a DiPmark / KGW watermark in a text file with only the private key and the tokenizer.

    python scripts/dipmark_detect.py --text_file=essay.txt --key=42
    python scripts/dipmark_detect.py --text_file=essay.txt --key=0x2a --gamma=min --fpr=0.001
    python scripts/dipmark_detect.py --text_file=essay.txt --key=bytes:6b6579 --method=kgw
    python scripts/dipmark_detect.py --text_file=essay.txt --key=42 --mode=official

`--mode`: `ours` (default: our keyed Feistel permutation family) or `official` (the DiPmark
release's `torch.randperm` family, short context codes and (pos + 1) / V >= gamma green rule,
`jaxml/papers/dipmark/official.py`): a text is only detected under the mode it was watermarked in.
`--key`: an integer, decimal or 0x-prefixed hex, encoded as 128 bytes little-endian in mode
`ours` (the form of the experiments' keys, see `jaxml.papers.dipmark.experiments.experiment_key`)
and big-endian in mode `official` (the release's `getrandbits(1024).to_bytes(128, "big")`), or
`bytes:<hex>` for raw key bytes. `--gamma`: the green split (the back 1 - gamma of each permutation is green),
or `min` for the official code's minimum p-value over gamma in {0.3, 0.4, 0.5, 0.6, 0.7}
(uncorrected for the five tests: its real false-positive rate is above `--fpr`). The tokenizer is
SmolLM2-135M-Instruct's (from the cached GGUF asset) unless `--tokenizer_json` names a Hugging Face
`tokenizer.json`, in which case `--vocab_size` is required.

Prints the mode, the tokens, the scored tokens (ours: the first 5 have no context code; official:
all but the first), the green count, the
DiPmark score with its Hoeffding p-value (`--method=dipmark`) or the KGW z-score with its normal
p-value (`--method=kgw`), and the verdict at `--fpr`.
"""

from __future__ import annotations

import json
import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from absl import app, flags  # noqa: E402

_TEXT_FILE = flags.DEFINE_string("text_file", None, "UTF-8 text file to test.")
_KEY = flags.DEFINE_string("key", None, "Private key: int (decimal or 0x hex) or bytes:<hex>.")
_GAMMA = flags.DEFINE_string("gamma", "0.5", "Green split in (0, 1), or 'min' (min p over 0.3..0.7, uncorrected).")
_METHOD = flags.DEFINE_enum("method", "dipmark", ["dipmark", "kgw"], "Test statistic: DiPmark score or KGW z.")
_FPR = flags.DEFINE_float("fpr", 0.01, "False-positive rate of the verdict (p-value threshold).")
_CONTEXT = flags.DEFINE_integer("context_width", 5, "Tokens per context code (as the generator).")
_TOKENIZER_JSON = flags.DEFINE_string("tokenizer_json", None, "A tokenizer.json instead of SmolLM2's.")
_VOCAB = flags.DEFINE_integer("vocab_size", None, "Model vocabulary size (required with --tokenizer_json).")
_JSON = flags.DEFINE_bool("json", False, "Print one JSON object instead of text.")
_MODE = flags.DEFINE_enum("mode", "ours", ["ours", "official"],
                          "Permutation family and rules: ours, or the official DiPmark release's.")


def parse_key(text: str, mode: str = "ours") -> bytes:
    """The private key bytes from the command-line form (see the module docstring); an integer is
    encoded little-endian in mode 'ours', big-endian in 'official'."""
    from jaxml.papers.dipmark import keys

    if text is None or not text.strip():
        raise ValueError("--key is required: an int (decimal or 0x hex) or bytes:<hex>")
    text = text.strip()
    if text.startswith("bytes:"):
        try:
            return keys.as_key_bytes(bytes.fromhex(text[6:]))
        except ValueError as e:
            raise ValueError(f"--key={text!r}: {e} (bytes:<hex> takes an even number of hex digits)") from None
    try:
        value = int(text, 16) if text.lower().startswith("0x") else int(text, 10)
    except ValueError:
        raise ValueError(f"--key={text!r} is not an integer (decimal or 0x hex) nor bytes:<hex>") from None
    return keys.as_key_bytes(value, "big" if mode == "official" else "little")


def smollm2_tokenizer():
    """`(tokenizer, vocab_size)` of SmolLM2-135M-Instruct from the GGUF metadata (no weights loaded)."""
    from jaxml.models import llama

    tokenizer = llama.smollm2_tokenizer()
    return tokenizer, tokenizer.vocab_size   # 49,152: the same as the model's embedding rows


def detect_text(text: str, key: bytes, tokenizer, vocab_size: int, *, gamma: str = "0.5", method: str = "dipmark",
                fpr: float = 0.01, context_width: int = 5, mode: str = "ours") -> dict:
    """The detection report of one text (a dict, see the module docstring)."""
    import numpy as np

    from jaxml.papers.dipmark import detect

    if not 0 < fpr < 1:
        raise ValueError(f"--fpr={fpr} must be in (0, 1)")
    if gamma == "min":
        gammas = detect.GAMMAS
    else:
        try:
            gammas = (float(gamma),)
        except ValueError:
            raise ValueError(f"--gamma={gamma!r}: a number in (0, 1) or 'min'") from None
    detector = detect.Detector(key, vocab_size, context_width=context_width, gammas=gammas, mode=mode)
    if not text.strip():
        raise ValueError("the text is empty: nothing to detect")
    ids = tokenizer.encode(text, add_bos=False)
    scores = detector.score([ids])
    if method == "dipmark":
        p = scores.p_value[0]
        stat = scores.score[0]
    else:   # one-sided normal tail of the KGW z
        stat = scores.kgw_z[0]
        p = np.array([0.5 * math.erfc(z / math.sqrt(2)) for z in stat])
    best = int(p.argmin())
    report = {"mode": mode, "tokens": len(ids), "scored": int(scores.n[0]), "gamma": float(scores.gammas[best]),
              "green": int(scores.green[0, best]), "method": method,
              "statistic": "dipmark_score" if method == "dipmark" else "kgw_z", "value": float(stat[best]),
              "p_value": float(p[best]), "fpr": fpr}
    if gamma == "min":
        report["note"] = "minimum p over gammas 0.3..0.7, not corrected for 5 tests"
    report["verdict"] = "watermarked" if report["p_value"] <= fpr else "not detected"
    return report


def main(argv):
    del argv
    if not _TEXT_FILE.value:
        raise app.UsageError("--text_file is required")
    path = pathlib.Path(_TEXT_FILE.value)
    if not path.is_file():
        raise app.UsageError(f"--text_file={path} does not exist")
    try:
        key = parse_key(_KEY.value, _MODE.value)
        if _TOKENIZER_JSON.value:
            import tokenizers

            from jaxml.models.tokenizer import Tokenizer
            if not _VOCAB.value:
                raise ValueError("--vocab_size is required with --tokenizer_json")
            backend = tokenizers.Tokenizer.from_file(_TOKENIZER_JSON.value)
            tokenizer, vocab = Tokenizer(backend, 0, 0, 0, ()), _VOCAB.value
        else:
            tokenizer, vocab = smollm2_tokenizer()
        report = detect_text(path.read_text(encoding="utf-8"), key, tokenizer, vocab, gamma=_GAMMA.value,
                             method=_METHOD.value, fpr=_FPR.value, context_width=_CONTEXT.value, mode=_MODE.value)
    except (ValueError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if _JSON.value:
        print(json.dumps(report))
    else:
        label = "DiPmark score" if report["method"] == "dipmark" else "KGW z"
        print(f"mode {report['mode']}: tokens {report['tokens']}, scored {report['scored']}, green {report['green']} "
              f"(gamma {report['gamma']:g}); {label} {report['value']:.3f}, p-value {report['p_value']:.3g}"
              + (f" ({report['note']})" if "note" in report else ""))
        print(f"verdict at FPR {report['fpr']:g}: {report['verdict']}")
    return 0


if __name__ == "__main__":
    app.run(main)
