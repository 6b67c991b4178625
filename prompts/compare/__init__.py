"""Prompt stages of the comparison methods (Self-Ask, IRCoT, ReAct, Iter-RetGen, decomposed
RAG): each prompt travels with its tolerant parser (see :mod:`atomgraph.prompts.stage`).

| stage | role | value |
|---|---|---|
| ``self_ask_step`` | planner | ``{"kind": "follow_up" or "final", "text": ...}`` |
| ``self_ask_answer`` / ``self_ask_final`` | executor / answerer | the answer |
| ``ircot_step`` | executor | ``{"sentence": ..., "answer": str or None}`` |
| ``ircot_read`` | answerer | the answer |
| ``react`` | executor | the answer (read from the agent's last message) |
| ``iter_retgen`` | answerer | ``{"text": ..., "answer": ...}`` |
| ``decomposed_rag_plan`` | planner | the sub-questions (a list) |
| ``decomposed_rag_answer`` | answerer | the answer |
"""
