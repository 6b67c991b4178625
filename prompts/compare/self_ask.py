"""Self-Ask with retrieval (Press et al., 2023): the model asks itself follow-up questions;
each is answered from passages the knowledge sources return, not by the model's memory.

Three stages: ``self_ask_step`` writes the next line (a follow-up question, or the final
answer), ``self_ask_answer`` answers one follow-up from its passages (the intermediate
answer), ``self_ask_final`` asks for the final answer once the follow-up bound is reached.
"""

from __future__ import annotations

import re

from langchain_core.prompts import ChatPromptTemplate

from atomgraph.errors import ParseError
from atomgraph.injection import EVIDENCE_RULE
from atomgraph.prompts.stage import clean_reply as contract_reply
from atomgraph.prompts.compare.common import ANSWER_RULE, clean_reply, final_answer_parser, instructions_of, read_answer
from atomgraph.prompts.stage import Stage, text_parser

# One worked example of the format, on a train question of ../shared/data (never a test question),
# written by us from its supporting facts there: hipporag/musique_train.json, id 2hop__243339_774871.
EXAMPLE_SOURCE = "hipporag/musique_train.json#2hop__243339_774871"
EXAMPLE = """Question: Where did the band form that made the live album Maiden Japan?
Are follow up questions needed here: Yes.
Follow up: Which band made the live album Maiden Japan?
Intermediate answer: Iron Maiden, the English heavy metal band.
Follow up: Where was Iron Maiden formed?
Intermediate answer: Leyton, in East London, in 1975.
So the final answer is: Leyton"""

STEP_PROMPT = ChatPromptTemplate.from_messages([
    ("system",
     "You answer a question by asking yourself simple follow-up questions. Each follow-up question is "
     "answered for you from a search of the knowledge sources (the 'Intermediate answer' lines). "
     "Write exactly one new line: either 'Follow up: <one simple question>' when something is still "
     "missing, or 'So the final answer is: <answer>' when the intermediate answers are enough. "
     "Do not write intermediate answers yourself."),
    ("human", "Example of the format:\n\n" + EXAMPLE.replace("{", "{{").replace("}", "}}")
     + "\n\nNow the real question.\n\nQuestion: {question}\nAre follow up questions needed here: Yes.\n{scratchpad}"),
])

ANSWER_PROMPT = ChatPromptTemplate.from_messages([
    ("system", "Answer the question from the passages. " + ANSWER_RULE
     + " If the passages do not say, answer from what you know. " + EVIDENCE_RULE),
    ("human", "Passages:\n{evidence}\n\nQuestion: {question}\nAnswer:"),
])

FINAL_PROMPT = ChatPromptTemplate.from_messages([
    ("system", "No more follow-up questions can be asked. Give the final answer to the question from the "
     "intermediate answers below (and what you know). " + ANSWER_RULE.replace("So the answer is", "So the final answer is")),
    ("human", "Question: {question}\n{scratchpad}So the final answer is:"),
])

_FOLLOW = re.compile(r"^\s*(?:[-*]\s*)?follow[\s-]*up(?:\s+question)?\s*(?:\d+\s*)?[:：]\s*(.*)$", re.I)
_FINAL = re.compile(r"(?:so\s+)?the\s+final\s+answer\s+is\s*[:：]?|^\s*final\s+answer\s*[:：]", re.I)
_NO_MORE = re.compile(r"follow\s*up\s+questions\s+needed\s+here\s*[:：]\s*no\b", re.I)


EXAMPLE_PAIRS = [("Where did the band form that made the live album Maiden Japan?", "Leyton")]
# The paper's generation stops where the model would write an intermediate answer itself.
STEP_STOPS = ("\nIntermediate answer:", "\nQuestion:", "<end_of_turn>", "[/INST]")


def read_step(text: str) -> dict:
    """The first directive line of a Self-Ask reply: ``{"kind": "follow_up", "text": question}``
    or ``{"kind": "final", "text": answer}``. Lines the model should not have written (its own
    intermediate answers) after the first directive are ignored; a reply that copies the
    example or repeats the instructions is refused (the answer contract). ParseError when
    neither directive is there."""
    text = contract_reply(clean_reply(text), instructions=instructions_of(STEP_PROMPT), demonstrations=EXAMPLE_PAIRS,
                          stops=STEP_STOPS)
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _FOLLOW.match(line)
        if m:
            q = m.group(1).strip()
            if not q:
                raise ParseError(f"an empty follow-up question in: {text[:200]!r}")
            return {"kind": "follow_up", "text": q}
        if _FINAL.search(line):
            return {"kind": "final", "text": read_answer("\n".join(lines[i:]))}
        if _NO_MORE.search(line):
            rest = "\n".join(lines[i + 1:]).strip()
            if rest:
                return {"kind": "final", "text": read_answer(rest)}
    raise ParseError(f"neither 'Follow up:' nor 'So the final answer is:' in: {text[:200]!r}")


def scratchpad(turns: list[dict]) -> str:
    """The follow-ups so far with their intermediate answers, in the prompt's format."""
    return "".join(f"Follow up: {t['follow_up']}\nIntermediate answer: {t['answer']}\n" for t in turns)


STEP = Stage(name="self_ask_step", role="planner", prompt=STEP_PROMPT,
             parser=text_parser(read_step, "self_ask_step"), max_tokens=128, stop=STEP_STOPS, answers=True,
             demonstrations=tuple((q, EXAMPLE, a) for q, a in EXAMPLE_PAIRS))
ANSWER = Stage(name="self_ask_answer", role="executor", prompt=ANSWER_PROMPT,
               parser=final_answer_parser(ANSWER_PROMPT, require_marker=False, name="intermediate_answer"),
               max_tokens=256, stop=STEP_STOPS[1:], answers=True)
FINAL = Stage(name="self_ask_final", role="answerer", prompt=FINAL_PROMPT,
              parser=final_answer_parser(FINAL_PROMPT, EXAMPLE_PAIRS, require_marker=False), max_tokens=128,
              stop=STEP_STOPS[1:], answers=True)  # its prompt shows no example: no demonstrations to copy
