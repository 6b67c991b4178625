"""Run every benchmark once (``make bench``), writing JSON results to benchmarks/results/.

Each benchmark reports ratios measured within its own run (concurrent vs sequential,
ingestion vs raw encoder, in-process vs loopback), so numbers stay comparable across
machines; absolute times are for the record only.
"""

from __future__ import annotations

import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> int:
    from benchmarks import (bench_arm_mip, bench_arm_retrieval, bench_atomr_executor, bench_call_path, bench_chroma,
                            bench_kar3, bench_wikidata_ops)

    RESULTS.mkdir(exist_ok=True)
    rc = 0
    for name, run in [
        ("call_path", lambda out: bench_call_path.main(["--out", out])),
        ("atomr_executor", lambda out: bench_atomr_executor.main(["--out", out])),
        ("chroma", lambda out: bench_chroma.main(["--out", out])),
        ("wikidata_ops", lambda out: bench_wikidata_ops.main(["--out", out])),
        ("arm_mip", lambda out: bench_arm_mip.main(["--out", out])),
        ("arm_retrieval", lambda out: bench_arm_retrieval.main(["--out", out])),
        ("kar3", lambda out: bench_kar3.main(["--out", out])),
    ]:
        print(f"\n=== {name} ===", flush=True)
        rc |= run(str(RESULTS / f"{name}.json")) or 0
    return rc


if __name__ == "__main__":
    sys.exit(main())
