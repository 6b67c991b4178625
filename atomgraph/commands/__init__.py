"""Sub-commands of the ``atomgraph`` CLI, one module each (see ``atomgraph.cli``)."""
