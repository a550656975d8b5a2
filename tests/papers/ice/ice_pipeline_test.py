"""The ICE pipeline with a scripted LLM (prompts, parsing, sampling seeds, decomposition), its resume
after a kill, and the same pipeline through a stub OpenAI-compatible server on 127.0.0.1."""


import numpy as np
import pytest

from jaxml.llm.openai_http import OpenAICompatibleLLM
from jaxml.papers.ice import data, pipeline


class ScriptedLLM:
    """Clarification prompts get two readings (or none for 'of price'); answers depend on the reading."""

    def __init__(self, fail_after=None):
        self.calls, self.prompts, self.fail_after = 0, [], fail_after

    def generate_text(self, prompts, *, max_new_tokens, chat=False, stop=(), seed=0, **sampling):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise KeyboardInterrupt("killed")
        self.prompts += list(prompts)
        return [self._one(p, seed) for p in prompts]

    @staticmethod
    def _one(prompt, seed):
        if prompt.rstrip().endswith("Rewrites:"):
            if "ascending order of" in prompt.split("Instruction:")[-1]:
                return "No clarification needed."
            return "1. Sort by size.\n2) Sort by price.\n- sort by size.\nInstruction: ignored"
        if "by size" in prompt:
            return "small first\nextra"
        if "by price" in prompt:
            return "cheap first" if seed % 2 else "cheap first!"
        return f"answer {seed % 3}"

    def logprobs(self, prompts, continuations):
        raise NotImplementedError


def _examples():
    return [e for e in data.ambiguous_instructions(seed=0, per_family=2, families=("order",))]


def test_pipeline_clarifies_answers_and_decomposes(tmp_path):
    llm = ScriptedLLM()
    settings = pipeline.PipelineSettings(samples=4, clarify_samples=2, shots=2)
    examples = _examples()
    results = pipeline.run(llm, examples, settings, tmp_path / "gen.jsonl", shot_pool=data.ambiguous_instructions(9, 2))
    for e, r in zip(examples, results):
        if e.is_ambiguous:
            assert r.clarifications == ["Sort by size.", "Sort by price."]     # parsed, de-duplicated
            assert r.answers == [["small first"] * 4, ["cheap first!", "cheap first"] * 2]
            assert abs(float(r.decomposition.data) - 1.0) < 1e-6             # two readings, one answer each
            assert abs(float(r.decomposition.model)) < 1e-6
        else:
            assert r.clarifications == [e.instruction]
            assert len(set(r.answers[0])) == 3                                # answer 0/1/2 by seed
            assert float(r.decomposition.data) == pytest.approx(0.0, abs=1e-6)
    # answer sample i uses seed + 1000 + i: 4 distinct seeds per prompt
    assert llm.calls == 2 + 4


class SharedPrefillLLM(ScriptedLLM):
    """The same answers, but several samples per prompt in one call (as LocalLLM's samples_per_prompt)."""

    def generate_text(self, prompts, *, max_new_tokens, chat=False, stop=(), seed=0, samples_per_prompt=1,
                      **sampling):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise KeyboardInterrupt("killed")
        return [self._one(p, seed + i) for p in prompts for i in range(samples_per_prompt)]


def test_shared_prefill_backends_get_one_call_per_batch_and_the_same_answers(tmp_path):
    settings = pipeline.PipelineSettings(samples=4, clarify_samples=2, shots=2)
    pool = data.ambiguous_instructions(9, 2)
    shared = SharedPrefillLLM()
    a = pipeline.run(shared, _examples(), settings, tmp_path / "a.jsonl", shot_pool=pool)
    b = pipeline.run(ScriptedLLM(), _examples(), settings, tmp_path / "b.jsonl", shot_pool=pool)
    assert [r.answers for r in a] == [r.answers for r in b]        # sample i at seed + 1000 + i on both paths
    assert shared.calls == 2 + 1                                   # 2 clarification seeds, 1 answer call
    again = SharedPrefillLLM()
    pipeline.run(again, _examples(), settings, tmp_path / "a.jsonl", shot_pool=pool)
    assert again.calls == 0                                        # everything cached


def test_a_killed_run_resumes_from_the_cache(tmp_path):
    cache = tmp_path / "gen.jsonl"
    settings = pipeline.PipelineSettings(samples=3, clarify_samples=1, shots=0)
    with pytest.raises(KeyboardInterrupt):
        pipeline.run(ScriptedLLM(fail_after=2), _examples(), settings, cache)       # dies in the second answer pass
    with cache.open("a") as f:
        f.write('{"key": "cut-off')                                                # a half-written last line
    resumed = ScriptedLLM()
    results = pipeline.run(resumed, _examples(), settings, cache)
    assert resumed.calls == 2                                                     # only the 2 missing passes
    fresh = pipeline.run(ScriptedLLM(), _examples(), settings, None)
    assert [r.answers for r in results] == [r.answers for r in fresh]


def test_parsing_and_retrieval():
    texts = ["Rewrite 1: A.\n2. B\n\n", "* a.\nNo clarification needed.\nInput: x"]
    assert pipeline.parse_clarifications(texts, "orig", 5) == ["A.", "B"]
    assert pipeline.parse_clarifications(["No clarification needed."], "orig", 5) == ["orig"]
    assert pipeline.parse_clarifications(["a\nb\nc"], "orig", 2) == ["a", "b"]
    pool = data.ambiguous_instructions(1, 1)
    shots = pipeline.retrieve_shots("Round the number to one decimal place.", pool, 2)
    assert shots[0].family == "round"
    vectors = {e.instruction: np.eye(len(pool))[i] for i, e in enumerate(pool)}
    embed = lambda texts: np.stack([vectors.get(t, np.eye(len(pool))[3]) for t in texts])  # noqa: E731
    assert pipeline.retrieve_shots("query", pool, 1, embed)[0] == pool[3]
    with pytest.raises(ValueError, match="samples must be >= 1"):
        pipeline.PipelineSettings(samples=0)


def _chat_answer(path, body):
    content = ScriptedLLM._one(body["messages"][0]["content"], body["seed"])
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}


def test_the_pipeline_through_an_openai_compatible_server_needs_a_url_and_a_model_name(openai_stub):
    server = openai_stub(_chat_answer)
    llm = OpenAICompatibleLLM(server.url, "any-model")
    settings = pipeline.PipelineSettings(samples=2, clarify_samples=1, shots=0)
    results = pipeline.run(llm, _examples()[:1], settings)
    bodies = [b for _, b in server.requests]
    assert results[0].clarifications == ["Sort by size.", "Sort by price."]
    assert abs(float(results[0].decomposition.data) - 1.0) < 1e-6
    assert {b["model"] for b in bodies} == {"any-model"} and len(bodies) == 1 + 2 * 2
    assert sorted({b["seed"] for b in bodies}) == [0, 1000, 1001]
