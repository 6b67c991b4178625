"""Iter-RetGen (Shao et al., 2023): retrieval-generation rounds. Round t retrieves with the
question followed by round t-1's generation, then ``iter_retgen`` generates a short
chain of thought and answer from those passages."""

from __future__ import annotations

from langchain_core.prompts import ChatPromptTemplate

from atomgraph.injection import EVIDENCE_RULE

from atomgraph.prompts.stage import clean_reply as contract_reply
from atomgraph.prompts.compare.common import ANSWER_RULE, FEW_SHOT_STOPS, clean_reply, instructions_of, read_answer
from atomgraph.prompts.stage import Stage, text_parser

PROMPT = ChatPromptTemplate.from_messages([
    ("system", "Answer the question using the passages. Reason step by step in two to four short "
     "sentences that name the entities involved, then answer. " + ANSWER_RULE + " " + EVIDENCE_RULE),
    ("human", "Passages:\n{evidence}\n\nQuestion: {question}\nAnswer: Let's think step by step."),
])


def read_generation(text: str) -> dict:
    """``{"text": the generation (the next round's query), "answer": its answer}``: the answer
    after the first 'So the answer is:' marker, held to the answer contract."""
    text = contract_reply(clean_reply(text), instructions=instructions_of(PROMPT))
    return {"text": text, "answer": read_answer(text, require_marker=True)}


GENERATE = Stage(name="iter_retgen", role="answerer", prompt=PROMPT,
                 parser=text_parser(read_generation, "iter_retgen"), max_tokens=384,
                 stop=FEW_SHOT_STOPS, answers=True)
