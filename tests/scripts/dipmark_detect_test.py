"""scripts/dipmark_detect.py: the key forms, a watermarked text found through the CLI, errors."""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest

from jaxml.papers.dipmark import keys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "dipmark_detect.py"


@pytest.fixture(scope="module")
def cli():
    spec = importlib.util.spec_from_file_location("dipmark_detect", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def smollm2(cli):
    return cli.smollm2_tokenizer()


def _green_text(tokenizer, vocab, key, n=80, seed=0):
    """A text of whole-word tokens, each chosen green (back half) for its 5-token context code."""
    words = np.array(sorted(i for t, i in tokenizer.backend.get_vocab().items()
                            if t.startswith("Ġ") and t[1:].isalpha() and t[1:].islower() and len(t) > 3))
    rng = np.random.default_rng(seed)
    ids = list(rng.choice(words, 5))
    for _ in range(n):
        seed_ = keys.context_seeds(jnp.asarray(ids[-5:], jnp.int32), key)
        pos = np.asarray(keys.permutation_positions(jnp.asarray(words), seed_, vocab))
        ids.append(int(rng.choice(words[pos >= vocab / 2])))
    return tokenizer.decode(ids)


def test_parse_key_forms(cli):
    assert cli.parse_key("42") == keys.as_key_bytes(42)
    assert cli.parse_key("0x2a") == keys.as_key_bytes(42)
    assert cli.parse_key("bytes:6b6579") == b"key"
    assert cli.parse_key("42", mode="official") == (42).to_bytes(128, "big")   # the release's key encoding
    assert cli.parse_key("bytes:6b6579", mode="official") == b"key"
    for bad in ("", "forty-two", "bytes:zz", "-3"):
        with pytest.raises(ValueError):
            cli.parse_key(bad)


def test_cli_finds_the_watermark_and_only_with_the_right_key(cli, smollm2, tmp_path):
    tokenizer, vocab = smollm2
    key = cli.parse_key("12345")
    text = _green_text(tokenizer, vocab, key)
    marked = cli.detect_text(text, key, tokenizer, vocab)
    assert marked["verdict"] == "watermarked" and marked["p_value"] < 1e-6, marked
    assert marked["scored"] == marked["tokens"] - 5
    wrong = cli.detect_text(text, cli.parse_key("54321"), tokenizer, vocab)
    assert wrong["verdict"] == "not detected", wrong
    kgw = cli.detect_text(text, key, tokenizer, vocab, method="kgw", gamma="min")
    assert kgw["verdict"] == "watermarked" and "not corrected" in kgw["note"]
    # the script itself, as a user runs it
    path = tmp_path / "text.txt"
    path.write_text(text, encoding="utf-8")
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run([sys.executable, str(SCRIPT), f"--text_file={path}", "--key=0x3039", "--json"],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["green"] == marked["green"] and report["verdict"] == "watermarked"


def test_cli_errors_name_the_problem(cli, smollm2):
    tokenizer, vocab = smollm2
    key = cli.parse_key("1")
    with pytest.raises(ValueError, match="empty"):
        cli.detect_text("  \n", key, tokenizer, vocab)
    with pytest.raises(ValueError, match="context width"):
        cli.detect_text("Hi there", key, tokenizer, vocab)
    with pytest.raises(ValueError, match="gamma"):
        cli.detect_text("a text that is long enough to score", key, tokenizer, vocab, gamma="half")
