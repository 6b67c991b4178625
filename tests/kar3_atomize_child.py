"""Run by test_kar3_index: atomize the demo pack slowly into ARGV[1], printing a line after
each batch is written, until the parent kills this process."""

import sys

from atomgraph.graphs.kar3_index import build_kar3_index_graph
from atomgraph.testing import kar3_scripted_model
from atomgraph.tools import atom_index

from kar3_fixtures import PASSAGES, settings_at

_write = atom_index.AtomIndex.write


def write(self, done):
    n = _write(self, done)
    print(f"written {len(done)}", flush=True)
    return n


atom_index.AtomIndex.write = write
graph = build_kar3_index_graph(model=kar3_scripted_model(latency_s=0.2), settings=settings_at(sys.argv[1]))
graph.invoke({"inputs": [str(PASSAGES)], "collection": "demo"}, context={"atomizer_concurrency": 2, "write_batch": 4})
print("finished", flush=True)
