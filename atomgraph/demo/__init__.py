"""The demo knowledge pack: passages, questions and a Turtle knowledge graph (data files only;
read by :mod:`atomgraph.demo_pack`)."""
