"""ARM's answer stage: the answer from the retrieved objects (``So the answer is: ...``)."""

from __future__ import annotations

from langchain_core.prompts import ChatPromptTemplate

from atomgraph.prompts.baselines import extract_answer
from atomgraph.prompts.stage import Stage, text_parser

_ANSWER = ChatPromptTemplate.from_messages([
    ("system",
     "Answer the question from the documents and tables below. Give the shortest answer that fully "
     "answers it: an entity, a date, a number, yes or no. Where the objects do not hold the answer, "
     "answer from what you know. Finish with a line 'So the answer is: <answer>'."),
    ("human", "Objects:\n{objects}\n\nQuestion: {question}\nAnswer:"),
])

ANSWER = Stage("arm_answer", "answerer", _ANSWER, text_parser(extract_answer, "answer"), max_tokens=256)
