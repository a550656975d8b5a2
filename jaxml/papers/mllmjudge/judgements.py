"""The judging protocol as text: the judge's prompt, and parsing of its verdict.

The prompt follows the release's `scripts/prompt.py` and `construct_input` in
`scripts/api_benchmark.py`:

    <start>
    Evaluation Steps:
    <the setting's steps>
    Evaluation Method:
    <the task: score rubric / pair / batch, each ending with the verdict format>
    Notice:
    <notice>
    Here is the input:
    [The Start of User Instruction] ... [The End of User Instruction]
    ([The Start of Vision Expert’s Answer] ... , Vision Expert setting only)
    [The Start of Assistant’s Answer] ...          (score)
    [The Start of Assistant A’s Answer] ...        (pair: A, B; batch: A, B, C, ... in file order)

The judge is asked for a JSON object {"Analysis", "Judgement"} (the COT settings add "Figure
Analysis" and/or "Response") whose Judgement is "[[1]]".."[[5]]" (score), "[[A]]"/"[[B]]"/"[[C]]"
(pair; C = tie) or "[[A]], [[B]], [[C]], [[D]]" best->worst (batch). The text of the settings,
rubric and notice is the release's, as the protocol must be. Where the release's script differs
from itself it is not reproduced: `construct_input` reads `prompt_dict["settings"]` while
`get_prompt()` stores "setting", it is called without the responses, and it glues the batch's first
answer to "[The End of User Instruction]" without a newline; here a newline separates the blocks.
The caption block for "Vision Expert" comes from the release's per-model judge scripts
(`gpt4_judge.py`, `llava_judge.py`), placed after the instruction.

Parsing. The release has no verdict regex: `api_benchmark.get_res` does `json.loads(output)
["Judgement"]` and keeps the raw output when the key is missing, and its intermediate files hold
the verdict already extracted (`result.judge` = "4", "A", ...; for Gemini often a bare "5" after
"Judgement:"). `parse_judgement` does the same steps, never raises, and returns None for a failure:

  1. Judgement text: the "Judgement" (or "Judgment", any case) value of the reply parsed as JSON
     (the whole reply, a ```json fence, or the span from the first "{" to the last "}"); else, when
     the JSON is broken, the text after the last `Judgement:`; else the whole reply.
  2. In it, the double-bracket verdicts: score `[[1]]`..`[[5]]`; pair `[[A]]`/`[[B]]`/`[[C]]`;
     batch a run of bracketed letters `[[B]], [[A]], [[C]], [[D]]` (separators `,` `;` `>` `-`
     or spaces; also `[[B, A, C, D]]` / `[[BACD]]`). Repeats of the same verdict are fine; two
     different verdicts (e.g. a reply quoting the rubric "[[1]]", "[[2]]", ...) are a failure.
  3. No brackets but a Judgement field that is only a bare verdict ("5", "A", "BACD",
     "B, A, C, D"): accepted, as the release's intermediate files do. A bare verdict is never
     searched for in free text.

A batch ranking must be a permutation of the answer positions (`num_answers` letters); a score
must be an integer 1-5; anything else is a failure. Letters must be upper case.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional, Union

from jaxml.papers.mllmjudge import formats

Verdict = Union[int, str]

# ------------------------------------------------------------------------------------- prompt

START = ("Please serve as an unbiased judge in assessing the quality of the responses from AI assistants "
         "regarding the user's instruction and a figure. ")

SETTINGS: dict[str, str] = {
    "COT figure": (
        "Please examine the provided image attentively. Begin by conducting a comprehensive analysis of the figure "
        "provided. Detail your observations and insights in the 'Figure Analysis' section. Next, utilize the insights "
        "from your initial analysis to critically evaluate the responses. Summarize this evaluation in the 'Analysis' "
        "section. Finally, based on your figure analysis and response evaluation, form a well-reasoned judgement. "
        "Document this in the 'Judgement' section. Ensure that your final output with keys: 'Figure Analysis' for the "
        "initial figure assessment, 'Analysis' for the evaluation of responses against your ground truth, and "
        "'Judgement' for your final judgement only. Ensure that the content under each key does not contain any nested "
        "JSON structures."),
    "COT instruction": (
        "Please examine the provided image attentively. Begin by providing a detailed response to the user "
        "instructions, treating this response as the baseline or 'ground truth'. This response will form the "
        "'Response' section. Next, use this established ground truth to systematically analyze and evaluate the "
        "responses to the same instruction. This evaluation will form the 'Analysis' section. After the analysis, move "
        "forward to the judgement phase, where you will give final judgement based on the analysis of the responses "
        "compared to the ground truth. Give your judgement in the 'Judgement' section. Ensure that your final output is "
        "structured with the keys 'Response' for the answer to the instruction, 'Analysis' for the evaluation of "
        "responses, and 'Judgement' for your final judgement only. Ensure that the content under each key does not "
        "contain any nested JSON structures."),
    "COT figure instruction": (
        "Please examine the provided image attentively. Begin with an in-depth analysis of the figure. Detail your "
        "observations and insights in the 'Figure Analysis' section. Then, provide a detailed response to the user "
        "instructions, treating this as 'Response' and the ground truth. Next, compare and analyze the responses to the "
        "same instruction against your ground truth in the 'Analysis' section. Finally, give your final judgement in "
        "'Judgement'. Structure your output in JSON format, with the following keys: 'Figure Analysis' for the initial "
        "figure assessment, 'Response' for your response to the instructions, 'Analysis' for the evaluation of "
        "responses against your ground truth, and 'Judgement' for your final judgement only. Ensure that the content "
        "under each key does not contain any nested JSON structures."),
    "No COT": (
        "Please examine the provided image attentively. Begin by conducting a detailed analysis of the responses "
        "provided. Capture your comprehensive observations and insights in the 'Analysis' section. Following your "
        "analysis, move on to the judgement phase, where you will make informed decisions or conclusions based on the "
        "analysis conducted. Give your final judgements in the 'Judgement' section. Ensure that your final output in a "
        "JSON format with keys 'Analysis' for the initial response analysis, and 'Judgement' for your final judgement "
        "only. Ensure that the content under each key does not contain any nested JSON structures."),
    "No Figure": (
        "As a blind judge, you will not have access to the figure mentioned in the user instructions. Your task is to "
        "impartially assess the responses based solely on the information presented within them, without visual "
        "context of the figure. Begin by performing a detailed analysis of the responses, capturing your observations "
        "in the 'Analysis' section. Then, move on to the judgement phase, drawing conclusions or making decisions based "
        "on your analysis. Format your findings in a JSON format with two keys: 'Analysis' for your insights on the "
        "responses and 'Judgement' for your final judgement only. Ensure that the content under each key does not "
        "contain any nested JSON structures."),
    "Vision Expert": (
        "As a blind judge, you won't receive the figure from the user instructions, lacking direct visual context. An "
        "AI-generated analysis will be provided as optional supplementary information, but bear in mind its potential "
        "inaccuracies. Your primary task is to conduct a thorough analysis of the responses independently. Include your "
        "observations and interpretations in the 'Analysis' section. Following this, advance to the judgement phase, "
        "forming decisions based on your analysis, optionally informed by the AI analysis. Present your findings in a "
        "JSON format with keys 'Analysis' for your insights on the responses and 'Judgement' for your final judgement "
        "only. Ensure that the content under each key does not contain any nested JSON structures."),
}
DEFAULT_SETTING = "No COT"
# The blind settings send no image to the judge (Vision Expert sends a caption instead).
BLIND_SETTINGS = ("No Figure", "Vision Expert")

_RUBRIC = (
    "Poor (1): The response significantly deviates from the user's instruction and fails to address the query "
    "effectively. It shows a lack of relevance, accuracy, and comprehensiveness. Creativity and granularity are absent "
    "or poorly executed.\n"
    "Fair (2): The response addresses the user's instruction partially, with evident shortcomings in relevance, "
    "accuracy, or comprehensiveness. It lacks depth in creativity and granularity, indicating a superficial "
    "understanding of the user's inquiry.\n"
    "Average (3): The response adequately addresses the user's instruction, showing a fair level of relevance, "
    "accuracy, and comprehensiveness. It reflects a basic level of creativity and granularity but may lack "
    "sophistication or depth in fully capturing the user's inquiry.\n"
    "Good (4): The response is well-aligned with the user's instruction, demonstrating a high degree of relevance, "
    "accuracy, and comprehensiveness. It shows creativity and a nuanced understanding of the topic, with detailed "
    "granularity that enhances the response quality.\n"
    "Excellent (5): The response perfectly adheres to the user's instruction, excelling in relevance, accuracy, "
    "comprehensiveness, creativity, and granularity. It provides an insightful, detailed, and thorough answer, "
    "indicating a deep and nuanced understanding of the user's inquiry.\n")

TASKS: dict[str, str] = {
    "score": (
        "\nYou will receive a single response from the AI assistant to user's instruction. Use scores to show the "
        "quality of the response. Here is the detailed scoring rubric for evaluating the quality of responses from AI "
        "assistants:\n" + _RUBRIC +
        "\nUse \"[[1]]\", \"[[2]]\", \"[[3]]\", \"[[4]]\", \"[[5]]\" to indicate your evaluate score in the key "
        "'Judgement'.\n"),
    "pair": (
        "You will be presented with two responses from different assistants to the same user instruction.\n"
        "Your task is to assess and compare these responses based on how effectively they adhere to the user's original "
        "instruction and how aptly they address the user's inquiry.\n\n"
        "Indicate your decision in the key 'Judgement', use \"[[A]]\" if assistant A prevails, \"[[B]]\" if assistant B "
        "does, and \"[[C]]\" for a tie.\n"),
    "batch": (
        "You will be presented with several responses from different assistants to the same user instruction.\n"
        "Your task is to assess and  compare these responses based on how effectively they adhere to the user's "
        "original instruction and how aptly they address the user's inquiry.\n"
        "After your assessment and comparison, you should RANK the responses from best to worst as the following "
        "template. If Assistant A is the best response, Assistant D is the worst response, you should output like "
        "[[A]], [[B]], [[C]], [[D]]. Indicate your final rank in the key 'Judgement'."),
}

NOTICE = (
    "Your assessment should identify whether the assistant effectively adheres to the user's instruction and addresses "
    "the user's inquiry.\n"
    "In your evaluation, weigh factors such as relevance, accuracy, comprehensiveness, creativity, and the granularity "
    "of the responses.\n"
    "Do not allow the length of the responses to influence your evaluation.\n"
    "Do not favor certain names or position of the assistants. Be as objective as possible.")


def uses_image(setting: str) -> bool:
    """Whether the judge sees the image in this setting (False for "No Figure" and "Vision Expert")."""
    _check_setting(setting)
    return setting not in BLIND_SETTINGS


def _check_setting(setting: str) -> None:
    if setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r}; the settings are {tuple(SETTINGS)}")


def _block(title: str, text: str) -> str:
    return f"[The Start of {title}]\n{text}\n[The End of {title}]"


def build_prompt(item: formats.Item, setting: str = DEFAULT_SETTING, caption: Optional[str] = None) -> str:
    """The judge's text prompt for one item (the image, if the setting uses one, goes separately).

    Args:
      item: a ScoreItem (one answer, scored 1-5), PairItem (answer1 is Assistant A, answer2 B) or
        BatchItem (answers in file order are Assistants A, B, C, ...).
      setting: one of `SETTINGS` ("No COT" is the release's default).
      caption: the vision expert's description of the image; required for "Vision Expert" and
        rejected for the other settings.
    Returns:
      the prompt string.
    """
    kind = formats.kind_of(item)
    _check_setting(setting)
    if setting == "Vision Expert":
        if not isinstance(caption, str) or not caption.strip():
            raise ValueError("the 'Vision Expert' setting needs caption= (the vision expert's description of the "
                             f"image), got {caption!r}")
    elif caption is not None:
        raise ValueError(f"caption= is only used by the 'Vision Expert' setting, not {setting!r}")
    head = (START + "\nEvaluation Steps:\n" + SETTINGS[setting] + "\nEvaluation Method:\n" + TASKS[kind]
            + "\nNotice:\n" + NOTICE + "\nHere is the input:\n")
    blocks = [_block("User Instruction", item.instruction)]
    if caption is not None:
        blocks.append(_block("Vision Expert’s Answer", caption))
    if kind == "score":
        blocks.append(_block("Assistant’s Answer", item.answer))
    elif kind == "pair":
        blocks += [_block("Assistant A’s Answer", item.answer1.answer), _block("Assistant B’s Answer", item.answer2.answer)]
    else:
        letters = formats.ranking_letters(len(item.answers))
        blocks += [_block(f"Assistant {c}’s Answer", a.answer) for c, a in zip(letters, item.answers)]
    return head + "\n" + "\n".join(blocks)


# ------------------------------------------------------------------------------------ parsing

_JUDGEMENT_KEY = re.compile(r"^judge?ment$", re.IGNORECASE)
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
# "Judgement": ... or Judgement: ... in a reply whose JSON does not parse; the last occurrence wins.
_JUDGEMENT_LABEL = re.compile(r"[\"']?\bJudge?ment[\"']?\s*[:：]", re.IGNORECASE)
_SCORE_TOKEN = re.compile(r"\[\[\s*(\d+)\s*\]\]")
_PAIR_TOKEN = re.compile(r"\[\[\s*([A-Z])\s*\]\]")
_SEP = r"[\s,;>\-→]*"
# A run of bracketed letters: [[B]], [[A]] > [[C]] ...; or the letters inside one bracket: [[B, A, C, D]].
_RANK_RUN = re.compile(r"\[\[\s*[A-Z]\s*\]\](?:" + _SEP + r"\[\[\s*[A-Z]\s*\]\])*")
_RANK_INNER = re.compile(r"\[\[\s*([A-Z](?:" + _SEP + r"[A-Z])+)\s*\]\]")
_BARE_STRIP = " \t\r\n\"'`.。{}[]()*"


def _json_objects(text: str):
    """Candidate JSON texts in a reply: the whole reply, each fenced block, the outer {...} span."""
    yield text
    for m in _FENCE.finditer(text):
        yield m.group(1)
    first, last = text.find("{"), text.rfind("}")
    if 0 <= first < last:
        yield text[first:last + 1]


def judgement_text(reply: Any) -> tuple[Optional[str], bool]:
    """The part of a judge's reply that holds the verdict.

    Returns:
      (text, from_field): text is the Judgement field's value (JSON, or after a `Judgement:` label
      when the JSON is broken) with from_field=True, else the whole reply with from_field=False;
      (None, False) when the reply is not a string.
    """
    if not isinstance(reply, str):
        return None, False
    for candidate in _json_objects(reply):
        try:
            obj = json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(obj, dict):
            for key, value in obj.items():
                if isinstance(key, str) and _JUDGEMENT_KEY.match(key.strip()):
                    if isinstance(value, bool) or value is None or isinstance(value, (dict, float)):
                        return "", True
                    if isinstance(value, list):
                        return ", ".join(str(v) for v in value), True
                    return str(value), True
    labels = list(_JUDGEMENT_LABEL.finditer(reply))
    if labels:
        return reply[labels[-1].end():], True
    return reply, False


def _unique(values: list) -> Optional[Any]:
    distinct = set(values)
    return values[0] if len(distinct) == 1 else None


def _bare(text: str) -> str:
    return text.strip(_BARE_STRIP)


def parse_score(reply: Any) -> Optional[int]:
    """The 1-5 score of a judge's reply ("[[4]]"), or None if it has none, several or one out of range."""
    text, from_field = judgement_text(reply)
    if text is None:
        return None
    tokens = _SCORE_TOKEN.findall(text)
    if tokens:
        value = _unique([int(t) for t in tokens])
    elif from_field and re.fullmatch(r"\d+", _bare(text)):
        value = int(_bare(text))
    else:
        return None
    lo, hi = formats.SCORE_RANGE
    return value if value is not None and lo <= value <= hi else None


def parse_pair(reply: Any) -> Optional[str]:
    """"A", "B" or "C" (tie) from a judge's reply ("[[A]]"), or None if it has none or several."""
    text, from_field = judgement_text(reply)
    if text is None:
        return None
    tokens = _PAIR_TOKEN.findall(text)
    if tokens:
        value = _unique(tokens)
    elif from_field and re.fullmatch(r"[A-Z]", _bare(text)):
        value = _bare(text)
    else:
        return None
    return value if value in formats.PAIR_VERDICTS else None


def _letters(run: str) -> str:
    return "".join(re.findall(r"[A-Z]", run))


def parse_batch(reply: Any, num_answers: int = 4) -> Optional[str]:
    """The best->worst ranking ("BACD") of a judge's reply ("[[B]], [[A]], [[C]], [[D]]"), or None.

    The ranking must be a permutation of the first `num_answers` letters; a reply with two different
    valid rankings, or only an incomplete one, is a failure.
    """
    formats.ranking_letters(num_answers)  # validates num_answers
    text, from_field = judgement_text(reply)
    if text is None:
        return None
    runs = [_letters(m.group(0)) for m in _RANK_RUN.finditer(text)]
    runs += [_letters(m.group(1)) for m in _RANK_INNER.finditer(text)]
    if runs:
        valid = [r for r in runs if formats.is_ranking(r, num_answers)]
        return _unique(valid) if valid else None
    bare = _bare(text)
    if from_field and re.fullmatch(r"[A-Z](?:" + _SEP + r"[A-Z])*", bare):
        letters = _letters(bare)
        return letters if formats.is_ranking(letters, num_answers) else None
    return None


def parse_judgement(reply: Any, kind: str, num_answers: int = 4) -> Optional[Verdict]:
    """Dispatch on kind: 'score' -> int 1-5, 'pair' -> "A"/"B"/"C", 'batch' -> ranking; None = failure.

    Never raises for a malformed reply (only for a bad `kind` or `num_answers`).
    """
    if kind == "score":
        return parse_score(reply)
    if kind == "pair":
        return parse_pair(reply)
    if kind == "batch":
        return parse_batch(reply, num_answers)
    raise ValueError(f"kind must be one of {formats.KINDS}, got {kind!r}")


def parse_for(item: formats.Item, reply: Any) -> Optional[Verdict]:
    """`parse_judgement` with the kind and the number of answers taken from the item judged."""
    kind = formats.kind_of(item)
    return parse_judgement(reply, kind, len(item.answers) if kind == "batch" else 4)
