"""A scripted chat model, for tests, notebooks and benchmarks without an LLM, with the ATOMR and
KAR³ scripts built on it (:func:`atomr_scripted_model`, :func:`kar3_scripted_model`).

``ScriptedChatModel`` answers each call by its prompt stage: every atomgraph stage runs
tagged ``stage:<name>``, and ``stages={"plan": reply, ...}`` answers by that tag (a reply is
a string, a function of the prompt text, or an exception to raise). Calls without a stage
rule fall to ``rules`` — (pattern, reply) pairs matched against the prompt text (a regex, a
predicate, or ``"stage:<name>"``) — and then to ``default``. Every call is recorded with its
stage and the output cap it ran under, concurrently-safe, so graphs that call the model from
parallel branches get deterministic answers regardless of order.

>>> model = ScriptedChatModel(stages={"plan": '{"Q?": "Search(\\"X\\")"}', "source_selection": "Wikipedia"},
...                           default="So the answer is: (1) Paraphrase Answer: x; (2) Answer List: [\\"x\\"]")

Tool calling (agents such as ReAct): ``bind_tools`` works, and a reply may be an ``AIMessage``
carrying tool calls — :func:`tool_call` writes one:

>>> model = ScriptedChatModel(stages={"react": lambda p: "So the answer is: Ulm" if "Ulm" in p
...                                   else tool_call("search_wikipedia", query="Einstein birthplace")})
"""


from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from typing import Any, Callable, Sequence

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import Field, PrivateAttr
from atomgraph.environment import env_value as _env_value


Response = str | AIMessage | Callable[[str], str | AIMessage] | BaseException
Rule = tuple[str | re.Pattern | Callable[[str], bool], Response]


class NoScriptedResponse(AssertionError):
    """The scripted model met a prompt no rule answers (a test's script is incomplete)."""


def prompt_text(messages: Sequence[BaseMessage]) -> str:
    out = []
    for m in messages:
        c = m.content
        out.append(c if isinstance(c, str) else " ".join(str(b.get("text", b)) if isinstance(b, dict) else str(b) for b in c))
    return "\n".join(out)


def stage_of(run_manager: Any) -> str | None:
    """The stage a model call runs for: its ``stage:<name>`` tag (inherited from the stage's run)."""
    for tag in getattr(run_manager, "tags", None) or []:
        if isinstance(tag, str) and tag.startswith("stage:"):
            return tag.split(":", 1)[1]
    return None


class ScriptedChatModel(BaseChatModel):
    """Answers by rules (pattern → response); optional fixed latency; records every prompt."""

    rules: list[Any] = Field(default_factory=list)
    stages: dict[str, Any] = Field(default_factory=dict)
    default: Any = None
    latency_s: float = 0.0
    model_name: str = "scripted"
    temperature: float | None = None  # recorded on each call, as a real model would be sent them
    max_tokens: int | None = None
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _prompts: list[str] = PrivateAttr(default_factory=list)
    _calls: list[dict] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def __getstate__(self) -> dict:
        """Picklable (``eval run --workers`` sends the model to its worker processes): the lock is
        not sent; each process records the prompts it sees."""
        state = super().__getstate__()
        return {**state, "__pydantic_private__": {**(state.get("__pydantic_private__") or {}), "_lock": None}}

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self._lock = threading.Lock()

    @property
    def prompts(self) -> list[str]:
        """Every prompt seen so far, in arrival order."""
        with self._lock:
            return list(self._prompts)

    @property
    def calls(self) -> list[dict]:
        """Every call so far: ``{"stage", "prompt", "max_tokens", "temperature"}`` (and ``"stop"``,
        ``"tools"`` and ``"tool_choice"`` when sent), in arrival order."""
        with self._lock:
            return list(self._calls)

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Runnable:
        """The model with ``tools`` offered (recorded on each call as ``"tools"``); replies
        come from the script as usual, an ``AIMessage`` with tool calls among them."""
        from langchain_core.utils.function_calling import convert_to_openai_tool

        choice = {"tool_choice": tool_choice} if tool_choice is not None else {}
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **choice, **kwargs)

    def _respond(self, text: str, stage: str | None = None, kwargs: dict | None = None,
                 stop: list[str] | None = None) -> str | AIMessage:
        kwargs = kwargs or {}
        cap = kwargs.get("max_tokens", kwargs.get("max_completion_tokens", self.max_tokens))
        call: dict[str, Any] = {"stage": stage, "prompt": text, "max_tokens": cap,
                                "temperature": kwargs.get("temperature", self.temperature)}
        if stop:
            call["stop"] = list(stop)
        if kwargs.get("tools"):
            call["tools"] = [t.get("function", t).get("name") for t in kwargs["tools"]]
        if kwargs.get("tool_choice") is not None:
            call["tool_choice"] = kwargs["tool_choice"]
        with self._lock:
            self._prompts.append(text)
            self._calls.append(call)
        return _cut_at_stop(self._reply(text, stage), stop)

    def _reply(self, text: str, stage: str | None) -> str | AIMessage:
        if stage is not None and stage in self.stages:
            return self._materialize(self.stages[stage], text)
        for pattern, response in self.rules:
            if callable(pattern) and not isinstance(pattern, re.Pattern):
                hit = pattern(text)
            elif isinstance(pattern, re.Pattern):
                hit = bool(pattern.search(text))
            elif pattern.startswith("stage:"):
                hit = stage == pattern.split(":", 1)[1]
            else:
                hit = bool(re.search(pattern, text, flags=re.S | re.I))
            if hit:
                return self._materialize(response, text)
        if self.default is not None:
            return self._materialize(self.default, text)
        raise NoScriptedResponse(f"no scripted response for stage {stage!r}, prompt:\n{text[:2000]}")

    @staticmethod
    def _materialize(response: Response, text: str) -> str | AIMessage:
        if isinstance(response, BaseException):
            raise response
        out = response(text) if callable(response) and not isinstance(response, AIMessage) else response
        return out if isinstance(out, AIMessage) else str(out)

    def _result(self, reply: str | AIMessage, prompt: str) -> ChatResult:
        text = reply.text if isinstance(reply, AIMessage) else reply
        n_calls = len(reply.tool_calls) if isinstance(reply, AIMessage) else 0
        usage = {
            "input_tokens": max(1, len(prompt.split())),
            "output_tokens": max(1, len(text.split()) + 8 * n_calls),
        }
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        meta = {"model_name": self.model_name}
        if isinstance(reply, AIMessage):  # a scripted message keeps its metadata (e.g. finish_reason "length")
            meta = {**(reply.response_metadata or {}), **meta}
            msg = reply.model_copy(update={"usage_metadata": usage, "response_metadata": meta})
        else:
            msg = AIMessage(content=text, usage_metadata=usage, response_metadata=meta)
        return ChatResult(generations=[ChatGeneration(message=msg)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt = prompt_text(messages)
        if self.latency_s:
            time.sleep(self.latency_s)
        return self._result(self._respond(prompt, stage_of(run_manager), kwargs, stop), prompt)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt = prompt_text(messages)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        return self._result(self._respond(prompt, stage_of(run_manager), kwargs, stop), prompt)


def _cut_at_stop(reply: str | AIMessage, stop: list[str] | None) -> str | AIMessage:
    """A text reply ends before the first stop sequence, as a server would end it."""
    if not stop or not isinstance(reply, str):
        return reply
    cut = min((i for i in (reply.find(s) for s in stop if s) if i >= 0), default=-1)
    return reply[:cut] if cut >= 0 else reply


def tool_call(name: str, **args: Any) -> AIMessage:
    """A scripted reply that calls tool ``name`` with ``args`` (a fresh call id each time)."""
    import uuid

    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:12]}",
                                              "type": "tool_call"}])


# --- ATOMR scripts -----------------------------------------------------------------------


def answer_reply(*answers: str, paraphrase: str | None = None) -> str:
    """A model reply in ATOMR's answer format."""
    import json

    para = paraphrase if paraphrase is not None else (", ".join(answers) or "Unknown")
    return f"So the answer is: (1) Paraphrase Answer: {para}; (2) Answer List: {json.dumps(list(answers), ensure_ascii=False)}"


def atomr_scripted_model(
    plans: dict[str, Any] | Callable[[str], str],
    answer: Callable[[str, str], str] | None = None,
    sources_reply: str = "Wikipedia, Google",
    latency_s: float = 0.0,
) -> ScriptedChatModel:
    """A scripted model that plays every ATOMR role.

    ``plans`` maps a question to the planner's reply (a tree dict or raw text), or is a
    function of the prompt. ``answer(stage, prompt_text)`` writes the reply of every other
    stage except source selection (default: ``answer_reply("ok")``).
    """
    import json

    def plan_reply(text: str) -> str:
        if callable(plans):
            return plans(text)
        # The longest matching question wins (one question may contain another).
        for q in sorted(plans, key=len, reverse=True):
            if q in text:
                p = plans[q]
                return p if isinstance(p, str) else json.dumps(p, ensure_ascii=False)
        raise NoScriptedResponse("no plan scripted for this question")

    def answering(stage: str):
        return lambda text: answer(stage, text) if answer else answer_reply("ok")

    stages: dict[str, Any] = {"plan": plan_reply, "source_selection": sources_reply, "kg_program": kg_program_reply}
    stages.update({s: answering(s) for s in ATOMR_ANSWER_STAGES})
    return ScriptedChatModel(stages=stages, latency_s=latency_s)


def kg_program_reply(text: str) -> str:
    """ATOMR's knowledge-graph query program for the last ``Operator: Relate(...)`` line of the
    prompt: its first argument as the entity, its second as the one relation."""
    import json

    from atomgraph.prompts.atomr.tree_parser import parse_operator

    line = text.rsplit("Operator:", 1)[-1].strip().splitlines()[0] if "Operator:" in text else ""
    op, _ = parse_operator(line)
    args = op.args if op is not None else []
    return json.dumps({"entity": args[0] if args else "", "relations": args[1:2], "constraint": None})


# The ATOMR stages that answer in ATOMR's answer format.
ATOMR_ANSWER_STAGES = ("search", "relate", "filter", "child_reasoning", "sibling_reasoning", "direct_rag", "closed_book")


def notebook_banner(scripted: bool, model: str | None = None, why: str | None = None) -> str:
    """The first thing a notebook prints: which model answers, and, when it is the scripted one,
    that its figures are not results (its replies are written for the notebook's questions, some
    from the gold answers, so every score shows the pipeline working, not a method's quality)."""
    if not scripted:
        return f"model: {model}"
    why = why or ("ATOMGRAPH_NOTEBOOK_SCRIPTED=1" if _env_value("ATOMGRAPH_NOTEBOOK_SCRIPTED") == "1"
                  else "no chat model is configured")
    return (
        f"NOT RESULTS — scripted model ({why}).\n"
        "A ScriptedChatModel (atomgraph.testing) plays every role with fixed replies written for these questions, "
        "some from their gold answers:\nevery answer, F1 and cost below shows the pipeline at work, not a method's "
        "quality.\nFor results set ATOMGRAPH_MODEL (ATOMGRAPH_MODEL=local runs the bundled Gemma-3-270M in process; "
        "or an OpenAI-compatible model) and rerun."
    )


# --- KAR³ scripts -----------------------------------------------------------------------------
# Scripted KAR³ models, for tests, notebooks and benchmarks without an LLM.
#
# The scripted atomizer turns each sentence of a chunk into an atomic question; the scripted
# proposer answers from a per-question plan (one list of sub-questions per round, then
# an empty list); the selector picks a fixed candidate; the answerer replies in KAR³'s JSON.
#
# >>> model = kar3_scripted_model({"Where did X's advisor die?": [["Who was X's advisor?"], ["Where did Y die?"]]},
# ...                             answer="Munich")

_PASSAGE = re.compile(r"## Content\n(.*?)\n\n## Your questions:", re.S)
_QUESTION = re.compile(r"## Question\n(.*?)(?:\n\n|$)", re.S)
_GATHERED = re.compile(r"## Knowledge we already have\n(.*?)\n\n## ", re.S)


def passage_of(prompt: str) -> tuple[str, str]:
    """(title, text) of the chunk in an atomize prompt (``Title: <title>. Content: <text>``)."""
    m = _PASSAGE.search(prompt)
    body = m.group(1) if m else prompt
    body = body.removeprefix("<evidence>\n").removesuffix("\n</evidence>")  # the chunk is fenced as data
    if body.startswith("Title: "):
        title, sep, text = body[len("Title: "):].partition(". Content: ")
        if sep:
            return title, text
    return "", body


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.strip().split()) >= 3]


def sentence_atoms(prompt: str) -> str:
    """An atomizer reply: each sentence of the chunk as a question (titled where it lacks the title)."""
    title, text = passage_of(prompt)
    out = []
    for s in sentences(text) or [text]:
        q = s.rstrip(".!?") + "?"
        out.append(q if not title or title.split()[-1] in q else f"{title}: {q}")
    return "\n".join(out)


def synthetic_atoms(title: str, text: str, n: int = 10) -> list[str]:
    """``n`` atomic questions for a chunk without a model (for sizing benchmarks): its
    sentences as questions, then windows of its words."""
    words = text.split()
    out = [s.rstrip(".!?") + "?" for s in sentences(text)]
    i = 0
    while len(out) < n and words:
        out.append(f"What about {title}: {' '.join(words[i:i + 8])}?")
        i = (i + 5) % max(1, len(words))
    return list(dict.fromkeys(out))[:n]


def chunks_in_context(prompt: str) -> int:
    """How many chosen chunks a propose/select/answer prompt shows."""
    m = _GATHERED.search(prompt)
    return 0 if not m or m.group(1).startswith("(none yet)") else len(re.findall(r"^Title: .*?\. Content: ", m.group(1), re.M))


def question_of(prompt: str) -> str:
    m = list(_QUESTION.finditer(prompt + "\n\n"))
    return m[-1].group(1).strip() if m else ""


def kar3_scripted_model(
    plans: dict[str, list[list[str]]] | Callable[[str], str] | None = None,
    answer: str | Callable[[str], str] = "unknown",
    select: str | Callable[[str], str] = '{"thinking": "the first candidate asks what is missing", "question_idx": 1}',
    select_paragraph: str | Callable[[str], str] = '{"thinking": "the first paragraph", "paragraph_idx": 1}',
    atomize: str | Callable[[str], str] = sentence_atoms,
    latency_s: float = 0.0,
    **stages: Any,
) -> ScriptedChatModel:
    """A model for every KAR³ stage. ``plans`` maps a question to its proposals per round
    (round t uses entry t-1; past the end: an empty list, i.e. stop), or is the proposer's
    reply as a function of the prompt. ``answer``: the answer text (or a function of the prompt)."""

    def propose(prompt: str) -> str:
        if callable(plans):
            return plans(prompt)
        q = question_of(prompt)
        rounds = (plans or {}).get(q)
        if rounds is None:
            rounds = next((v for k, v in (plans or {}).items() if k in prompt), [[q]])
        t = chunks_in_context(prompt)
        subs = rounds[t] if t < len(rounds) else []
        return json.dumps({"thinking": f"{t} chunk(s) known", "sub_questions": subs})

    def answering(prompt: str) -> str:
        text = answer(prompt) if callable(answer) else answer
        return json.dumps({"rationale": "from the passages", "answer": text})

    script: dict[str, Any] = {"atomize": atomize, "propose": propose, "select": select,
                              "select_paragraph": select_paragraph, "answer": answering}
    script.update(stages)
    return ScriptedChatModel(stages=script, latency_s=latency_s)
