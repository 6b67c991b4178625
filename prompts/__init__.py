"""atomgraph.prompts"""
