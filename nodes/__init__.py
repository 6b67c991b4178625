"""atomgraph.nodes"""
