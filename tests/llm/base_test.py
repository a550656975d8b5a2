"""`protocol_mismatches`: the signature check behind the backends' protocol tests catches departures
that `isinstance(x, LLM)` (a runtime Protocol: method names only) lets through."""

import numpy as np
import pytest

from jaxml.llm.base import LLM, SamplingOptions, cut_at_stop, protocol_mismatches


class _Conforming:
    def generate_text(self, prompts, *, max_new_tokens, chat=False, stop=(), seed=0, logits_processor=None,
                      **sampling):
        return [""] * len(prompts)

    def logprobs(self, prompts, continuations):
        return [np.zeros(0)] * len(prompts)


class _Drifted:
    def generate_text(self, prompts, max_new_tokens, *, chat=True, seed=0, temperature=0.0):
        return []

    def logprobs(self, prompts, continuations, model):
        return []


def test_a_conforming_backend_has_no_mismatches():
    assert protocol_mismatches(_Conforming) == [] and protocol_mismatches(_Conforming()) == []


def test_drifted_signatures_are_named_although_isinstance_passes():
    assert isinstance(_Drifted(), LLM)   # what the runtime Protocol checks: only the names
    assert protocol_mismatches(_Drifted()) == [
        "generate_text: 'max_new_tokens' is positional or keyword, the protocol has keyword-only",
        "generate_text: 'chat' defaults to True, the protocol to False",
        "generate_text: no parameter 'stop'",
        "generate_text: takes no **sampling (the sampling options)",
        "logprobs: extra required parameter 'model'",
    ]
    assert protocol_mismatches(object()) == ["generate_text: missing", "logprobs: missing"]


def test_sampling_options_and_stop_strings():
    assert SamplingOptions.from_kwargs(top_k=5, filter_order="before_processor").filter_order == "before_processor"
    with pytest.raises(ValueError, match="accepted"):
        SamplingOptions.from_kwargs(top_n=5)
    assert cut_at_stop("alpha beta STOP gamma END", ["END", "STOP"]) == "alpha beta "
    assert cut_at_stop("no stop here", ["END"]) == "no stop here"
