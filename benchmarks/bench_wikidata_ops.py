"""Wikidata source: SPARQL queries and wall time per operation, in-process store vs a real
Oxigraph server over loopback (the test KG), and the resolution cache's effect.

    python -m benchmarks.bench_wikidata_ops [--repeat 20]

Reports, per operation: queries sent, median ms in process, median ms over HTTP, and their
ratio (HTTP / in process), all measured in this one run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from atomgraph.tools.sparql_backends import OxigraphFileStore, SparqlEndpoint
from atomgraph.tools.wikidata_source import WikidataSource

KG = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "wikidata_test.ttl"

OPS = {
    "find_entities": lambda s: s.find_entities("paris"),
    "relate": lambda s: s.relate("Barack Obama", "children"),
    "attribute": lambda s: s.attribute("Barack Obama", "height"),
    "relations_between": lambda s: s.relations_between("Malia Obama", "Barack Obama"),
    "filter_entities": lambda s: s.filter_entities(["Lionel Messi", "Steve Jobs", "Bill Gates"], "date of birth", "=", "1955"),
    "search": lambda s: s.search("When was Barack Obama born?"),
    "operate Filter": lambda s: s.operate("Filter", ["['Lionel Messi', 'Steven Jobs', 'Bill Gates']", "born in 1955"], "q"),
}


def measure(make, repeat: int) -> dict[str, tuple[int, float, float]]:
    """op -> (queries on a cold source, median cold ms, median warm ms)."""
    out = {}
    for name, op in OPS.items():
        cold, warm, nq = [], [], 0
        for _ in range(repeat):
            src = make()
            before = len(src.queries)
            t = time.perf_counter()
            op(src)
            cold.append((time.perf_counter() - t) * 1000)
            nq = len(src.queries) - before
            t = time.perf_counter()
            op(src)  # entity mentions now cached
            warm.append((time.perf_counter() - t) * 1000)
        out[name] = (nq, statistics.median(cold), statistics.median(warm))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args(argv)
    import sys

    sys.path.insert(0, str(KG.parents[1]))
    from oxigraph_server import start_oxigraph, stop_oxigraph  # tests/oxigraph_server.py

    store = OxigraphFileStore(KG)
    local = measure(lambda: WikidataSource(store), args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        server = start_oxigraph(KG, Path(tmp))
        try:
            endpoint = SparqlEndpoint(server.url, user_agent="atomgraph-bench/0.1", timeout=10)
            http = measure(lambda: WikidataSource(endpoint), args.repeat)
        finally:
            stop_oxigraph(server)
    print(f"{'operation':20} {'queries':>7} {'local ms':>9} {'http ms':>8} {'http/local':>10} {'warm/cold (http)':>16}")
    for name in OPS:
        nq, lc, _ = local[name]
        _, hc, hw = http[name]
        print(f"{name:20} {nq:7d} {lc:9.2f} {hc:8.2f} {hc / lc:10.1f} {hw / hc:16.2f}")
    if args.out:
        import json

        rows = {n: {"queries": local[n][0], "local_ms": local[n][1], "http_ms": http[n][1],
                    "http_over_local": http[n][1] / local[n][1], "warm_over_cold_http": http[n][2] / http[n][1]}
                for n in OPS}
        Path(args.out).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
