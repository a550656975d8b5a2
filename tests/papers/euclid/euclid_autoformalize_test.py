
import pytest

from jaxml.papers.euclid import autoformalize, book
from jaxml.papers.euclid import syntax as S


def test_prompt_has_the_examples_and_not_the_answer():
    p = autoformalize.prompt_for("I.6")
    sts = book.statements()
    for ex in autoformalize.EXAMPLES:
        assert S.format_statement(sts[ex], header=False) in p
    assert S.format_statement(sts["I.6"], header=False) not in p
    assert p.endswith(f"Proposition I.6: {sts['I.6'].text}\nFormal:")
    with pytest.raises(ValueError, match="unknown proposition"):
        autoformalize.prompt_for("I.49")


def test_scripted_answers_are_scored_exactly():
    answers = {
        "I.2": "forall (p q r : Point), q != r => exists (s : Point), |p s| = |q r|",             # renamed
        "I.6": "forall (a b c : Point), triangle(a, b, c) => |a b| = |a c|",                     # dropped hypothesis
        "I.18": "forall (a b c : Point), triangle(a, b, c) and |a b| < |a c| => angle(a, c, b) <= angle(a, b, c)",
        "I.20": "forall (a b c : Point), triangle(a, b, c) => angle(a, b, c) = right",           # unrelated
        "I.47": "forall (a b c : Point), triangle(a, b, c) and angle(b, a, c) = right => |b c| = ",
    }
    report = autoformalize.run(autoformalize.ScriptedLLM(answers), list(answers) + ["I.3"])
    got = {r.name: r.category for r in report.rows}
    assert got == {"I.2": "equivalent", "I.6": "test_implies_ground", "I.18": "ground_implies_test",
                   "I.20": "neither", "I.47": "parse_error", "I.3": "parse_error"}
    assert report.counts == {"equivalent": 1, "ground_implies_test": 1, "test_implies_ground": 1, "neither": 1,
                             "timeout": 0, "parse_error": 2}
    assert report.equivalent_rate == pytest.approx(1 / 6)
    assert "expected a formula or a magnitude" in [r for r in report.rows if r.name == "I.47"][0].detail


def test_only_the_first_line_of_an_answer_counts():
    row = autoformalize.score_output("I.20", " forall (a b c : Point), triangle(a, b, c) => |b c| < |a b| + |a c|\n"
                                             "Proposition I.21: ...")
    assert row.category == "equivalent"


def test_bad_requests_are_rejected():
    with pytest.raises(ValueError, match="few-shot example"):
        autoformalize.run(autoformalize.ScriptedLLM({}), ["I.1"])
    with pytest.raises(ValueError, match="accepted 'smollm2'"):
        autoformalize.make_llm("gpt")
    with pytest.raises(ValueError, match="needs model="):
        autoformalize.make_llm("http://localhost:8000/v1")
    llm = autoformalize.make_llm("http://localhost:8000/v1", model="big")
    assert llm.base_url == "http://localhost:8000/v1" and llm.model == "big"


@pytest.mark.slow
def test_local_smollm2_end_to_end():
    """The harness through the real local model: its answer is the model's greedy continuation of
    the prompt, cut at the first newline, and it lands in exactly one category."""
    llm = autoformalize.make_llm("smollm2", batch_size=2)
    report = autoformalize.run(llm, ["I.2", "I.3"], max_new_tokens=24)
    direct = llm.generate_text([autoformalize.prompt_for("I.2")], max_new_tokens=24, stop=["\n"])
    assert report.rows[0].output == direct[0].strip()
    assert sum(report.counts.values()) == 2


@pytest.mark.slow
def test_local_smollm2_constrained_answers_parse():
    """Under the statement grammar the real model's answers parse, also when 24 tokens run out mid-way
    (the completion is written); the constrained answer is the decoded text (tokens concatenate)."""
    llm = autoformalize.make_llm("smollm2", batch_size=2)
    report = autoformalize.run(llm, ["I.2", "I.3"], max_new_tokens=24, constrained=True)
    assert report.counts["parse_error"] == 0, [(r.output, r.detail) for r in report.rows]
    for r in report.rows:
        S.parse_statement(r.output)


def _oracle_answer(path, body):
    """A stand-in for a large model behind an OpenAI-compatible `/v1/completions`: it answers each prompt with
    our formalisation of the proposition it asks for (the last 'Proposition' line)."""
    name = body["prompt"].rsplit("Proposition ", 1)[-1].split(":", 1)[0]
    return {"choices": [{"index": 0, "text": " " + S.format_statement(book.statements()[name], header=False)
                         + "\nProposition"}]}


def test_http_backend_needs_only_a_url(openai_stub):
    server = openai_stub(_oracle_answer)
    report = autoformalize.run(autoformalize.make_llm(server.url, model="oracle"), ["I.2", "I.7"], max_new_tokens=64)
    assert [r.category for r in report.rows] == ["equivalent", "equivalent"]
    path, body = server.requests[0]
    assert path == "/v1/completions" and body["model"] == "oracle" and body["temperature"] == 0.0
    assert body["max_tokens"] == 64 and body["stop"] == ["\n"]
