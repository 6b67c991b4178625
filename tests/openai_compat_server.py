"""An OpenAI-compatible chat server, run as its own process on 127.0.0.1, that behaves like a
small local model behind an older vLLM / llama.cpp server:

- it reads ``max_tokens`` and ignores ``max_completion_tokens`` (what ChatOpenAI sends);
- after its answer it rambles on (an invented next example, over and over) until the cap, or
  ``RUNAWAY_TOKENS`` tokens without one — as a small model did until its context filled.

It answers by stage: the request's system message is compared with each stage's own system
prompt (the template's first message; ATOMR's stages by default, every method's with
``--all-stages``), so the server needs no prompt-wording rules. A token is a
whitespace-separated word here. Like real servers it speaks HTTP/1.1 and keeps connections
alive, so a client's connection pool reuses them from call to call.

    python tests/openai_compat_server.py SCRIPT.json [--all-stages] [--latency-ms MS] [--exact]

It prints its port, then serves. ``--latency-ms``: every reply waits MS milliseconds (a model's
fixed latency, for throughput benchmarks); ``--exact``: a reply is the script's text alone (no
rambling to the cap) and no request is logged.

SCRIPT.json: ``{"stage name": reply, ...}`` with ``"plan"`` mapping to the planner's reply;
``"stage name.json"`` holds the JSON value a structured-output (json_schema) request gets;
``"*"`` the reply to a request of any other stage. A reply ``{"first_line_after": MARK}``
answers with the first line after ``MARK`` in the request's last message (ARM's alignment
picks one of the options it lists); with ``"format": TEXT`` it answers TEXT with ``{line}``
replaced by that line (escaped as inside a JSON string: a reply that echoes the question) and
``{n}`` by the request's number (a reply no other request gets). A request for the model ``down`` gets no reply: the
server drops the connection, as a crashed or unreachable model server would.
Every request body is appended to ``SCRIPT.json.requests.jsonl``.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

RUNAWAY_TOKENS = 7000
RAMBLE = "Question: what else could be asked here? Answer: let me think about this again."


def stage_of(system: str, stages: dict | None = None) -> str | None:
    """The stage (of ``stages``, default ATOMR's) whose prompt ``system`` (every message's text) is:
    every literal part of the stage's templates (the text between variables) appears in it, in order;
    the stage with the most such text wins (stages may share an opening)."""
    import re

    if stages is None:
        from atomgraph.prompts.atomr.stages import STAGES as stages
    best, best_len = None, 0
    for name, stage in stages.items():
        template = "\n".join(getattr(getattr(m, "prompt", None), "template", "") for m in stage.prompt.messages)
        parts = [p.replace("{{", "{").replace("}}", "}") for p in re.split(r"(?<!\{)\{[A-Za-z_][A-Za-z0-9_]*\}(?!\})", template)]
        parts = [p for p in parts if p.strip()]
        pos, ok = 0, bool(parts)
        for part in parts:
            at = system.find(part, pos)
            if at < 0:
                ok = False
                break
            pos = at + len(part)
        length = sum(len(p) for p in parts)
        if ok and length > best_len:
            best, best_len = name, length
    return best


def all_stages() -> dict:
    """Every method's prompt stages by name (ATOMR, the baselines, KAR³, ARM, the compared methods)."""
    import importlib

    from atomgraph.prompts.stage import Stage

    found: dict = {}
    for module in ("atomr.stages", "baselines", "kar3.stages", "kar3.atomize", "arm", "compare.iter_retgen",
                   "compare.self_ask", "compare.decomposed_rag", "compare.ircot", "compare.react"):
        for value in vars(importlib.import_module(f"atomgraph.prompts.{module}")).values():
            for stage in (value.values() if isinstance(value, dict) else [value]):
                if isinstance(stage, Stage):
                    found[stage.name] = stage
    return found


def send_json(handler: BaseHTTPRequestHandler, payload: dict) -> None:
    """Answer a request with ``payload`` as JSON (status 200)."""
    data = json.dumps(payload).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def main() -> None:
    script_path = Path(sys.argv[1])
    script = json.loads(script_path.read_text(encoding="utf-8"))
    log = script_path.with_name(script_path.name + ".requests.jsonl")
    stages = all_stages() if "--all-stages" in sys.argv[2:] else None
    flags = sys.argv[2:]
    latency_s = float(flags[flags.index("--latency-ms") + 1]) / 1000 if "--latency-ms" in flags else 0.0
    exact = "--exact" in flags
    import functools
    import time

    stage_named = functools.lru_cache(maxsize=4096)(lambda system: stage_of(system, stages))
    import itertools

    numbers = itertools.count(1)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers do

        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if latency_s:
                time.sleep(latency_s)
            if not exact:
                with log.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(body) + "\n")
            if not self.path.endswith("/chat/completions"):
                self.send_error(404)
                return
            if body.get("model") == "down":  # a server that dies mid-request: the connection drops
                self.close_connection = True
                return
            system = "\n".join(str(m.get("content") or "") for m in body["messages"])
            # A JSON-schema request (structured output) is answered from "<stage>.json" (no rambling:
            # the server's grammar ends the reply with the JSON value).
            structured = (body.get("response_format") or {}).get("type") == "json_schema"
            key = (stage_named(system) or "") + (".json" if structured else "")
            reply = script.get(key, script.get("*", "I cannot tell which task this is."))
            if isinstance(reply, dict) and "first_line_after" in reply:
                last = str(body["messages"][-1].get("content") or "")
                after = last.split(reply["first_line_after"], 1)[-1].strip().splitlines()
                line = after[0].strip() if after else ""
                # "format": the reply with {line} replaced by the line, escaped as in a JSON string, and {n}
                # by the number of this request (a reply no other request gets)
                reply = (reply["format"].replace("{line}", json.dumps(line)[1:-1]).replace("{n}", str(next(numbers)))
                         if "format" in reply else line)
            if structured:
                self._send(body, json.dumps(reply), len(json.dumps(reply).split()), "stop")
                return
            reply = str(reply)
            if exact:
                self._send(body, reply, len(reply.split()), "stop")
                return
            words = reply.split(" ")
            while len(" ".join(words).split()) < RUNAWAY_TOKENS:
                words += RAMBLE.split(" ")
            cap = body.get("max_tokens")  # max_completion_tokens is not read, on purpose
            limit = min(int(cap), RUNAWAY_TOKENS) if cap else RUNAWAY_TOKENS
            out: list[str] = []
            count = 0
            for w in words:
                n = len(w.split())
                if count + n > limit:
                    break
                out.append(w)
                count += n
            self._send(body, " ".join(out), count, "length" if count >= limit else "stop")

        def _send(self, body: dict, text: str, count: int, finish: str) -> None:
            send_json(self, {
                "id": "chatcmpl-local", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": count, "total_tokens": 100 + count},
            })

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):  # a client dropping a kept-alive connection
            if not isinstance(sys.exc_info()[1], ConnectionError):
                super().handle_error(request, client_address)

    server = Server(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
