"""atomgraph.evaluation"""
