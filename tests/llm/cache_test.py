"""The generation cache: only missing texts are generated, a killed run resumes, damage is reported."""

import json

import pytest

from jaxml.llm.cache import GenerationCache, samples_from_one_prefill


class CountingLLM:
    """Text = prompt reversed + seed; counts the prompts it was asked for."""

    def __init__(self):
        self.asked = []

    def generate_text(self, prompts, *, max_new_tokens, chat=False, stop=(), seed=0, **sampling):
        self.asked += list(prompts)
        return [f"{p[::-1]}|{seed}|{sampling.get('logits_processor', '')}" for p in prompts]


def test_only_missing_prompts_are_generated_and_texts_persist(tmp_path):
    path = tmp_path / "gen.jsonl"
    llm = CountingLLM()
    cache = GenerationCache(path)
    first = cache.generate(llm, ["ab", "cd", "ab"], chat=True, seed=1, max_new_tokens=8, temperature=0.0, batch=1)
    assert first == ["ba|1|", "dc|1|", "ba|1|"] and sorted(llm.asked) == ["ab", "cd"]   # the repeat asked once
    again = GenerationCache(path)                                                   # a new process
    llm2 = CountingLLM()
    assert again.generate(llm2, ["cd", "ef"], chat=True, seed=1, max_new_tokens=8, temperature=0.0) == ["dc|1|", "fe|1|"]
    assert llm2.asked == ["ef"]
    # another seed or temperature or tag is another request
    assert again.generate(llm2, ["cd"], chat=True, seed=2, max_new_tokens=8, temperature=0.0) == ["dc|2|"]
    assert again.generate(llm2, ["cd"], chat=True, seed=1, max_new_tokens=8, temperature=0.0, tag="g",
                          logits_processor="P") == ["dc|1|P"]
    assert llm2.asked == ["ef", "cd", "cd"]


def test_options_without_a_tag_are_refused(tmp_path):
    with pytest.raises(ValueError, match="cache tag"):
        GenerationCache(None).generate(CountingLLM(), ["a"], chat=False, seed=0, max_new_tokens=4, temperature=0.0,
                                       logits_processor="P")


def test_keys_without_a_tag_are_the_untagged_request():
    """Caches written before tags existed stay valid: the untagged key hashes the same five fields."""
    import hashlib
    want = hashlib.sha256(json.dumps(["p", True, 3, 16, 0.5]).encode()).hexdigest()
    assert GenerationCache.key("p", chat=True, seed=3, max_new_tokens=16, temperature=0.5) == want
    assert GenerationCache.key("p", chat=True, seed=3, max_new_tokens=16, temperature=0.5, tag="x") != want


def test_a_cut_last_line_is_generated_again_and_a_damaged_middle_line_is_an_error(tmp_path):
    path = tmp_path / "gen.jsonl"
    GenerationCache(path).generate(CountingLLM(), ["ab", "cd"], chat=False, seed=0, max_new_tokens=4,
                                   temperature=0.0, batch=1)
    text = path.read_text()
    path.write_text(text[:-7])                                   # killed while writing the second record
    llm = CountingLLM()
    assert GenerationCache(path).generate(llm, ["ab", "cd"], chat=False, seed=0, max_new_tokens=4,
                                          temperature=0.0) == ["ba|0|", "dc|0|"]
    assert llm.asked == ["cd"]
    lines = path.read_text().splitlines()
    path.write_text("\n".join(["{not json"] + lines) + "\n")
    with pytest.raises(ValueError, match="line 1 is not a cache record"):
        GenerationCache(path)


def test_samples_from_one_prefill_detects_the_local_backends_extension():
    class Local:
        def generate_text(self, prompts, *, max_new_tokens, samples_per_prompt=1, **kw):
            return []
    assert samples_from_one_prefill(Local()) and not samples_from_one_prefill(CountingLLM())
