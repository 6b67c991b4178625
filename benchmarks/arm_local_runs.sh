#!/usr/bin/env bash
# Issue 15 item 7: full ARM with the bundled local model (Gemma-3-270M in process, no keywords given)
# and the paper's Figure 4 ablation, through `atomgraph retrieve`, then the summary JSON.
#
#   bash benchmarks/arm_local_runs.sh RUNS_DIR [SETS]      (SETS default: hotpotqa musique spider)
#
# Questions: $EVERY_<set> / $LIMIT_<set> (defaults below: a fixed, spread subset per set).
# Rows per set (the paper's objective: database_weight=0, coverage_weight=0 and table_compatibility_scale=1, the project's
# database bonus, keyword coverage and join weight off):
#   full      model: decompose, trie-beam alignment, drafts, verification, vote (a fresh response cache)
#   ia_model  model's alignment only: structure_alignment=false verification=false (decompose/align replayed
#             from the response cache: the same greedy replies)
#   sa_model  + structure alignment: verification=false (vote over the drafts)
#   ia_free / sa_free   the same two rows LLM-free (keywords replayed where the questions carry them,
#             else the question's corpus n-grams), on the same questions
# Rows on request ($ROWS, default the five above):
#   full_fill  full with fill_to_k=true (the voted objects topped up to k from the drafts; replies replayed)
#   full_verified  full with aggregation=verified (only verified objects voted for: the reading before
#             session 6; replies replayed)
#   ngrams     full with decompose_constraint=ngrams (keywords decoded under the question's and corpus n-grams)
#   free       the full LLM-free pipeline (the replayed-keyword path item 5 of issue 30 compares with)
#   full_qkw   full with add_question_keywords=true (the question's own keywords added to the model's, aligned
#             as the LLM-free path aligns them)
#   ngrams_qkw  ngrams with add_question_keywords=true
#   ngrams_qkw_conn  ngrams_qkw with connected_selection=true (each verification cut to its part the draft's
#             links join; run after ngrams_qkw with the same response cache, its replies are replayed)
# Objective: $OBJECTIVE = paper (default: the three --set above) or defaults (the project's defaults, what
# `atomgraph retrieve` runs with no --set: database bonus, keyword coverage and join weight on).
# Output caps of the local model: $ARM_LOCAL_CAPS (ATOMGRAPH_STAGE_MAX_TOKENS; default below).
set -euo pipefail
RUNS=${1:?RUNS_DIR}; shift || true
SETS=${*:-hotpotqa musique spider}
DATA=${DATA:-../shared/data/retrieval}
export ATOMGRAPH_MODEL=local HF_HUB_OFFLINE=1 ATOMGRAPH_CACHE_PATH=${ATOMGRAPH_CACHE_PATH:-$RUNS/llm_cache.sqlite}
export ATOMGRAPH_STAGE_MAX_TOKENS=${ARM_LOCAL_CAPS:-'{"arm_decompose": 64, "arm_verify": 96}'}
ROWS=${ROWS:-full ia_model sa_model ia_free sa_free}
mkdir -p "$RUNS"
PY=${PY:-.venv/bin/python}
for s in $SETS; do
  ev=EVERY_$s; lim=LIMIT_$s
  sel=(--every "${!ev:-1}" --limit "${!lim:-20}")
  objective=(--set database_weight=0 --set coverage_weight=0 --set table_compatibility_scale=1)
  case ${OBJECTIVE:-paper} in paper) ;; defaults) objective=() ;; *) echo "OBJECTIVE: paper or defaults" >&2; exit 2 ;; esac
  base=(retrieve --method arm --objects "$DATA/$s/objects.jsonl" --questions "$DATA/$s/questions.jsonl" --k 5
        "${objective[@]}" "${sel[@]}" --json)
  run() { local name=$1; shift; echo "== $s $name $(date -u +%H:%M:%S)" >&2
          nice -n 10 $PY -m atomgraph.cli "${base[@]}" --out "$RUNS/$s/$name" "$@" > "$RUNS/$s/$name.json"; }
  mkdir -p "$RUNS/$s"
  for row in $ROWS; do case $row in
    full) run full --no-keywords ;;
    ia_model) run ia_model --no-keywords --set structure_alignment=false --set verification=false ;;
    sa_model) run sa_model --no-keywords --set verification=false ;;
    ia_free) run ia_free --no-llm --set structure_alignment=false --set verification=false ;;
    sa_free) run sa_free --no-llm --set verification=false ;;
    full_fill) run full_fill --no-keywords --set fill_to_k=true ;;
    full_verified) run full_verified --no-keywords --set aggregation=verified ;;
    ngrams) run ngrams --no-keywords --set decompose_constraint=ngrams ;;
    free) run free --no-llm ;;
    full_qkw) run full_qkw --no-keywords --set add_question_keywords=true ;;
    ngrams_qkw) run ngrams_qkw --no-keywords --set decompose_constraint=ngrams --set add_question_keywords=true ;;
    ngrams_qkw_conn) run ngrams_qkw_conn --no-keywords --set decompose_constraint=ngrams --set add_question_keywords=true \
                       --set connected_selection=true ;;
    *) echo "unknown row $row" >&2; exit 2 ;;
  esac; done
done
