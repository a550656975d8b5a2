"""AsyncHow prompts: the release's question text written out by hand from `generate_prompt` (both layouts),
graph structures by hand, and properties over generated plans."""

import pytest

from jaxml.papers.asynchow import parsing, prompts
from jaxml.papers.asynchow.generator import generate_plans
from jaxml.papers.asynchow.plan import Interval, Plan, critical_path, format_seconds

BREAD = Plan("How to bake bread", ("Mix the dough.", "Heat the oven.", "Bake the loaf."),
             ("20 minutes", "15 minutes", "40 minutes"), deps=((1, 3), (2, 3)))
BAG = Plan("How to pack a bag", ("Fold the shirts.", "Roll the socks.", "Find the charger."),
           ("5 minutes", "2 minutes", "1 minute"))
TREE = Plan("How to plant a tree", ("Dig a hole.", "Water the hole.", "Loosen the roots.", "Buy compost.",
                                    "Set the tree."),
            ("30 minutes", "5 minutes", "10 minutes", "1 hour", "15 minutes"),
            deps=((1, 2), (1, 3), (1, 4), (2, 5), (3, 5), (4, 5)))
DIAMOND = Plan("How to fix a fence", ("a.", "b.", "c.", "d."), ("1 hour",) * 4, deps=((1, 2), (1, 3), (2, 4), (3, 4)))
CHAIN11 = Plan("How to walk a dog", tuple(f"Do {i}." for i in range(1, 12)), ("1 minute",) * 11,
               deps=tuple((i, i + 1) for i in range(1, 11)))
GARDEN = Plan("How to grow a garden", ("Till the soil.", "Plant the seeds.", "Buy a hose."),
              ("3 days", "2 months", "1 week"), deps=((1, 2),))

Q = ("Question: Assume that you need to execute all the steps to complete the task and that infinite resources "
     "are available. What is the shortest possible time to {task}? ")

BREAD_VANILLA = (
    "To bake bread, here are the steps and the times needed for each step.\n"
    "Step 1. Mix the dough. (20 minutes)\n"
    "Step 2. Heat the oven. (15 minutes)\n"
    "Step 3. Bake the loaf. (40 minutes)\n"
    "\n"
    "\n"
    "These ordering constraints need to be obeyed when executing above steps:\n"
    "Step 1 must precede step 3.\n"
    "Step 2 must precede step 3.\n"
    "\n"
    "\n"
    + Q.format(task="bake bread") + "Answer the time in double quotes.\nAnswer:")

BREAD_VANILLA_COMMITTED = (
    "To bake bread, here are the steps and the times needed for each step.\n"
    "    Step 1. Mix the dough. (20 minutes)\n"
    "Step 2. Heat the oven. (15 minutes)\n"
    "Step 3. Bake the loaf. (40 minutes)\n"
    "\n"
    "\n"
    "    These ordering constraints need to be obeyed when executing above steps:\n"
    "    Step 1 must precede step 3.\n"
    "Step 2 must precede step 3.\n"
    "\n"
    "\n"
    "    [GRAPH]\n"
    "\n"
    "    " + Q.format(task="bake bread") + "Answer the time in double quotes.\nAnswer:")

BAG_VANILLA = (
    "To pack a bag, here are the steps and the times needed for each step.\n"
    "Step 1. Fold the shirts. (5 minutes)\n"
    "Step 2. Roll the socks. (2 minutes)\n"
    "Step 3. Find the charger. (1 minute)\n"
    "\n"
    "All steps can be executed in parallel.\n"
    "\n"
    + Q.format(task="pack a bag") + "Answer the time in double quotes.\nAnswer:")

BAG_VANILLA_COMMITTED = (
    "To pack a bag, here are the steps and the times needed for each step.\n"
    "    Step 1. Fold the shirts. (5 minutes)\n"
    "Step 2. Roll the socks. (2 minutes)\n"
    "Step 3. Find the charger. (1 minute)\n"
    "\n"
    "\n"
    "    These ordering constraints need to be obeyed when executing above steps:\n"
    "    [ORDERING CONSTRAINTS]\n"
    "\n"
    "    [GRAPH]\n"
    "\n"
    "    " + Q.format(task="pack a bag") + "Answer the time in double quotes.\nAnswer:")

BAG_EDGE_LIST_COT = (
    "To pack a bag, here are the steps and the times needed for each step.\n"
    "Step 1. Fold the shirts. (5 minutes)\n"
    "Step 2. Roll the socks. (2 minutes)\n"
    "Step 3. Find the charger. (1 minute)\n"
    "\n"
    "All steps can be executed in parallel.\n"
    "\n"
    "Here is the edge list representation of the step ordering constraints:\n"
    "[('START', '1'), ('START', '2'), ('START', '3'), ('1', 'END'), ('2', 'END'), ('3', 'END')]\n"
    "Time for each step can be represented as a dictionary:\n"
    "{'1': '5 minutes', '2': '2 minutes', '3': '1 minute'}\n"
    "\n"
    + Q.format(task="pack a bag") + "Let's think step by step and then answer the time in double quotes.\nAnswer:")

BREAD_ADJ_LIST = (
    "To bake bread, here are the steps and the times needed for each step.\n"
    "Step 1. Mix the dough. (20 minutes)\n"
    "Step 2. Heat the oven. (15 minutes)\n"
    "Step 3. Bake the loaf. (40 minutes)\n"
    "\n"
    "\n"
    "These ordering constraints need to be obeyed when executing above steps:\n"
    "Step 1 must precede step 3.\n"
    "Step 2 must precede step 3.\n"
    "\n"
    "\n"
    "Here is the adjacency list representation of the step ordering constraints:\n"
    "{'1': ['3'], '2': ['3'], '3': ['END'], 'END': [], 'START': ['1', '2']}\n"
    "Time for each step can be represented as a dictionary:\n"
    "{'1': '20 minutes', '2': '15 minutes', '3': '40 minutes'}\n"
    "\n"
    + Q.format(task="bake bread") + "Answer the time in double quotes.\nAnswer:")

BREAD_ADJ_LIST_COMMITTED = (
    "To bake bread, here are the steps and the times needed for each step.\n"
    "    Step 1. Mix the dough. (20 minutes)\n"
    "Step 2. Heat the oven. (15 minutes)\n"
    "Step 3. Bake the loaf. (40 minutes)\n"
    "\n"
    "\n"
    "    These ordering constraints need to be obeyed when executing above steps:\n"
    "    Step 1 must precede step 3.\n"
    "Step 2 must precede step 3.\n"
    "\n"
    "\n"
    "    Here is the adjacency list representation of the step ordering constraints:\n"
    "{'1': ['3'], '2': ['3'], '3': ['END'], 'END': [], 'START': ['1', '2']}\n"
    "Time for each step can be represented as a dictionary:\n"
    "{'1': '20 minutes', '2': '15 minutes', '3': '40 minutes'}\n"
    "\n"
    "    " + Q.format(task="bake bread") + "Answer the time in double quotes.\nAnswer:")

TREE_VANILLA_COMBINED = (
    "To plant a tree, here are the steps and the times needed for each step.\n"
    "Step 1. Dig a hole. (30 minutes)\n"
    "Step 2. Water the hole. (5 minutes)\n"
    "Step 3. Loosen the roots. (10 minutes)\n"
    "Step 4. Buy compost. (1 hour)\n"
    "Step 5. Set the tree. (15 minutes)\n"
    "\n"
    "\n"
    "These ordering constraints need to be obeyed when executing above steps:\n"
    "Step 1 must precede step 2, 3 and 4.\n"
    "Step 2 must precede step 5.\n"
    "Step 3 must precede step 5.\n"
    "Step 4 must precede step 5.\n"
    "\n"
    "\n"
    + Q.format(task="plant a tree") + "Answer the time in double quotes.\nAnswer:")

BAG_COT_QUESTION = (
    "What is the shortest possible time to plant a tree? Let's construct a graph with the nodes and edges first "
    "to represent step ordering constraints, and also construct a dictionary to represent time needed for each "
    "step. Use the graph and dictionary to calculate the shortest possible time needed for the task. Let's think "
    "step by step and then answer the time in double quotes.\nAnswer:")


@pytest.mark.parametrize("plan, variant, layout, expected", [
    (BREAD, "vanilla", "published", BREAD_VANILLA),
    (BREAD, "vanilla", "committed", BREAD_VANILLA_COMMITTED),
    (BAG, "vanilla", "published", BAG_VANILLA),
    (BAG, "vanilla", "committed", BAG_VANILLA_COMMITTED),
    (BAG, "edge_list_cot", "published", BAG_EDGE_LIST_COT),
    (BREAD, "adjacency_list", "published", BREAD_ADJ_LIST),
    (BREAD, "adjacency_list", "committed", BREAD_ADJ_LIST_COMMITTED),
    (TREE, "vanilla_combined", "published", TREE_VANILLA_COMBINED),
])
def test_prompt_text_by_hand(plan, variant, layout, expected):
    assert prompts.build_prompt(plan, variant, layout=layout) == expected


def test_cot_bag_and_combined_graph_variants():
    assert prompts.build_prompt(BREAD, "cot") == BREAD_VANILLA.replace(
        "Answer the time in double quotes.", "Let's think step by step and then answer the time in double quotes.")
    assert prompts.build_prompt(TREE, "bag_cot_combined").endswith(BAG_COT_QUESTION)
    assert prompts.build_prompt(TREE, "bag_cot").replace("Let's think step by step and then answer",
                                                         "Answer") == prompts.build_prompt(TREE, "bag")
    combined = prompts.build_prompt(TREE, "csr_cot_combined")
    assert "Step 1 must precede step 2, 3 and 4.\nStep 2 must precede step 5.\n" in combined
    assert ("(assuming the node order to be 1 to 5, 'END', 'START'):\nValues: [1, 1, 1, 1, 1, 1, 1, 1]\n"
            "Row indices: [0, 3, 4, 5, 6, 7, 7, 8]\nColumn indices: [1, 2, 3, 4, 4, 4, 5, 0]\n") in combined


def test_constraint_phrasings_capitalised_and_string_sorted():
    assert prompts.ORDERING_TEMPLATES[0] == "Before starting [following step], complete [preceding step]."
    assert prompts.ORDERING_TEMPLATES[9] == "[following step] follows the completion of [preceding step]."
    assert len(prompts.ORDERING_TEMPLATES) == 10
    assert prompts.constraint_lines(TREE, prompts.ORDERING_TEMPLATES[0], combined=True) == (
        "Before starting step 2, 3 and 4, complete step 1.\n"
        "Before starting step 5, complete step 2.\n"
        "Before starting step 5, complete step 3.\n"
        "Before starting step 5, complete step 4.\n")
    assert prompts.constraint_lines(BREAD, prompts.ORDERING_TEMPLATES[9]) == (
        "Step 3 follows the completion of step 1.\nStep 3 follows the completion of step 2.\n")
    # The release sorts the sentences as strings: "Step 10 ..." before "Step 2 ...".
    assert prompts.constraint_lines(CHAIN11).splitlines()[:3] == [
        "Step 1 must precede step 2.", "Step 10 must precede step 11.", "Step 2 must precede step 3."]
    fan = Plan("How to x", tuple(f"s{i}." for i in range(1, 11)), ("1 minute",) * 10,
               deps=((1, 2), (1, 10)) + tuple((i, 10) for i in range(3, 10)))
    assert prompts.constraint_lines(fan, combined=True).splitlines()[0] == "Step 1 must precede step 10 and 2."


def test_variants_and_errors():
    assert len(prompts.VARIANTS) == 24 == len(set(prompts.VARIANTS))
    assert prompts.VARIANTS[:4] == ("vanilla", "vanilla_combined", "cot", "cot_combined")
    assert {"bag_cot", "csr_cot_combined", "edge_list", "adjacency_matrix_cot"} <= set(prompts.VARIANTS)
    with pytest.raises(ValueError, match="accepted.*'adjacency_list_cot'"):
        prompts.build_prompt(BREAD, "adjacency-list")
    with pytest.raises(ValueError, match="accepted.*must precede"):
        prompts.build_prompt(BREAD, "vanilla", template="[preceding step] then [following step].")
    with pytest.raises(ValueError, match="accepted.*'published', 'committed'"):
        prompts.build_prompt(BREAD, "vanilla", layout="raw")
    with pytest.raises(ValueError, match="must order exactly"):
        prompts.adjacency_matrix(BREAD, nodes=["1", "2", "END", "START"])


def test_structures_by_hand():
    assert prompts.adjacency_list(DIAMOND) == {"1": ["2", "3"], "2": ["4"], "3": ["4"], "4": ["END"], "END": [],
                                               "START": ["1"]}
    assert prompts.adjacency_matrix(DIAMOND) == [
        [0, 1, 1, 0, 0, 0],
        [0, 0, 0, 1, 0, 0],
        [0, 0, 0, 1, 0, 0],
        [0, 0, 0, 0, 1, 0],
        [0, 0, 0, 0, 0, 0],
        [1, 0, 0, 0, 0, 0]]
    assert prompts.csr(DIAMOND) == ([1] * 6, [0, 2, 3, 4, 5, 5, 6], [1, 2, 3, 3, 4, 0])
    assert prompts.csr(DIAMOND, edge_order=True) == ([1] * 6, [0, 2, 3, 4, 5, 5, 6], [1, 2, 3, 3, 0, 4])
    assert prompts.time_dict(DIAMOND) == {"1": "1 hour", "2": "1 hour", "3": "1 hour", "4": "1 hour"}


def test_release_node_order_n11():
    order = prompts.release_node_order(prompts.node_order(CHAIN11))
    assert order == ["1", "10", "11", "2", "3", "4", "5", "6", "7", "8", "9", "END", "START"]
    assert prompts.node_order(CHAIN11) == [str(i) for i in range(1, 12)] + ["END", "START"]
    # Numeric order: a chain is the superdiagonal, 11 -> END, START -> 1.
    m = prompts.adjacency_matrix(CHAIN11)
    assert [(r, c) for r in range(13) for c in range(13) if m[r][c]] == [(i, i + 1) for i in range(11)] + [(12, 0)]
    # The release's order: (1, 2) is cell (0, 3), (9, 10) is (10, 1), (10, 11) is (1, 2), (11, END) is (2, 11).
    r = prompts.adjacency_matrix(CHAIN11, order)
    assert [(i, j) for i in range(13) for j in range(13) if r[i][j]] == [
        (0, 3), (1, 2), (2, 11), (3, 4), (4, 5), (5, 6), (6, 7), (7, 8), (8, 9), (9, 10), (10, 1), (12, 0)]
    assert prompts.csr(CHAIN11) == ([1] * 12, list(range(12)) + [11, 12], list(range(1, 12)) + [0])
    assert prompts.csr(CHAIN11, order, edge_order=True) == (
        [1] * 12, list(range(12)) + [11, 12], [3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 0, 11])
    release_prompt = prompts.build_prompt(CHAIN11, "adjacency_list", release_order=True)
    assert "{'1': ['2'], '10': ['11'], '11': ['END'], '2': ['3']," in release_prompt
    assert "{'1': ['2'], '2': ['3']," in prompts.build_prompt(CHAIN11, "adjacency_list")


def test_answers_worked_solution_and_few_shot():
    assert prompts.answer_text(BREAD) == "1 hour"
    assert prompts.answer_text(GARDEN) == "2 months 3 days"
    assert prompts.worked_solution(BREAD) == (
        "Step 1 can start at once; it takes 20 minutes, so it finishes at 20 minutes. "
        "Step 2 can start at once; it takes 15 minutes, so it finishes at 15 minutes. "
        "Step 3 can start after step 1 and step 2, the last of which finishes at 20 minutes; it takes 40 minutes, "
        "so it finishes at 1 hour. "
        'All steps are done when the last one finishes, at 1 hour, so the shortest possible time to bake bread is '
        '"1 hour".')
    assert prompts.worked_solution(GARDEN) == (
        "Step 1 can start at once; it takes 3 days, so it finishes at 3 days. "
        "Step 2 can start after step 1, which finishes at 3 days; it takes 2 months, so it finishes between 59 and "
        "65 days. Step 3 can start at once; it takes 1 week, so it finishes at 1 week. "
        "All steps are done when the last one finishes, between 59 and 65 days, so the shortest possible time to "
        'grow a garden is "2 months 3 days".')
    assert parsing.is_correct(prompts.worked_solution(GARDEN), critical_path(GARDEN))
    assert prompts.few_shot_prompt(BREAD, "vanilla", [BAG], cot=False) == (
        "###Examples:\n" + BAG_VANILLA + ' The shortest possible time to pack a bag is "5 minutes".'
        + "\n###\n" + BREAD_VANILLA)
    bag_shot = prompts.few_shot_prompt(BREAD, "bag_cot", [BAG, TREE], cot=True)
    assert bag_shot.startswith("###Examples:\n" + prompts.build_prompt(BAG, "bag_cot") + " Here is the adjacency list "
                               "representation of the step ordering constraints:\n{'1': ['END'], '2': ['END'], ")
    assert bag_shot.count("###") == 2 and bag_shot.endswith("\n###\n" + prompts.build_prompt(BREAD, "bag_cot"))
    assert prompts.few_shot_prompt(BREAD, "vanilla", [], cot=True) == BREAD_VANILLA
    assert set(prompts.PLAG_VARIANTS) == {v for v in prompts.VARIANTS if "_cot" in v and not v.startswith("cot")}


def test_generated_plans_all_variants():
    plans = generate_plans(300, seed=11)
    assert sum(not critical_path(p).exact for p in plans) >= 5      # some interval golds are exercised
    assert any(p.n >= 10 for p in plans) and any(not p.deps for p in plans)
    for plan in plans:
        lines = [f"Step {i}. {s} ({d})\n" for i, (s, d) in enumerate(zip(plan.steps, plan.durations), 1)]
        for variant in prompts.VARIANTS:
            text = prompts.build_prompt(plan, variant)
            assert all(line in text for line in lines), (plan, variant)
            assert "[" + "GRAPH]" not in text and "[ORDERING" not in text and "[TASK]" not in text
        committed = prompts.build_prompt(plan, "cot_combined", layout="committed")
        assert "    [GRAPH]\n" in committed and all(line in committed for line in lines[1:])
        gold = critical_path(plan)
        answer = prompts.answer_text(plan)
        assert parsing.is_correct(f'"{answer}"', gold), (plan, answer, gold)
        assert parsing.release_is_correct(f'"{answer}"', gold), (plan, answer)
        assert not parsing.is_correct(f'"{format_seconds(gold.hi + 3600)}"', gold)
        if gold.exact:
            assert parsing.parse_answer(f'"{answer}"').interval == gold


def test_cot_shots_score_correct():
    for plan in generate_plans(100, seed=5):
        gold = critical_path(plan)
        for answer in (prompts.shot_answer(plan, cot=True), prompts.shot_answer(plan, cot=True, bag_graph="csr"),
                       prompts.shot_answer(plan, cot=False)):
            assert answer.count('"') == 2
            assert parsing.is_correct(answer, gold), (plan, answer)
        assert not parsing.is_correct(prompts.worked_solution(plan), Interval(gold.hi + 1, gold.hi + 2))
