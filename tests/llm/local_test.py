"""The LLM protocol over the real SmolLM2-135M-Instruct.

Every generation here asks for 16 new tokens from prompts padded to 64 tokens, so the tests share
compiled decoding programs for batches of 1, 2 and 4 rows."""

import dataclasses

import numpy as np
import pytest

from jaxml.llm.base import protocol_mismatches
from jaxml.llm.local import LocalLLM

NEW = 16


@pytest.fixture(scope="module")
def llm():
    return LocalLLM.smollm2(batch_size=4, prompt_bucket=64)


def test_signatures_follow_the_llm_protocol(llm):
    assert protocol_mismatches(llm) == []


def test_chat_answers_a_factual_question(llm):
    [answer] = llm.generate_text(["What is the capital of France?"], max_new_tokens=NEW, chat=True)
    assert "Paris" in answer


def test_batched_generation_equals_one_at_a_time(llm):
    prompts = ["The sun rises in the", "My favourite food is pizza because it is"]
    together = llm.generate_text(prompts, max_new_tokens=NEW)
    alone = [llm.generate_text([p], max_new_tokens=NEW)[0] for p in prompts]
    assert together == alone
    assert len(together) == 2 and not any(t.startswith(p) for t, p in zip(together, prompts))   # no prompt echo
    padded = dataclasses.replace(llm, row_multiple=4)          # filler rows are decoded and dropped
    assert padded.generate_text(prompts, max_new_tokens=NEW) == together


def test_stop_strings_cut_the_text(llm):
    [full] = llm.generate_text(["Once upon a time, there was a little"], max_new_tokens=NEW)
    assert full.startswith(" girl named Emma")
    [cut] = llm.generate_text(["Once upon a time, there was a little"], max_new_tokens=NEW, stop=[" Emma"])
    assert cut == " girl named"


def test_logprobs_prefer_the_models_own_continuation(llm):
    prompt = "It is a truth universally acknowledged, that a single man in possession of a good fortune"
    [greedy] = llm.generate_text([prompt], max_new_tokens=NEW)
    shuffled = " " + " ".join(reversed(greedy.split()))
    lp_greedy, lp_shuffled = llm.logprobs([prompt, prompt], [greedy, shuffled])
    # one log-prob per continuation token, as the protocol promises
    assert lp_greedy.shape == (len(llm.tokenizer.encode(greedy, add_bos=False)),)
    assert lp_shuffled.shape == (len(llm.tokenizer.encode(shuffled, add_bos=False)),)
    assert lp_greedy.dtype == np.float64 and (lp_greedy <= 0).all()
    assert lp_greedy.sum() > lp_shuffled.sum() + 5.0


def test_bad_inputs(llm):
    with pytest.raises(ValueError, match="unknown sampling option"):
        llm.generate_text(["hi"], max_new_tokens=2, temprature=0.3)
    with pytest.raises(TypeError, match="list of strings"):
        llm.generate_text("hi", max_new_tokens=2)
    with pytest.raises(ValueError, match="exceeds the model's context of 8192"):
        llm.generate_text(["word " * 8200], max_new_tokens=2)
    with pytest.raises(ValueError, match="2 prompts but 1 continuations"):
        llm.logprobs(["a", "b"], ["c"])


def test_make_llm_specs_and_row_padding_options():
    from jaxml.llm.backends import make_llm
    from jaxml.llm.local import LocalLLM
    from jaxml.llm.openai_http import OpenAICompatibleLLM

    http = make_llm("http://localhost:8000/v1", model="big")
    assert isinstance(http, OpenAICompatibleLLM) and http.model == "big"
    with pytest.raises(ValueError, match="needs model="):
        make_llm("http://localhost:8000/v1")
    with pytest.raises(ValueError, match="accepted 'smollm2'"):
        make_llm("gpt")
    with pytest.raises(ValueError, match="row_multiple=0 must be an int >= 1"):
        LocalLLM(None, {}, None, row_multiple=0)
