"""ARM's nodes, one module per stage of the paper (the graph: :mod:`atomgraph.graphs.arm`):

- :mod:`~atomgraph.nodes.arm.information_alignment` — §3.2.1: decompose, align (n-gram alignment), retrieve;
- :mod:`~atomgraph.nodes.arm.structure_alignment` — §3.2.2: R_i, C_ij, the pool's expansion, the MIP, drafts;
- :mod:`~atomgraph.nodes.arm.self_verification` — §3.3: drafts in words, verification, aggregation;
- :mod:`~atomgraph.nodes.arm.pipeline` — what the stages share (data collection, runtime) and the answer.
"""
