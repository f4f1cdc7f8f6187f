"""Loopback stand-ins for the model APIs the real clients talk to, recording every request.

One HTTP server on 127.0.0.1 answers all three wires, told apart by path:

- Anthropic Messages (Claude Code): ``POST /v1/messages`` (SSE when ``stream`` is set, else
  JSON), ``/v1/messages/count_tokens``, ``GET /v1/models``; anything else a 404;
- OpenAI Responses (Codex): ``POST /v1/responses`` (SSE), ``GET /v1/models``;
- Gemini (Gemini CLI): ``POST /v1beta/models/M:streamGenerateContent`` (SSE),
  ``:generateContent`` and ``:countTokens``.

Every answer is short text (``MOCK-REPLY``), except that a request offering a tool whose
name ends with ``tool`` (``memory_search``), carrying ``trigger`` somewhere in its body and
no tool result yet, is answered with a call of that tool (``tool_args``): the client runs
it in its real session and sends the result back in the next request, which gets text.
Where Claude Code offers MCP tools only through ``ToolSearch``, the first call is a
ToolSearch for it. Gemini's own side questions (routing, next speaker) get JSON that fits
their ``responseJsonSchema``.
Each request is kept (path, a few headers, the body parsed as JSON when it is) in
``Mock.requests`` and appended to ``log_path`` as one JSON line.

Standard library only; the server runs in a daemon thread of the harness.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPLY = "MOCK-REPLY: noted."
CALL_ID = "mockcall01"
SEARCH_ID = "mocksearch01"
HEADERS_KEPT = ("user-agent", "content-type", "x-api-key", "authorization", "x-goog-api-key",
                "anthropic-beta", "originator", "session_id", "x-stainless-lang")


def _tool_names(body: dict[str, Any]) -> list[str]:
    """Every tool name the request offers, whatever the wire (Anthropic ``tools``, OpenAI
    ``tools`` with Codex's namespaces, Gemini ``functionDeclarations``)."""
    names: list[str] = []

    def walk(tools: Any, prefix: str = "") -> None:
        for t in tools if isinstance(tools, list) else []:
            if not isinstance(t, dict):
                continue
            if isinstance(t.get("functionDeclarations"), list):
                walk(t["functionDeclarations"])
                continue
            fn = t.get("function") if isinstance(t.get("function"), dict) else t
            name = fn.get("name")
            if isinstance(t.get("tools"), list):  # a Codex namespace
                walk(t["tools"], f"{name}." if name else "")
            elif isinstance(name, str):
                names.append(prefix + name)

    walk(body.get("tools"))
    return names


class Mock:
    """The server and what it saw. ``with Mock(...) as m: m.url``."""

    def __init__(self, log_path: Path | None = None, *, tool: str = "memory_search",
                 trigger: str | None = None, tool_args: dict[str, Any] | None = None) -> None:
        self.log_path = log_path
        self.tool = tool
        self.trigger = trigger
        self.tool_args = tool_args or {}
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None
        self.url = ""

    # --- what to answer ------------------------------------------------------------------------

    def wanted_tool(self, body: dict[str, Any], raw: str) -> tuple[str, dict[str, Any], str] | None:
        """(tool name, arguments, call id) to answer this request with, or None for text.
        Claude Code may offer MCP tools only through ``ToolSearch`` (deferred, or the server
        still connecting): then the call is a ToolSearch for the tool first, as a model would."""
        if not self.trigger or self.trigger not in raw or CALL_ID in raw:
            return None
        if '"functionResponse"' in raw:  # Gemini's tool results carry no id of ours
            return None
        names = _tool_names(body)
        found = next((n for n in names if n.rsplit(".", 1)[-1] == self.tool
                      or n.endswith("__" + self.tool) or n.endswith("_" + self.tool)), None)
        if found:
            return found, self.tool_args, CALL_ID
        if "ToolSearch" in names and SEARCH_ID not in raw:
            return "ToolSearch", {"query": f"+memrepo {self.tool}", "max_results": 3}, SEARCH_ID
        return None

    def record(self, entry: dict[str, Any]) -> None:
        with self.lock:
            entry["n"] = len(self.requests)
            self.requests.append(entry)
            if self.log_path is not None:
                with open(self.log_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(entry, default=str) + "\n")

    # --- lifecycle ------------------------------------------------------------------------------

    def __enter__(self) -> Mock:
        mock = self

        class Handler(_Handler):
            pass

        Handler.mock = mock
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, name="mock-api", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def since(self, n: int) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.requests[n:])


class _Handler(BaseHTTPRequestHandler):
    mock: Mock
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    # --- plumbing ---------------------------------------------------------------------------------

    def _entry(self, raw: bytes) -> tuple[dict[str, Any], Any, str]:
        text = raw.decode("utf-8", "replace")
        try:
            body: Any = json.loads(text) if text else None
        except ValueError:
            body = None
        entry = {"t": time.time(), "method": self.command, "path": self.path,
                 "headers": {k: self.headers[k] for k in HEADERS_KEPT if self.headers[k]},
                 "body": body if body is not None else text[:2000]}
        return entry, body, text

    def _send(self, status: int, payload: Any = None, ctype: str = "application/json") -> None:
        data = b"" if payload is None else (payload if isinstance(payload, bytes)
                                            else json.dumps(payload).encode())
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.wfile.flush()

    def _sse(self, events: list[tuple[str | None, dict[str, Any]]]) -> None:
        chunks = []
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            chunks.append(f"{head}data: {json.dumps(data)}\n\n".encode())
        self._send(200, b"".join(chunks), "text/event-stream")

    def _read(self) -> bytes:
        n = int(self.headers.get("content-length") or 0)
        return self.rfile.read(n) if n else b""

    # --- verbs ------------------------------------------------------------------------------------

    def do_HEAD(self) -> None:
        self.mock.record({"t": time.time(), "method": "HEAD", "path": self.path,
                          "headers": {}, "body": None, "answer": "200"})
        self._send(200)

    def do_GET(self) -> None:
        entry, _, _ = self._entry(b"")
        path = urlsplit(self.path).path
        if path.endswith("/models"):
            entry["answer"] = "models"
            self.mock.record(entry)
            self._send(200, {"data": [], "models": [], "has_more": False, "object": "list"})
            return
        entry["answer"] = "404"
        self.mock.record(entry)
        self._send(404, {"error": {"type": "not_found_error", "message": "mock"}})

    def do_POST(self) -> None:
        entry, body, raw = self._entry(self._read())
        path = urlsplit(self.path).path
        body = body if isinstance(body, dict) else {}
        call = self.mock.wanted_tool(body, raw)
        entry["answer"] = f"tool:{call[0]}" if call else "text"
        if path.endswith("/messages/count_tokens"):
            entry["answer"] = "count"
            self._send(200, {"input_tokens": max(1, len(raw) // 4)})
        elif path.endswith("/messages"):
            self._anthropic(body, call)
        elif path.endswith("/responses"):
            self._responses(body, call)
        elif path.endswith("/chat/completions"):
            entry["answer"] = "text"
            self._chat(body)
        elif ":countTokens" in path:
            entry["answer"] = "count"
            self._send(200, {"totalTokens": max(1, len(raw) // 4)})
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            self._gemini(path, body, call)
        else:
            entry["answer"] = "404"
            self._send(404, {"error": {"type": "not_found_error", "message": "mock"}})
        entry["t_done"] = time.time()
        self.mock.record(entry)

    # --- Anthropic Messages -------------------------------------------------------------------

    def _anthropic(self, body: dict[str, Any], call: tuple[str, dict[str, Any], str] | None
                   ) -> None:
        model = body.get("model") or "claude-mock"
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        if call:
            block = {"type": "tool_use", "id": f"toolu_{call[2]}", "name": call[0], "input": {}}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": REPLY}
            stop = "end_turn"
        if not body.get("stream"):
            full = dict(block, input=call[1]) if call else block
            self._send(200, {"id": "msg_mock", "type": "message", "role": "assistant",
                             "model": model, "content": [full], "stop_reason": stop,
                             "stop_sequence": None, "usage": usage})
            return
        start = {"id": "msg_mock", "type": "message", "role": "assistant", "model": model,
                 "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}
        if call:
            delta = {"type": "input_json_delta", "partial_json": json.dumps(call[1])}
        else:
            delta = {"type": "text_delta", "text": REPLY}
            block = {"type": "text", "text": ""}
        self._sse([
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"}),
        ])

    # --- OpenAI Responses and chat completions -----------------------------------------------

    def _responses(self, body: dict[str, Any], call: tuple[str, dict[str, Any], str] | None
                   ) -> None:
        if call:
            namespace, _, name = call[0].rpartition(".")
            item: dict[str, Any] = {"type": "function_call", "id": "fc_mock",
                                    "call_id": f"call_{call[2]}", "name": name,
                                    "arguments": json.dumps(call[1]),
                                    "status": "completed"}
            if namespace:
                item["namespace"] = namespace
        else:
            item = {"type": "message", "role": "assistant", "id": "msg_mock",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": REPLY, "annotations": []}]}
        rid = "resp_mock"
        base = {"id": rid, "object": "response", "created_at": int(time.time()),
                "model": body.get("model") or "gpt-mock", "status": "in_progress", "output": []}
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 15}
        done = dict(base, status="completed", output=[item], usage=usage)
        self._sse([
            ("response.created", {"type": "response.created", "response": base}),
            ("response.output_item.added", {"type": "response.output_item.added",
                                            "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done",
                                           "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": done}),
        ])

    def _chat(self, body: dict[str, Any]) -> None:
        msg = {"role": "assistant", "content": REPLY}
        self._send(200, {"id": "chatcmpl-mock", "object": "chat.completion",
                         "created": int(time.time()), "model": body.get("model") or "gpt-mock",
                         "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                   "total_tokens": 15}})

    # --- Gemini --------------------------------------------------------------------------------

    def _gemini(self, path: str, body: dict[str, Any],
                call: tuple[str, dict[str, Any], str] | None) -> None:
        model = path.rsplit("/", 1)[-1].split(":", 1)[0]
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if call:
            part: dict[str, Any] = {"functionCall": {"name": call[0], "args": call[1],
                                                     "id": call[2]}}
        elif schema:  # the CLI's own side questions (routing, next speaker) want JSON
            part = {"text": json.dumps(fill(schema))}
        else:
            part = {"text": REPLY}
        chunk = {"candidates": [{"content": {"role": "model", "parts": [part]},
                                 "finishReason": "STOP", "index": 0}],
                 "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                                   "totalTokenCount": 15},
                 "modelVersion": model}
        if ":streamGenerateContent" in path:
            self._sse([(None, chunk)])
        else:
            self._send(200, chunk)


def fill(schema: Any) -> Any:
    """A value that satisfies a (Gemini-style, OpenAPI subset) JSON schema: its first enum
    value, "user" for a speaker, 1 for numbers, every property filled."""
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return "user" if "user" in schema["enum"] else schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {k: fill(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return max(1, int(schema.get("minimum", 1)))
    if kind == "boolean":
        return False
    return "mock"


def texts(requests: list[dict[str, Any]]) -> list[str]:
    """Each request's body as one string, for substring checks."""
    return [json.dumps(r.get("body"), ensure_ascii=False) if not isinstance(r.get("body"), str)
            else r["body"] for r in requests]
