"""A loopback OpenAI chat-completions server speaking the real SSE stream
format: scripted answers, every request body recorded, and the checks the real
API makes (a 400 for a tool message that answers no call, or a call left
unanswered), so each test checks the conversation shape for free."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Deque, Dict, List, Optional, Tuple

#: How many pieces a text or an argument string is streamed in.
PIECES = 3

Item = Tuple[str, ...]


def text(content: str) -> Item:
    """Answer text, streamed as ``delta.content`` chunks."""
    return ("text", content)


def tool_call(name: str, args: Dict[str, Any], id: Optional[str] = None) -> Item:
    """A tool call, streamed as ``delta.tool_calls`` chunks told apart by index."""
    return ("tool_call", id or f"call_{name}_{time.monotonic_ns()}", name, json.dumps(args))


def _pieces(s: str, n: int = PIECES) -> List[str]:
    if not s:
        return [""]
    size = max(1, -(-len(s) // n))
    return [s[i : i + size] for i in range(0, len(s), size)]


def _chunk(delta: Dict[str, Any], finish: Optional[str] = None) -> Dict[str, Any]:
    return {
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-mock",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def stream(items: List[Item]) -> List[Dict[str, Any]]:
    """The chunks of one streamed completion (without ``[DONE]``)."""
    chunks = [_chunk({"role": "assistant", "content": ""})]
    index = 0
    for item in items:
        if item[0] == "text":
            chunks += [_chunk({"content": piece}) for piece in _pieces(item[1])]
        else:
            _, call_id, name, args = item
            chunks.append(
                _chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": ""},
                            }
                        ]
                    }
                )
            )
            for piece in _pieces(args):
                chunks.append(_chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
            index += 1
    chunks.append(_chunk({}, "tool_calls" if index else "stop"))
    chunks.append(
        {
            "id": "chatcmpl-mock",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "gpt-mock",
            "choices": [],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    )
    return chunks


def conversation_problem(body: Dict[str, Any]) -> Optional[str]:
    """What the real API would refuse in this request, if anything."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "missing model"
    if body.get("stream") is not True:
        return "stream must be true"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty array"
    open_calls: List[str] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                return f"messages[{i}]: tool message for unknown call id {call_id!r}"
            open_calls.remove(call_id)
            continue
        if open_calls:
            return f"messages[{i}]: tool calls {open_calls} have no tool message"
        if role == "assistant":
            open_calls = [c["id"] for c in message.get("tool_calls") or []]
    if open_calls:
        return f"tool calls {open_calls} have no tool message"
    for tool in body.get("tools") or []:
        function = tool.get("function") or {}
        if tool.get("type") != "function" or not function.get("name"):
            return f"bad tool {tool!r}"
        if not isinstance(function.get("parameters"), dict):
            return f"tool {function.get('name')}: parameters must be an object"
    return None


class MockOpenAI:
    """Serves ``POST /v1/chat/completions`` on 127.0.0.1 from a queue of scripted answers."""

    def __init__(self) -> None:
        self.requests: List[Dict[str, Any]] = []
        self._answers: Deque[List[Item]] = deque()
        self._cond = threading.Condition()
        mock = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    return self._fail(400, "body is not JSON")
                with mock._cond:
                    mock.requests.append(body)
                    answer = mock._answers.popleft() if mock._answers else [text("mock: nothing scripted")]
                    mock._cond.notify_all()
                if not self.path.endswith("/chat/completions"):
                    return self._fail(404, f"unknown path {self.path}")
                if self.headers.get("authorization") != "Bearer test":
                    return self._fail(401, "bad authorization")
                problem = conversation_problem(body)
                if problem:
                    return self._fail(400, problem)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                for chunk in stream(answer):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _fail(self, status: int, message: str) -> None:
                data = json.dumps(
                    {"error": {"message": f"mock: {message}", "type": "invalid_request_error"}}
                ).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="mock-openai", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def answer(self, *items: Item) -> None:
        """Queue one answer: the next request gets these items."""
        with self._cond:
            self._answers.append(list(items))

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------ inspecting requests

    @staticmethod
    def tool_names(request: Dict[str, Any]) -> List[str]:
        return [t["function"]["name"] for t in request.get("tools") or []]

    @staticmethod
    def tool_spec(request: Dict[str, Any], name: str) -> Dict[str, Any]:
        for tool in request.get("tools") or []:
            if tool["function"]["name"] == name:
                return tool["function"]
        raise AssertionError(f"tool {name!r} not in request tools {MockOpenAI.tool_names(request)}")

    @staticmethod
    def system_prompt(request: Dict[str, Any]) -> str:
        for message in request["messages"]:
            if message.get("role") == "system":
                content = message.get("content")
                if isinstance(content, list):
                    return "".join(p.get("text", "") for p in content)
                return content or ""
        return ""

    @staticmethod
    def tool_message(request: Dict[str, Any], call_id: str) -> str:
        for message in request["messages"]:
            if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
                content = message.get("content")
                if isinstance(content, list):
                    return "".join(p.get("text", "") for p in content)
                return content or ""
        raise AssertionError(f"no tool message for {call_id} in {json.dumps(request['messages'])[:2000]}")
