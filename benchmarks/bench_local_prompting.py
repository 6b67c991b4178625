"""How the bundled base model (Gemma-3-270M, no chat template) is prompted and constrained,
measured on dev questions in one run.

Parts (``--part``):

- ``plan``: ATOMR's plan stage on the first N HotpotQA dev questions (``hotpotqa_dev_100``,
  demonstration questions left out), general pack, output cap ``--cap``, in four settings:
  chat turns or completion-style text, times the stage's PlanSchema JSON-schema grammar or the
  root-pinned plan grammar (``plan_grammar``).
  Counted per setting: replies that parse, and *usable* plans (a plan whose root is the
  question asked, at least one node, every leaf an operator call or ``[DR]``).
- ``stages``: the answering stages (``direct_rag``, ``search``, ``relate``) on N HotpotQA
  questions with their gold passages as the retrieved knowledge, chat vs completion, in text
  mode (the stage's parser over the free reply) and structured mode (the AnswerSchema grammar):
  replies that parse and replies with an answer (not Unknown).

Each reply, its parse and its seconds are written to the JSONL next to the results JSON;
greedy decoding from an emptied KV cache at every call (:func:`fresh_history`), so each reply is
reproducible on its own.

    nice python -m benchmarks.bench_local_prompting --part plan --n 20
    nice python -m benchmarks.bench_local_prompting --part stages --n 8
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
HOTPOT_DEV = DATA / "atomr" / "questions" / "single_source" / "HotpotQA" / "hotpotqa_dev_100.jsonl"
HOTPOT_RETRIEVAL = DATA / "retrieval" / "hotpotqa"


def demo_questions() -> set[str]:
    """Every question the prompt packs demonstrate (left out of the measured questions)."""
    from atomgraph.prompts.atomr.packs import EXAMPLES, PACKS

    out = {" ".join(q.split()).lower() for p in PACKS.values() for q, _ in p.plan_examples}
    for exs in EXAMPLES.values():
        for ex in exs:
            for line in ex.splitlines():
                if line.startswith("Question:"):
                    out.add(" ".join(line[9:].split()).lower())
    return out


def dev_questions(n: int) -> list[dict]:
    path = HOTPOT_DEV if HOTPOT_DEV.is_file() else next(HOTPOT_DEV.parent.glob("*dev_100.jsonl"))
    skip = demo_questions()
    rows = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
    return [r for r in rows if " ".join(r["question"].split()).lower() not in skip][:n]


def fresh_history(engine) -> None:
    """Empty the engine's KV cache and saved prefix states before a call (as the tests' autouse
    fixture does): each reply is the one a fresh process gives, whatever ran before it."""
    with engine.lock:
        engine._states.clear()
        engine.llm.n_tokens = 0
        engine.llm._ctx.kv_cache_clear()


def usable(plans, question: str) -> tuple[bool, str]:
    """(usable, why not): a kept plan for ``question`` whose leaves are all operator calls or [DR]."""
    from atomgraph.nodes.atomr.plan import pick_plan

    tree, problem = pick_plan(plans, question)
    if tree is None:
        return False, problem or "no plan"
    if not tree.nodes:
        return False, "no nodes"
    bad = [n.question for n in tree.nodes.values() if not n.children and n.kind not in ("operator", "direct")]
    if bad:
        return False, f"{len(bad)} leaves without an operator call or [DR]"
    return True, ""


def run_plan(args, engine, log) -> dict:
    from atomgraph.local.chat import ChatLocalLlama
    from atomgraph.prompts.atomr.plan import PLAN_CLOSE_RESERVE, plan_grammar
    from atomgraph.prompts.atomr.stages import PLAN_STAGE, PLAN_STOP, PlanSchema, read_plans

    questions = dev_questions(args.n)
    settings = [(fmt, mode) for mode in ("schema", "grammar") for fmt in ("chat", "completion")
                if not args.only or f"{fmt}+{mode}" in args.only]
    out: dict = {}
    for fmt, mode in settings:
        model = ChatLocalLlama(prompt_format=fmt, max_tokens=args.cap)
        counts = {"n": 0, "parsed": 0, "usable": 0, "seconds": 0.0, "output_tokens": 0}
        for row in questions:
            q = " ".join(row["question"].split())
            msgs = PLAN_STAGE.messages({"question": q, "pack": "general"})
            if mode == "schema":
                bound = model.bind(json_schema=PlanSchema.model_json_schema())
            else:
                bound = model.bind(grammar=plan_grammar(q), close_reserve=PLAN_CLOSE_RESERVE, stop=list(PLAN_STOP))
            fresh_history(engine)
            t0 = time.perf_counter()
            msg = bound.invoke(msgs)
            secs = time.perf_counter() - t0
            text = str(msg.content)
            plans, err = None, None
            try:
                plans = PLAN_STAGE.from_structured(PlanSchema.model_validate_json(text)) if mode == "schema" \
                    else read_plans(text)
            except Exception as exc:  # noqa: BLE001 - an unreadable reply is what we count
                err = f"{type(exc).__name__}: {str(exc)[:200]}"
            ok, why = usable(plans, q) if plans else (False, err or "no plan")
            counts["n"] += 1
            counts["parsed"] += plans is not None
            counts["usable"] += ok
            counts["seconds"] += secs
            counts["output_tokens"] += (msg.usage_metadata or {}).get("output_tokens", 0)
            log.write(json.dumps({"part": "plan", "format": fmt, "mode": mode, "question": q, "reply": text,
                                  "parsed": plans is not None, "usable": ok, "why": why, "seconds": round(secs, 2)},
                                 ensure_ascii=False) + "\n")
            log.flush()
            print(f"plan {fmt}/{mode}: usable={ok} {why[:80]!r} {secs:.1f}s", file=sys.stderr, flush=True)
        counts["seconds_per_question"] = round(counts["seconds"] / max(1, counts["n"]), 2)
        counts["seconds"] = round(counts["seconds"], 1)
        out[f"{fmt}+{mode}"] = counts
    return {"questions": len(questions), "cap": args.cap, "pack": "general", "settings": out}


def gold_passages(n: int) -> list[dict]:
    objects = {}
    for line in (HOTPOT_RETRIEVAL / "objects.jsonl").open(encoding="utf-8"):
        o = json.loads(line)
        objects[o["id"]] = o
    skip = demo_questions()
    rows = []
    for line in (HOTPOT_RETRIEVAL / "questions.jsonl").open(encoding="utf-8"):
        q = json.loads(line)
        if " ".join(q["question"].split()).lower() in skip:
            continue
        q["passages"] = [objects[i] for i in q["gold_ids"] if i in objects]
        rows.append(q)
    return rows[:n]


def knowledge_text(passages: list[dict]) -> str:
    return "Wikipedia Passages:\n" + "\n".join(f"[{i}] {p['title']} | {p['text']}" for i, p in enumerate(passages, 1))


def run_stages(args, engine, log) -> dict:
    from atomgraph.local.chat import ChatLocalLlama
    from atomgraph.prompts.atomr.stages import AnswerSchema, STAGES, answer_from_structured

    rows = gold_passages(args.n)
    out: dict = {}
    for stage_name in ("direct_rag", "search", "relate"):
        stage = STAGES[stage_name]
        for fmt in ("chat", "completion"):
            for mode in ("text", "structured"):
                model = ChatLocalLlama(prompt_format=fmt, max_tokens=args.cap)
                bound = model.bind(json_schema=AnswerSchema.model_json_schema()) if mode == "structured" \
                    else model.bind(stop=list(stage.stop))
                counts = {"n": 0, "parsed": 0, "answered": 0, "seconds": 0.0}
                for row in rows:
                    q = " ".join(row["question"].split())
                    if stage_name == "direct_rag":
                        inputs = {"question": q, "knowledge": knowledge_text(row["passages"])}
                    else:  # the operator stage on the question's first gold passage's title
                        title = row["passages"][0]["title"] if row["passages"] else q
                        inputs = {"question": q, "knowledge": knowledge_text(row["passages"]),
                                  "operator": f'Search("{title}")' if stage_name == "search"
                                  else f'Relate("{title}", "{q}")'}
                    try:
                        msgs = stage.messages(inputs)
                    except KeyError as exc:
                        return {"error": f"{stage_name} needs input {exc}"}
                    fresh_history(engine)
                    t0 = time.perf_counter()
                    msg = bound.invoke(msgs)
                    secs = time.perf_counter() - t0
                    text = str(msg.content)
                    value, err = None, None
                    try:
                        value = answer_from_structured(AnswerSchema.model_validate_json(text)) \
                            if mode == "structured" else stage.parse(text)
                    except Exception as exc:  # noqa: BLE001
                        err = f"{type(exc).__name__}: {str(exc)[:200]}"
                    counts["n"] += 1
                    counts["parsed"] += value is not None
                    counts["answered"] += bool(value is not None and not value.unknown and value.answers)
                    counts["seconds"] += secs
                    log.write(json.dumps({"part": "stages", "stage": stage_name, "format": fmt, "mode": mode,
                                          "question": q, "reply": text, "error": err,
                                          "answers": value.answers if value is not None else None,
                                          "seconds": round(secs, 2)}, ensure_ascii=False) + "\n")
                    log.flush()
                    print(f"{stage_name} {fmt}/{mode}: {err or (value.answers if value else '')!r:.80} {secs:.1f}s",
                          file=sys.stderr, flush=True)
                counts["seconds"] = round(counts["seconds"], 1)
                out[f"{stage_name}:{fmt}+{mode}"] = counts
    return {"questions": len(rows), "cap": args.cap, "settings": out}


# --- every stage the bundled model runs -------------------------------------------------------
HIPPO = DATA / "hipporag"
MUSIQUE_TRAIN = HIPPO / "musique_train.json"
MUSIQUE_CORPUS = HIPPO / "musique_train_corpus.json"


def _norm_q(q: str) -> str:
    return " ".join(str(q).split())


class Lexical:
    """BM25 over a passage list (title + text): the retrieval that feeds the measured stages their
    passages (a stand-in for the project's embedded index, fast enough to build in the run)."""

    def __init__(self, passages: list[dict]):
        import math
        import re
        from collections import Counter

        self.passages = passages
        self._tok = lambda s: re.findall(r"[a-z0-9]+", s.lower())
        docs = [self._tok(f"{p['title']} {p['text']}") for p in passages]
        self.tf = [Counter(d) for d in docs]
        self.len = [len(d) for d in docs]
        self.avg = sum(self.len) / max(1, len(docs))
        df = Counter(w for d in docs for w in set(d))
        n = len(docs)
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}

    def top(self, query: str, k: int, exclude: set[str] = frozenset()) -> list[dict]:
        q = set(self._tok(query))
        scores = []
        for i, tf in enumerate(self.tf):
            if self.passages[i]["id"] in exclude:
                continue
            s = 0.0
            for w in q:
                f = tf.get(w)
                if f:
                    s += self.idf[w] * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * self.len[i] / self.avg))
            scores.append((s, i))
        scores.sort(key=lambda x: -x[0])
        return [self.passages[i] for _, i in scores[:k]]


def stage_inputs(n: int) -> dict[str, list[tuple[dict, object]]]:
    """Per measured stage, up to ``n`` (variables, constraint) pairs built from dev/train data:
    HotpotQA dev questions (ATOMR's question-only stages, ARM's decomposition, CoT), the HippoRAG
    HotpotQA train questions with passages retrieved from their corpus (operators, direct RAG,
    RAG, ARM), MuSiQue train questions with their decompositions (sub-question operators, child
    and sibling reasoning, KAR³ over the MuSiQue corpus). Demonstration questions are left out."""
    import ast
    from types import SimpleNamespace

    from atomgraph.nodes.atomr.node_reasoning import executor_question
    from atomgraph.prompts.arm import selection_schema
    from atomgraph.prompts.atomr.kg_program import PROGRAM_CONSTRAINT
    from atomgraph.prompts.atomr.stages import format_knowledge
    from atomgraph.prompts.atomr.stages import format_qa_pairs
    from atomgraph.prompts.atomr.source_selection import describe_sources
    from atomgraph.prompts.atomr.stages import plan_constraint
    from atomgraph.prompts.baselines import examples
    from atomgraph.state.run import Evidence, render_evidence
    from atomgraph.state.atomr import OperatorCall
    from atomgraph.text import content_words

    skip = demo_questions()
    keep = lambda q: _norm_q(q).lower() not in skip  # noqa: E731
    dev = [r for r in (json.loads(x) for x in HOTPOT_DEV.open(encoding="utf-8") if x.strip()) if keep(r["question"])][:n]
    hot = gold_passages(10 ** 6)  # every HotpotQA train question (Filter takes the comparison ones)
    hot_objects = [json.loads(x) for x in (HOTPOT_RETRIEVAL / "objects.jsonl").open(encoding="utf-8")]
    hot_index = Lexical(hot_objects)
    train = json.loads((HIPPO / "hotpotqa_train.json").read_text(encoding="utf-8"))
    types = {_norm_q(t["question"]): t.get("type") for t in train}
    mus = [m for m in json.loads(MUSIQUE_TRAIN.read_text(encoding="utf-8")) if keep(m["question"])]
    for m in mus:
        if isinstance(m["paragraphs"], str):
            m["paragraphs"] = ast.literal_eval(m["paragraphs"])
        if isinstance(m["question_decomposition"], str):
            m["question_decomposition"] = ast.literal_eval(m["question_decomposition"])
    mus = [m for m in mus if len(m["question_decomposition"]) >= 2][:n]
    mus_corpus = [{"id": str(i), **p} for i, p in enumerate(json.loads(MUSIQUE_CORPUS.read_text(encoding="utf-8")))]
    mus_index = Lexical(mus_corpus)

    def evidence(ps, source="wikipedia"):
        return [Evidence(title=p["title"], text=p["text"], source=source, id=str(p.get("id"))) for p in ps]

    def support(m, step):
        return m["paragraphs"][m["question_decomposition"][step]["paragraph_support_idx"]]

    def node_q(i, q):
        return f"{i}. " + q.replace("#1", "[1]").replace("#2", "[2]").replace("#3", "[3]").strip()

    out: dict[str, list] = {}
    out["plan"] = [({"question": _norm_q(r["question"]), "pack": "general"}, plan_constraint(_norm_q(r["question"]), "local"))
                   for r in dev]
    srcs = [SimpleNamespace(name="wikipedia", kind="text", description="Wikipedia passages (encyclopedic text about "
                            "people, places, works, organisations and events), searched by meaning."),
            SimpleNamespace(name="google", kind="web", description="Google web search (via SerpAPI): current events, "
                            "news and facts from the open web."),
            SimpleNamespace(name="wikidata", kind="kg", description="Wikidata knowledge graph (SPARQL): entities, their "
                            "relations and attributes such as dates and quantities.")]
    out["source_selection"] = [({"question": _norm_q(r["question"]), "n_sources": 3, "source_list": describe_sources(srcs)},
                                None) for r in dev]
    # operators: a sub-question's Search on its supporting paragraph's title (MuSiQue), Relate of a
    # HotpotQA question's two gold titles, Filter of a comparison question's two titles by the question
    out["search"], out["kg_program"] = [], []
    for m in mus:
        q1 = m["question_decomposition"][0]["question"].strip()
        title = support(m, 0)["title"]
        call = OperatorCall(name="Search", args=[title])
        know = format_knowledge(evidence(mus_index.top(q1, 3)))
        out["search"].append(({"question": executor_question("Search", q1, [title]), "knowledge": know, "pack": "general"},
                              None))
        out["kg_program"].append(({"question": q1, "operator": call.render()}, PROGRAM_CONSTRAINT))
    out["relate"], out["filter"], out["direct_rag"], out["rag"] = [], [], [], []
    for row in hot:
        q = _norm_q(row["question"])
        titles = [p["title"] for p in row["passages"]][:2]
        know = format_knowledge(evidence(hot_index.top(q, 3)))
        if len(titles) == 2 and len(out["relate"]) < n:
            out["relate"].append(({"question": executor_question("Relate", q, titles), "knowledge": know,
                                   "pack": "general"}, None))
        if len(titles) == 2 and types.get(q) == "comparison" and len(out["filter"]) < n:
            args = [f"[{titles[0]}, {titles[1]}]", q]
            out["filter"].append(({"question": executor_question("Filter", q, args), "condition": q,
                                   "knowledge": know, "pack": "general"}, None))
        if len(out["direct_rag"]) < n:
            out["direct_rag"].append(({"question": q, "knowledge": know, "pack": "general"}, None))
            out["rag"].append(({"question": q, "examples": examples(2),
                                "evidence": render_evidence(evidence(hot_index.top(q, 3)))}, None))
    out["child_reasoning"], out["sibling_reasoning"] = [], []
    for m in mus:
        steps = m["question_decomposition"]
        pairs = [(i, node_q(i, s["question"]), [s["answer"]], "") for i, s in enumerate(steps, 1)]
        out["child_reasoning"].append(({"question": _norm_q(m["question"]), "qa_pairs": format_qa_pairs(pairs),
                                        "pack": "general"}, None))
        out["sibling_reasoning"].append(({"question": node_q(2, steps[1]["question"]),
                                          "qa_pairs": format_qa_pairs(pairs[:1]), "pack": "general"}, None))
    out["closed_book"] = [({"question": _norm_q(r["question"]), "pack": "general"}, None) for r in dev]
    # KAR³ on MuSiQue: atomize a supporting paragraph; propose after one chosen chunk; select among the
    # question's top-4 chunks (an atom: the chunk's first sentence, as the proxy atomizer writes); answer
    # from the supporting paragraphs
    def chunk(p, atom=None):
        return SimpleNamespace(chunk_id=str(p.get("id") or p["title"]), title=p["title"], text=p["text"],
                               atom=atom, score=0.0)

    out["atomize"], out["propose"], out["select"], out["answer"] = [], [], [], []
    for m in mus:
        q = _norm_q(m["question"])
        first = support(m, 0)
        out["atomize"].append(({"title": first["title"], "text": first["paragraph_text"]}, None))
        out["propose"].append(({"question": q, "chosen": [chunk({"title": first["title"], "text": first["paragraph_text"]})]},
                               None))
        hits = [chunk(p, p["text"].split(". ")[0].rstrip(".") + ".") for p in mus_index.top(q, 4)]
        out["select"].append(({"question": q, "chosen": [], "candidates": hits}, None))
        gold = [chunk({"title": p["title"], "text": p["paragraph_text"]}) for p in m["paragraphs"] if p.get("is_supporting")]
        out["answer"].append(({"question": q, "chosen": gold}, None))
    # ARM on the HotpotQA collection: keywords of a dev question; verify a draft of the gold
    # passages and one retrieved distractor; answer from the gold passages
    out["arm_decompose"] = [({"question": _norm_q(r["question"]), "max_keywords": 12}, None) for r in dev]
    out["arm_verify"], out["arm_answer"] = [], []
    for row in hot[:n]:
        q = _norm_q(row["question"])
        gold = row["passages"]
        other = hot_index.top(q, 1, exclude={p["id"] for p in gold})
        objs = gold + other

        def verbal(p):
            return f"Object id: {p['id']}\nDocument name: {p['title']}\nDocument content: {p['text']}"
        kws = sorted(content_words(q))[:5]
        out["arm_verify"].append(({"question": q, "keywords": kws, "draft": "\n\n".join(verbal(p) for p in objs)},
                                  selection_schema([p["id"] for p in objs])))
        out["arm_answer"].append(({"question": q, "objects": "\n\n".join(verbal(p) for p in gold)}, None))
    out["cot"] = [({"question": _norm_q(r["question"]), "examples": examples(2, with_reasoning=True)}, None) for r in dev]
    return out


# stage name -> (method whose runtime calls it, module of its stages)
EVERY = {
    "search": "atomr", "relate": "atomr", "filter": "atomr", "child_reasoning": "atomr", "sibling_reasoning": "atomr",
    "direct_rag": "atomr", "closed_book": "atomr", "source_selection": "atomr", "kg_program": "atomr",
    "atomize": "kar3_index", "propose": "kar3", "select": "kar3", "answer": "kar3",
    "arm_decompose": "arm", "arm_verify": "arm", "arm_answer": "arm", "rag": "rag", "cot": "cot", "plan": "atomr",
}


def stage_object(name: str):
    if EVERY[name] == "atomr":
        from atomgraph.prompts.atomr.stages import STAGES
    elif EVERY[name] == "kar3_index":
        from atomgraph.prompts.kar3.atomize import ATOMIZE_STAGE

        return ATOMIZE_STAGE
    elif EVERY[name] == "kar3":
        from atomgraph.prompts.kar3.stages import STAGES
    elif EVERY[name] == "arm":
        from atomgraph.prompts.arm import STAGES
    else:
        from atomgraph.prompts.baselines import STAGES
    return STAGES[name]


def parser_reads(stage, text: str | None, structured: bool) -> bool:
    """Whether the stage's own parser reads ``text`` into a value (structured mode: the schema,
    then the stage's conversion), before the answer contract and the cut rule."""
    if not text:
        return False
    try:
        if structured:
            obj = stage.schema.model_validate_json(text)
            if stage.from_structured is not None:
                stage.from_structured(obj)
        else:
            stage.parse(text)
        return True
    except Exception:  # noqa: BLE001 - an unreadable reply is what we count
        return False


def usable_value(name: str, value, variables: dict) -> tuple[bool, str]:
    """Whether a read (and contract-held) value is one the node can use, and why not."""
    if value is None:
        return False, "no value"
    if name == "plan":
        return usable(value, variables["question"])
    if name == "source_selection":
        from atomgraph.prompts.atomr.source_selection import choose_sources

        return bool(choose_sources(value, ["wikipedia", "google", "wikidata"])), "names no source"
    if name == "kg_program":
        from atomgraph.prompts.atomr.kg_program import program_problem
        from atomgraph.prompts.atomr.tree_parser import parse_leaf

        leaf = parse_leaf(variables["operator"])
        why = program_problem(value, variables["question"], list(leaf.operator.args) if leaf.operator else [])
        return why is None, why or ""
    if EVERY[name] == "atomr":  # ATOMR's answer format
        ok = bool(not value.unknown and value.answers)
        return ok, "" if ok else ("Unknown" if value.unknown else "no answers")
    if name == "atomize":  # (kar3_index: the indexing graph's atomizer)
        from atomgraph.prompts.kar3.atomize import filter_atoms

        atoms = filter_atoms(list(value), variables["text"]).kept
        return bool(atoms), "" if atoms else "no atomic question"
    if name == "propose":
        qs = list(value.questions)
        return bool(qs), "" if qs else "empty list (stop)"
    if name == "select":
        idx = value.index
        ok = idx is not None and 1 <= idx <= len(variables["candidates"])
        return ok, "" if ok else f"index {idx!r}"
    if name == "arm_decompose":
        return bool(value), "" if value else "no keyword"
    if name == "arm_verify":
        objs = value.get("objects") or []
        return bool(objs), "" if objs else "no object"
    return bool(str(value).strip()), ""  # answers: the contract held in rt.ask


def shared_prefix(engine, prompts: list[list[int]]) -> list[int]:
    """The tokens every prompt of a cell starts with (its instructions and demonstrations)."""
    first = prompts[0]
    n = len(first)
    for p in prompts[1:]:
        n = min(n, len(p))
        for i in range(n):
            if p[i] != first[i]:
                n = i
                break
    return list(first[: max(0, min(n, len(first) - 2))])


def prefix_state(engine, prefix: list[int]) -> bytes | None:
    """The KV state of ``prefix`` evaluated from an empty cache (None when too short to save)."""
    from atomgraph.local.engine import MIN_REUSE

    fresh_history(engine)
    if len(prefix) < MIN_REUSE:
        return None
    with engine.lock:
        engine._extend(list(prefix))
        engine.remember(list(prefix))
        return engine._states.get(tuple(prefix))


def fixed_history(engine, prefix: list[int], state: bytes | None) -> None:
    """Every call of a cell starts from the same history: an empty cache holding only the saved
    state of the cell's shared prefix (evaluated once from empty), whatever ran before."""
    fresh_history(engine)
    if state is not None:
        with engine.lock:
            engine._states[tuple(prefix)] = state


# settings: (prompt format, decoding). "structured": rt.ask with structured_output on (a stage with a
# schema decodes under its JSON-schema grammar; a constraint the node passes is kept): the in-process
# default before ``text_reply``; "text": the stage's text parser over a free reply ended by its stop
# sequences (stages with a schema and no constraint only): what ``text_reply`` makes the default for
# a stage with stop sequences sent to a base model in completion format
SETTINGS = {"chat": ("chat", "structured"), "completion+json": ("completion", "structured"),
            "completion+text": ("completion", "text")}


def run_every(args, engine, log) -> dict:
    import asyncio

    from atomgraph.local.chat import ChatLocalLlama, _turns
    from atomgraph.nodes.call import CallRecorder, call_stage
    from atomgraph.nodes.runtime import MethodRuntime
    from atomgraph.settings import Settings

    inputs = stage_inputs(args.skip + args.n)
    names = [s for s in EVERY if not args.stages or s in args.stages]
    wanted = [f for f in SETTINGS if not args.formats or f in args.formats]
    caps = {name: min(stage_object(name).max_tokens, args.plan_cap if name == "plan" else args.cap) for name in names}
    # structured_output set explicitly: rt.ask decodes a schema stage under its JSON-schema grammar
    # in both formats (the "text" setting calls the stage in text mode itself)
    settings = Settings(cache=False, request_timeout=3600, max_retries=0, stage_max_tokens=caps,
                        structured_output=True)
    loop = asyncio.new_event_loop()
    for name in names:
        stage = stage_object(name)
        rows = inputs[name][args.skip: args.skip + args.n]
        if not rows:
            continue
        for setting in wanted:
            fmt, mode = SETTINGS[setting]
            if mode == "text" and (stage.schema is None or any(c is not None for _, c in rows)):
                continue  # no JSON-schema decoding to compare with
            model = ChatLocalLlama(prompt_format=fmt)
            rt = MethodRuntime.for_method(EVERY[name], models=model, sources=[], settings=settings)
            prompts = [engine.prompt(_turns(stage.messages(v)), fmt) for v, _ in rows]
            prefix = shared_prefix(engine, prompts)
            state = prefix_state(engine, prefix)
            for i, (variables, constraint) in enumerate(rows, args.skip):
                fixed_history(engine, prefix, state)
                t0 = time.perf_counter()
                if mode == "structured":
                    res = loop.run_until_complete(rt.ask(stage, variables, None, constraint=constraint))
                else:
                    rec = CallRecorder(role=stage.role, stage=stage.name, cap=caps[name])
                    res = loop.run_until_complete(call_stage(stage, variables, stage.model_for(model, caps[name]),
                                                             None, rec, caps[name]))
                secs = time.perf_counter() - t0
                structured = mode == "structured" and stage.schema is not None and constraint is None
                parsed = parser_reads(stage, res.text, structured)
                ok, why = usable_value(name, res.value, variables) if res.ok else (False, res.problem or "")
                tokens = res.call.completion_tokens or 0
                log.write(json.dumps({"part": "every", "stage": name, "setting": setting, "format": fmt, "mode": mode,
                                      "structured": structured, "i": i,
                                      "constraint": type(constraint).__name__ if constraint else None,
                                      "question": variables.get("question") or variables.get("title"),
                                      "reply": res.text, "parsed": parsed, "usable": ok, "why": "" if ok else why,
                                      "contract_refused": bool(parsed and not res.ok), "cut": res.call.cut,
                                      "ran_on": tokens >= caps[name] - RAN_ON_MARGIN, "output_tokens": tokens,
                                      "cap": caps[name], "prefix_tokens": len(prefix), "seconds": round(secs, 2)},
                                     ensure_ascii=False) + "\n")
                log.flush()
                print(f"{name} {setting} #{i}: parsed={parsed} usable={ok} {'' if ok else why[:70]!r} "
                      f"{tokens} tok {secs:.1f}s", file=sys.stderr, flush=True)
    loop.close()
    return summarize_every(Path(log.name))


# a reply within this many tokens of its cap ran on (JSON replies are closed there by the closer)
RAN_ON_MARGIN = 32


def summarize_every(jsonl: Path) -> dict:
    """Per stage and setting, from every JSONL record (several runs appended): n, replies the
    stage's parser reads, usable values, usable values whose reply ended before the closing zone
    near the cap (a JSON reply closed there by the closer was running on), cut replies, seconds."""
    out: dict = {}
    for line in jsonl.open(encoding="utf-8"):
        r = json.loads(line)
        if r.get("part") != "every":
            continue
        c = out.setdefault(r["stage"], {}).setdefault(r["setting"], {
            "n": 0, "parsed": 0, "usable": 0, "usable_ended": 0, "contract_refused": 0, "cut": 0, "ran_on": 0,
            "output_tokens": 0, "seconds": 0.0, "cap": r["cap"]})
        c["n"] += 1
        c["parsed"] += r["parsed"]
        c["usable"] += r["usable"]
        c["usable_ended"] += bool(r["usable"] and not r["ran_on"])
        c["contract_refused"] += r["contract_refused"]
        c["cut"] += bool(r["cut"])
        c["ran_on"] += bool(r["ran_on"])
        c["output_tokens"] += r["output_tokens"]
        c["seconds"] = round(c["seconds"] + r["seconds"], 1)
    return {"stages": out}

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("plan", "stages", "every"), required=True)
    ap.add_argument("--n", type=int, default=20, help="questions (default 20)")
    ap.add_argument("--cap", type=int, default=160, help="output tokens per call (default 160)")
    ap.add_argument("--plan-cap", type=int, default=128, help="--part every: the plan stage's cap (default 128)")
    ap.add_argument("--stages", nargs="*", default=None, help="--part every: stages to run (default all)")
    ap.add_argument("--formats", nargs="*", default=None,
                    help="--part every: settings chat, completion+json, completion+text (default all)")
    ap.add_argument("--skip", type=int, default=0, help="--part every: start at this input (append to the JSONL)")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: llama-cpp-python's)")
    ap.add_argument("--only", nargs="*", default=None, help="plan settings to run, e.g. completion+grammar")
    ap.add_argument("--out", default=None, help="results JSON (default benchmarks/results/local_prompting_<part>.json)")
    args = ap.parse_args(argv)
    if not HOTPOT_DEV.parent.is_dir():
        print(f"skipped: {HOTPOT_DEV.parent} is absent", file=sys.stderr)
        return 0
    from atomgraph.local.engine import load_engine

    if args.threads:
        from atomgraph.local import engine as engine_module

        path = engine_module.bundled_model_path()
        key = (str(engine_module.check_gguf_path(path)), engine_module.DEFAULT_N_CTX)
        engine_module._ENGINES[key] = engine_module.LocalEngine(path, n_threads=args.threads)
    engine = load_engine()
    out = Path(args.out or REPO / "benchmarks" / "results" / f"local_prompting_{args.part}.json")
    args.out_every = str(out) if args.part == "every" else None
    t0 = time.perf_counter()
    with out.with_suffix(".jsonl").open("a" if args.part == "every" else "w", encoding="utf-8") as log:
        run = {"plan": run_plan, "stages": run_stages, "every": run_every}[args.part]
        res = run(args, engine, log)
    res.update({"model": engine.name, "chat_template": engine.is_chat_model, "wall_s": round(time.perf_counter() - t0, 1),
                "command": f"python -m benchmarks.bench_local_prompting --part {args.part} --n {args.n} --cap {args.cap}"
                           + (f" --only {' '.join(args.only)}" if args.only else "")
                           + (f" --plan-cap {args.plan_cap} --skip {args.skip}" if args.part == "every" else "")
                           + (f" --stages {' '.join(args.stages)}" if args.stages else "")
                           + (f" --formats {' '.join(args.formats)}" if args.formats else "")})
    out.write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
