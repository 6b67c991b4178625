"""KAR³'s prompt stages: the question path's (propose, select, answer: :mod:`.stages`) and the atomizer's (:mod:`.atomize`)."""
