"""Node functions of the comparison methods (Self-Ask, IRCoT, ReAct, Iter-RetGen, decomposed
RAG), one module per method plus what they share (:mod:`.common`)."""
