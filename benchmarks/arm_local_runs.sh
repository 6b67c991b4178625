#!/usr/bin/env bash
# Issue 15 item 7: full ARM with the bundled local model (Gemma-3-270M in process, no keywords given)
# and the paper's Figure 4 ablation, through `atomgraph retrieve`, then the summary JSON.
#
#   bash benchmarks/arm_local_runs.sh RUNS_DIR [SETS]      (SETS default: hotpotqa musique spider)
#
# Questions: $EVERY_<set> / $LIMIT_<set> (defaults below: a fixed, spread subset per set).
# Rows per set (the paper's objective: database_weight=0 and coverage_weight=0, the project's database bonus and keyword coverage off):
#   full      model: decompose, trie-beam alignment, drafts, verification, vote (a fresh response cache)
#   ia_model  model's alignment only: structure_alignment=false verification=false (decompose/align replayed
#             from the response cache: the same greedy replies)
#   sa_model  + structure alignment: verification=false (vote over the drafts)
#   ia_free / sa_free   the same two rows LLM-free (keywords replayed where the questions carry them,
#             else the question's corpus n-grams), on the same questions
set -euo pipefail
RUNS=${1:?RUNS_DIR}; shift || true
SETS=${*:-hotpotqa musique spider}
DATA=${DATA:-../shared/data/retrieval}
export ATOMGRAPH_MODEL=local HF_HUB_OFFLINE=1 ATOMGRAPH_CACHE_PATH=${ATOMGRAPH_CACHE_PATH:-$RUNS/llm_cache.sqlite}
mkdir -p "$RUNS"
PY=${PY:-.venv/bin/python}
for s in $SETS; do
  ev=EVERY_$s; lim=LIMIT_$s
  sel=(--every "${!ev:-1}" --limit "${!lim:-20}")
  base=(retrieve --method arm --objects "$DATA/$s/objects.jsonl" --questions "$DATA/$s/questions.jsonl" --k 5
        --set database_weight=0 --set coverage_weight=0 "${sel[@]}" --json)
  run() { local name=$1; shift; echo "== $s $name $(date -u +%H:%M:%S)" >&2
          nice -n 10 $PY -m atomgraph.cli "${base[@]}" --out "$RUNS/$s/$name" "$@" > "$RUNS/$s/$name.json"; }
  mkdir -p "$RUNS/$s"
  run full --no-keywords
  run ia_model --no-keywords --set structure_alignment=false --set verification=false
  run sa_model --no-keywords --set verification=false
  run ia_free --no-llm --set structure_alignment=false --set verification=false
  run sa_free --no-llm --set verification=false
done
