"""Iter-RetGen (Shao et al., 2023): retrieval-generation rounds. Round t retrieves with the
question followed by round t-1's generation, then ``iter_retgen`` generates a short
chain of thought and answer from those passages."""

from __future__ import annotations

from langchain_core.prompts import ChatPromptTemplate

from atomgraph.prompts.compare.common import ANSWER_RULE, clean_reply, extract_answer
from atomgraph.prompts.stage import Stage, text_parser

PROMPT = ChatPromptTemplate.from_messages([
    ("system", "Answer the question using the passages. Reason step by step in two to four short "
     "sentences that name the entities involved, then answer. " + ANSWER_RULE),
    ("human", "Passages:\n{evidence}\n\nQuestion: {question}\nAnswer: Let's think step by step."),
])


def read_generation(text: str) -> dict:
    """``{"text": the whole generation (the next round's query), "answer": its answer}``."""
    text = clean_reply(text)
    return {"text": text, "answer": extract_answer(text)}


GENERATE = Stage(name="iter_retgen", role="answerer", prompt=PROMPT,
                 parser=text_parser(read_generation, "iter_retgen"), max_tokens=384)
