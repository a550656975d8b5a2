"""The benchmark harness and the LLM-graph + solver pipeline, with scripted models and a stub
OpenAI-compatible server on 127.0.0.1."""

import re

import numpy as np
import pytest

from jaxml.llm.cache import GenerationCache
from jaxml.llm.openai_http import OpenAICompatibleLLM
from jaxml.papers.asynchow import evaluate, generator, graph_solver as gs, metrics, prompts, release
from jaxml.papers.asynchow.plan import Plan, critical_path

# Which side of each of the ten phrasings is the preceding step: True when it is named first.
PRECEDING_FIRST = [False, True, True, True, True, True, False, True, True, False]


def _oracle_edge(sentence: str) -> str:
    """The edge of one constraint sentence, read with the phrasing table above (independent of our code)."""
    a, b = re.findall(r"step (\d+)", sentence.lower())[:2]
    for template, first in zip(prompts.ORDERING_TEMPLATES, PRECEDING_FIRST):
        pattern = re.escape(template.lower()).replace(r"\[preceding\ step\]", r"step \d+").replace(
            r"\[following\ step\]", r"step \d+")
        if re.fullmatch(pattern, sentence.lower()):
            return f"{a} -> {b}\n" if first else f"{b} -> {a}\n"
    raise AssertionError(f"no phrasing matches {sentence!r}")


class ScriptedLLM:
    """Edge prompts: the oracle edge of the last sentence (or, with `flip`, the reverse). Benchmark
    questions: the gold answer quoted for tasks whose step count is even, "1 minute" otherwise."""

    def __init__(self, flip=False):
        self.flip, self.calls = flip, 0

    def generate_text(self, prompts_, *, max_new_tokens, chat=False, stop=(), seed=0, **options):
        self.calls += 1
        out = []
        for p in prompts_:
            if p.endswith("Edge: "):
                edge = _oracle_edge(p.rsplit("Sentence: ", 1)[1].split("\n")[0])
                a, b = edge.strip().split(" -> ")
                out.append(f"{b} -> {a}\n" if self.flip else edge)
            else:
                n = len(gs.steps_from_prompt(p))
                steps = gs.steps_from_prompt(p)
                plan = Plan("x", tuple(s for s, _ in steps), tuple(d for _, d in steps),
                            _deps_from_question(p))
                out.append(f'So "{prompts.answer_text(plan)}".' if n % 2 == 0 else 'It takes "1 minute".')
        return out


def _deps_from_question(p):
    return tuple(tuple(int(x) for x in _oracle_edge(s).split(" -> ")) for s in gs.constraint_sentences(p))


def test_the_phrasing_table_matches_the_templates_meaning():
    for template, first in zip(prompts.ORDERING_TEMPLATES, PRECEDING_FIRST):
        sentence = template.replace("[preceding step]", "step 3").replace("[following step]", "step 8")
        assert _oracle_edge(sentence[0].upper() + sentence[1:]) == "3 -> 8\n"
        assert (sentence.index("step 3") < sentence.index("step 8")) is first


def test_prompt_readers_recover_the_plan():
    for i, plan in enumerate(generator.generate_plans(60, seed=11, text_source="synthetic")):
        template = prompts.ORDERING_TEMPLATES[i % 10]
        q = prompts.build_prompt(plan, "vanilla", template)
        assert gs.steps_from_prompt(q) == list(zip(plan.steps, plan.durations))
        sentences = gs.constraint_sentences(q)
        assert len(sentences) == len(plan.deps)
        assert sorted(_deps_from_question(q)) == sorted(plan.deps)
        shots = generator.generate_plans(2, seed=12, text_source="synthetic")
        k_shot = prompts.few_shot_prompt(plan, "vanilla", shots, cot=True, template=template)
        assert gs.steps_from_prompt(k_shot) == list(zip(plan.steps, plan.durations))
        assert gs.constraint_sentences(k_shot) == sentences


def test_solve_edges_and_problems():
    plan = Plan("How to x", ("a.", "b.", "c."), ("20 minutes", "15 minutes", "40 minutes"), ((1, 3), (2, 3)))
    q = prompts.build_prompt(plan)
    ex = gs.solve_edges(q, "1 -> 3\n2 -> 3\n")
    assert ex.answer == critical_path(plan) and ex.problems == ()
    ex = gs.solve_edges(q, "1 -> 3\n1 -> 3\n4 -> 1\n2 -> 2\n")
    assert ex.edges == ((1, 3),) and len(ex.problems) == 3 and ex.answer.hi == 60 * 60
    ex = gs.solve_edges(q, "1 -> 3\n3 -> 1\n")
    assert ex.answer is None and "cycle" in ex.problems[-1]
    assert not gs.answer_is_correct(None, critical_path(plan))


@pytest.mark.parametrize("mode", gs.MODES)
def test_extract_and_solve_with_a_correct_and_a_reversing_model(mode, tmp_path):
    plans = generator.generate_plans(40, seed=5, text_source="synthetic")
    questions = [prompts.build_prompt(p, "vanilla", prompts.ORDERING_TEMPLATES[i % 10]) for i, p in enumerate(plans)]

    class WholeOracle(ScriptedLLM):
        def generate_text(self, prompts_, **kw):
            self.calls += 1
            return ["".join(_oracle_edge(s) for s in gs.constraint_sentences(p.split("Question:")[0] + "Question:"))
                    for p in prompts_]

    llm = WholeOracle() if mode == "whole" else ScriptedLLM()
    found = gs.extract_and_solve(llm, questions, GenerationCache(tmp_path / "c.jsonl"), mode=mode)
    assert [f.answer for f in found] == [critical_path(p) for p in plans]
    assert all(set(f.edges) == set(p.deps) for f, p in zip(found, plans))
    if mode == "per_constraint":
        reversed_ = gs.extract_and_solve(ScriptedLLM(flip=True), questions, GenerationCache(None), mode=mode)
        assert all(set(f.edges) == {(b, a) for a, b in p.deps} for f, p in zip(reversed_, plans))
        again = ScriptedLLM()
        gs.extract_and_solve(again, questions, GenerationCache(tmp_path / "c.jsonl"), mode=mode)
        assert again.calls == 0                                   # cached: a rerun generates nothing
    with pytest.raises(ValueError, match="mode="):
        gs.extract_and_solve(llm, questions, GenerationCache(None), mode="joint")


def test_run_benchmark_scores_with_the_benchmarks_rule(tmp_path):
    tasks = release.make_tasks(generator.split("test", 24, text_source="synthetic"))
    shots = evaluate.illustration_plans(text_source="synthetic")
    rows = evaluate.run_benchmark(ScriptedLLM(), tasks, ["zero-shot", "k-shot CoT"], GenerationCache(None),
                                  shots=shots, graph_solver_mode="per_constraint")
    table = metrics.accuracy_table(rows, ("method",))
    even = np.array([t.plan.n % 2 == 0 for t in tasks])
    one_minute = np.array([t.gold.contains(60) for t in tasks])
    want = float(np.mean(even | one_minute))
    assert table[("zero-shot",)].accuracy == pytest.approx(want)
    assert table[("k-shot CoT",)].accuracy == pytest.approx(want)
    assert table[(evaluate.ORACLE,)].accuracy == 1.0
    assert table[(evaluate.GRAPH_SOLVER,)].accuracy == 1.0
    assert {r["complexity"] for r in rows} <= set(generator.COMPLEXITY_BINS)
    with pytest.raises(ValueError, match="unknown methods"):
        evaluate.run_benchmark(ScriptedLLM(), tasks, ["magic"], GenerationCache(None))
    with pytest.raises(ValueError, match="needs 3 illustration plans"):
        evaluate.method_prompt(tasks[0].plan, "k-shot", shots[:1], prompts.ORDERING_TEMPLATES[0])


def _stub_answer(path, body):
    if path.endswith("/chat/completions"):
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": 'About "1 hour".'}}]}
    # a completion: the edge of the last sentence, first-named step first (wrong for 3 of the 10 phrasings)
    sentence = body["prompt"].rsplit("Sentence: ", 1)[1].split("\n")[0]
    a, b = re.findall(r"step (\d+)", sentence.lower())[:2]
    return {"choices": [{"index": 0, "text": f"{a} -> {b}\nSentence:"}]}


def test_the_benchmark_through_an_openai_compatible_server_needs_a_url_and_a_model_name(tmp_path, openai_stub):
    server = openai_stub(_stub_answer)
    llm = OpenAICompatibleLLM(server.url, "any-model")
    tasks = release.make_tasks(generator.split("test", 12, text_source="synthetic"))
    rows = evaluate.run_benchmark(llm, tasks, ["zero-shot"], GenerationCache(tmp_path / "g.jsonl"),
                                  graph_solver_mode="per_constraint")
    assert {b["model"] for _, b in server.requests} == {"any-model"}
    zero = [r for r in rows if r["method"] == "zero-shot"]
    assert [r["correct"] for r in zero] == [t.gold.contains(3600) for t in tasks]
    templates = evaluate.templates_for(len(tasks), 0)
    for t, tpl, r in zip(tasks, templates, [r for r in rows if r["method"] == evaluate.GRAPH_SOLVER]):
        first = PRECEDING_FIRST[prompts.ORDERING_TEMPLATES.index(tpl)]
        assert r["edges_exact"] is (first or not t.plan.deps)
