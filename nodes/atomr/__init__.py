"""atomgraph.nodes.atomr"""
