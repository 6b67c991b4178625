"""atomgraph.graphs"""
