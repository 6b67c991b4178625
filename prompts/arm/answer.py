"""ARM's answer stage: the answer from the retrieved objects (``So the answer is: ...``)."""

from __future__ import annotations

from langchain_core.prompts import ChatPromptTemplate

from atomgraph.prompts.stage import answer_parser
from atomgraph.prompts.stage import Stage

_ANSWER = ChatPromptTemplate.from_messages([
    ("system",
     "Answer the question from the documents and tables below. Give the shortest answer that fully "
     "answers it: an entity, a date, a number, yes or no. Where the objects do not hold the answer, "
     "answer from what you know. Finish with a line 'So the answer is: <answer>'."),
    ("human", "Objects:\n{objects}\n\nQuestion: {question}\nAnswer:"),
])

# the answer contract against the prompt's own instructions (a small model sends them back)
ANSWER = Stage("arm_answer", "answerer", _ANSWER,
               answer_parser([m.prompt.template for m in _ANSWER.messages if hasattr(m, "prompt")], name="answer"),
               max_tokens=256, answers=True)
