"""KAR³'s prompt stages: atomize, propose, select, answer (see :mod:`.stages`)."""
