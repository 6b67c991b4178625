"""The paper recipes for ``atomgraph eval run --recipe NAME`` (TOML data files only; read by
:mod:`atomgraph.evaluation.recipe`)."""
