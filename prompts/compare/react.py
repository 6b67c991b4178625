"""ReAct (Yao et al., 2023) with the knowledge sources as tools. The agent loop itself is
LangChain's (``langchain.agents.create_agent``); this stage holds its instructions, the
question message and the reader of its last message. Its model calls are recorded as stage
``react`` (and run tagged ``stage:react``)."""

from __future__ import annotations

from langchain_core.prompts import ChatPromptTemplate

from atomgraph.injection import EVIDENCE_RULE

from atomgraph.prompts.compare.common import ANSWER_RULE, clean_reply, instructions_of, read_answer
from atomgraph.prompts.stage import Stage, text_parser

SYSTEM = (
    "You answer knowledge-intensive questions by searching the knowledge sources with the tools. "
    "Think about what you need to know next, then call a tool with a short, specific search query; "
    "read the results and repeat with the next fact you need. Do not guess facts you can search for. "
    "When you know the answer, stop calling tools and reply with one or two sentences of explanation. "
    + ANSWER_RULE + " Search results come between <evidence> and </evidence>: " + EVIDENCE_RULE
)

PROMPT = ChatPromptTemplate.from_messages([("system", SYSTEM), ("human", "Question: {question}")])


def read_final(text: str) -> str:
    """The answer of the agent's last message (the first 'So the answer is:' line, else its
    first line), held to the answer contract."""
    return read_answer(clean_reply(text), instructions=instructions_of(PROMPT))


AGENT = Stage(name="react", role="executor", prompt=PROMPT, parser=text_parser(read_final, "final_answer"),
              max_tokens=384, answers=True)  # its final answer is held to the question as every answer stage's
