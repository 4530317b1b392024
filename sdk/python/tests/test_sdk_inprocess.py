"""The SDK driven in-process by a scripted host over pipes, for what the real
zot never does: malformed frames, frames before hello_ack, concurrent tool
calls, oversized replies, panel keys, and one frame of every kind checked
against the protocol schema. Plus the decorators' argument checks."""

from __future__ import annotations

import json
import os
import queue
import threading
from typing import Any, Dict, List, Optional

import pytest
from schema_check import FrameChecker, load_ext_schema

from zot_ext import (
    MAX_FRAME_BYTES,
    Extension,
    ImageBlock,
    TextBlock,
    ToolResult,
    allow,
    block,
    display,
    error,
    insert,
    noop,
    open_panel,
    prompt,
    replace_text,
    rewrite,
)

#: Deadline of every wait on the extension.
TIMEOUT = 5.0

HELLO_ACK = {
    "type": "hello_ack",
    "protocol_version": 1,
    "zot_version": "9.9.9",
    "provider": "openai",
    "model": "gpt-test",
    "cwd": "/project",
    "extension_dir": "/ext",
    "data_dir": "/ext",
}


class FakeHost:
    """Runs ``ext.run`` in a thread with pipes for stdin and stdout."""

    def __init__(self, ext: Extension) -> None:
        to_ext_r, to_ext_w = os.pipe()
        from_ext_r, from_ext_w = os.pipe()
        self._ext_in = os.fdopen(to_ext_r, "rb")
        self._ext_out = os.fdopen(from_ext_w, "wb")
        self._to_ext = os.fdopen(to_ext_w, "wb")
        self._from_ext = os.fdopen(from_ext_r, "rb")
        self.frames: "queue.Queue[Optional[Dict[str, Any]]]" = queue.Queue()
        self.raw_lines: List[bytes] = []
        self.ext = ext
        self._runner = threading.Thread(target=self._run, daemon=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._runner.start()
        self._reader.start()

    def _run(self) -> None:
        try:
            self.ext.run(stdin=self._ext_in, stdout=self._ext_out)
        finally:
            self._ext_out.close()

    def _read(self) -> None:
        for line in self._from_ext:
            self.raw_lines.append(line)
            self.frames.put(json.loads(line))
        self.frames.put(None)

    def send(self, frame: Any) -> None:
        data = frame if isinstance(frame, bytes) else (json.dumps(frame) + "\n").encode()
        self._to_ext.write(data)
        self._to_ext.flush()

    def recv(self) -> Dict[str, Any]:
        try:
            frame = self.frames.get(timeout=TIMEOUT)
        except queue.Empty:
            raise AssertionError("no frame from the extension in time") from None
        assert frame is not None, "the extension closed stdout"
        return frame

    def handshake(self) -> List[Dict[str, Any]]:
        """hello, hello_ack, then every frame up to and including ready."""
        frames = [self.recv()]
        assert frames[0]["type"] == "hello"
        self.send(HELLO_ACK)
        while frames[-1]["type"] != "ready":
            frames.append(self.recv())
        return frames

    def close(self) -> None:
        """EOF on the extension's stdin; run() must return."""
        self._to_ext.close()
        self._runner.join(TIMEOUT)
        assert not self._runner.is_alive(), "run() did not return at EOF"
        self._reader.join(TIMEOUT)


def test_malformed_and_unknown_frames_are_logged_and_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    ext = Extension("robust")

    @ext.command("ping")
    def ping(args: str) -> Any:
        return display("pong " + args)

    host = FakeHost(ext)
    assert host.recv()["type"] == "hello"
    host.send({"type": "command_invoked", "id": "early", "name": "ping"})  # before hello_ack
    host.send(HELLO_ACK)
    assert [host.recv()["type"] for _ in range(2)] == ["register_command", "ready"]
    host.send(b"{not json\n")
    host.send(b"\n")
    host.send(b"[1, 2]\n")
    host.send(b"\xff\xfe\n")
    host.send({"type": "teleport"})
    host.send({"type": "command_invoked", "id": "1", "name": "ping", "args": "x"})
    assert host.recv() == {"type": "command_response", "id": "1", "action": "display", "display": "pong x"}
    host.send({"type": "shutdown"})
    assert host.recv() == {"type": "shutdown_ack"}
    host.close()
    err = capsys.readouterr().err
    assert "ignoring 'command_invoked' before hello_ack" in err
    assert "skipping malformed host frame" in err and "{not json" in err
    assert 'skipping host frame without a "type": [1, 2]' in err
    assert "not UTF-8" in err
    assert "skipping unknown host frame type 'teleport'" in err
    # Every line on stdout was a whole protocol frame (the reader parsed each).
    assert all(line.endswith(b"\n") for line in host.raw_lines)


def test_eof_before_hello_ack_returns(capsys: pytest.CaptureFixture[str]) -> None:
    host = FakeHost(Extension("early"))
    assert host.recv()["type"] == "hello"
    host.close()
    assert "the host went away before hello_ack" in capsys.readouterr().err


def test_tool_calls_run_concurrently_and_events_in_order() -> None:
    ext = Extension("conc")
    second_done = threading.Event()
    seen: List[int] = []

    @ext.tool("slow")
    def slow(args: Any) -> str:
        # Finishes only once the later call has finished: needs real concurrency.
        return "slow saw fast" if second_done.wait(TIMEOUT) else "serialised"

    @ext.tool("fast")
    def fast(args: Any) -> str:
        second_done.set()
        return "fast"

    @ext.on("turn_start")
    def record(event: Any) -> None:
        seen.append(event.step)
        if event.step == 1:
            second_done.wait(TIMEOUT)  # a slow event handler delays later events only

    host = FakeHost(ext)
    host.handshake()
    host.send({"type": "event", "event": "turn_start", "step": 1})
    host.send({"type": "tool_call", "id": "a", "name": "slow", "args": {}})
    host.send({"type": "tool_call", "id": "b", "name": "fast", "args": {}})
    for step in range(2, 6):
        host.send({"type": "event", "event": "turn_start", "step": step})
    results = {f["id"]: f for f in (host.recv(), host.recv())}
    assert results["b"]["content"] == [{"type": "text", "text": "fast"}]
    assert results["a"]["content"] == [{"type": "text", "text": "slow saw fast"}]
    host.send({"type": "shutdown"})
    assert host.recv() == {"type": "shutdown_ack"}
    host.close()
    assert seen == [1, 2, 3, 4, 5]


def test_oversized_replies_become_errors() -> None:
    ext = Extension("big")

    @ext.tool("huge")
    def huge(args: Any) -> str:
        return "x" * MAX_FRAME_BYTES

    @ext.command("huge")
    def huge_command(args: str) -> Any:
        return display("y" * MAX_FRAME_BYTES)

    host = FakeHost(ext)
    host.handshake()
    host.send({"type": "tool_call", "id": "t", "name": "huge", "args": {}})
    reply = host.recv()
    assert reply["is_error"] is True and "at most 4194304" in reply["content"][0]["text"]
    host.send({"type": "command_invoked", "id": "c", "name": "huge"})
    reply = host.recv()
    assert reply["action"] == "noop" and "at most 4194304" in reply["error"]
    host.close()


def test_panels_keys_and_close_by_id() -> None:
    ext = Extension("panels")
    got: List[str] = []

    @ext.command("todo")
    def todo(args: str) -> Any:
        return open_panel("todo", "Todos", ["a"], "esc close")

    @ext.on_panel_key("todo")
    def key(k: Any) -> None:
        got.append(f"todo:{k.key}:{k.text}")
        ext.render_panel("todo", "Todos", ["a", k.text or k.key], "esc close")

    @ext.on_panel_key()
    def any_key(k: Any) -> None:
        got.append(f"other:{k.panel_id}:{k.key}")
        ext.close_panel(k.panel_id)

    @ext.on_panel_close("todo")
    def closed(panel_id: str) -> None:
        got.append("closed:" + panel_id)

    host = FakeHost(ext)
    host.handshake()
    host.send({"type": "panel_key", "panel_id": "todo", "key": "rune", "text": "x"})
    assert host.recv() == {
        "type": "panel_render",
        "panel_id": "todo",
        "title": "Todos",
        "lines": ["a", "x"],
        "footer": "esc close",
    }
    host.send({"type": "panel_key", "panel_id": "todo", "key": "down"})
    assert host.recv()["lines"] == ["a", "down"]
    host.send({"type": "panel_key", "panel_id": "elsewhere", "key": "enter"})
    assert host.recv() == {"type": "panel_close", "panel_id": "elsewhere"}
    host.send({"type": "panel_close", "panel_id": "todo"})
    host.send({"type": "shutdown"})
    assert host.recv() == {"type": "shutdown_ack"}
    host.close()
    assert got == ["todo:rune:x", "todo:down:None", "other:elsewhere:enter", "closed:todo"]


def test_decisions_send_only_what_applies(capsys: pytest.CaptureFixture[str]) -> None:
    ext = Extension("decide")

    @ext.intercept_tool_call
    def tool(call: Any) -> Any:
        if call.name == "same":
            return rewrite(call.args)  # identical args: nothing to rewrite
        return replace_text("wrong kind")

    @ext.intercept_assistant_message
    def message(text: str) -> Any:
        return text if text == "keep" else text.upper()

    @ext.intercept_turn_start
    def turn(step: int) -> Any:
        return allow("fine") if step == 1 else block("stop")

    host = FakeHost(ext)
    host.handshake()
    host.send(
        {
            "type": "event_intercept",
            "id": "1",
            "event": "tool_call",
            "tool_id": "t",
            "tool_name": "same",
            "tool_args": {"a": 1},
        }
    )
    assert host.recv() == {"type": "event_intercept_response", "id": "1"}
    host.send(
        {
            "type": "event_intercept",
            "id": "2",
            "event": "tool_call",
            "tool_id": "t",
            "tool_name": "x",
            "tool_args": {},
        }
    )
    assert host.recv() == {"type": "event_intercept_response", "id": "2"}
    host.send({"type": "event_intercept", "id": "3", "event": "assistant_message", "text": "keep"})
    assert host.recv() == {"type": "event_intercept_response", "id": "3"}
    host.send({"type": "event_intercept", "id": "4", "event": "assistant_message", "text": "shout"})
    assert host.recv() == {"type": "event_intercept_response", "id": "4", "replace_text": "SHOUT"}
    host.send({"type": "event_intercept", "id": "5", "event": "turn_start", "step": 1})
    assert host.recv() == {"type": "event_intercept_response", "id": "5", "reason": "fine"}
    host.send({"type": "event_intercept", "id": "6", "event": "turn_start", "step": 2})
    assert host.recv() == {"type": "event_intercept_response", "id": "6", "block": True, "reason": "stop"}
    # An intercept nobody handles (never subscribed) is a bare allow.
    host.send({"type": "event_intercept", "id": "7", "event": "before_agent_start", "system_prompt": "p"})
    assert host.recv() == {"type": "event_intercept_response", "id": "7"}
    host.close()
    assert "replace_text only applies to assistant_message" in capsys.readouterr().err


def test_bare_decorators_take_name_and_docstring() -> None:
    ext = Extension("bare")

    @ext.command
    def greet(args: str) -> str:
        """Say hello.

        Only the first docstring line is the description."""
        return "hello"

    @ext.tool
    def lookup(args: Any) -> str:
        return "found"

    host = FakeHost(ext)
    assert host.handshake()[1:] == [
        {"type": "register_command", "name": "greet", "description": "Say hello."},
        {"type": "register_tool", "name": "lookup", "schema": {"type": "object", "properties": {}}},
        {"type": "ready"},
    ]
    host.send({"type": "tool_call", "id": "1", "name": "lookup", "args": {}})
    assert host.recv()["content"] == [{"type": "text", "text": "found"}]
    host.close()
    with pytest.raises(TypeError, match="name the events"):
        ext.on(greet)  # type: ignore[arg-type]


def test_registration_errors_are_clear() -> None:
    ext = Extension("checks")

    @ext.command("dup")
    def first(args: str) -> None:
        return None

    with pytest.raises(ValueError, match="already registered"):
        ext.command("DUP")(first)
    for bad in ("/slash", "two words", "dot.ted", ""):
        with pytest.raises(ValueError, match="command name"):
            ext.command(bad)(first)
    for bad in ("has space", "x" * 65, "dot.ted", "", "new\n"):
        with pytest.raises(ValueError, match="tool name"):
            ext.tool(bad)(first)
    with pytest.raises(ValueError, match="schema must be a dict"):
        ext.tool("t", schema=[])(first)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown event 'turn_started'"):
        ext.on("turn_started")
    ext.intercept_turn_start(first)
    with pytest.raises(ValueError, match="already registered"):
        ext.intercept_turn_start(first)
    with pytest.raises(RuntimeError, match="not connected"):
        ext.notify("info", "too early")
    with pytest.raises(ValueError, match="not one of"):
        ext.notify("loud", "x")
    with pytest.raises(ValueError, match="needs a name"):
        Extension("")


def test_every_frame_kind_matches_the_schema() -> None:
    schema = load_ext_schema()
    if schema is None:
        pytest.skip("schema/ext-frame.schema.json is not checked in yet")
    ext = Extension("every", "1.0.0")
    replies: Dict[str, Any] = {
        "prompt": prompt("p"),
        "insert": insert("i"),
        "display": display("d"),
        "panel": open_panel("id", "T", ["l1", "l2"], "f"),
        "bare-panel": open_panel("id"),
        "noop": noop(),
        "error": error("e"),
    }
    results: Dict[str, Any] = {
        "text": "plain",
        "error": ToolResult.error("bad"),
        "blocks": [TextBlock("t"), ImageBlock.from_bytes("image/png", b"\x89PNG")],
        "activate": ToolResult.text("on", activate_tools=["later"]),
        "empty": None,
        "json": {"a": [1, 2]},
    }
    for name, reply in replies.items():
        ext.command(name)(lambda args, r=reply: r)
    for name, result in results.items():
        ext.tool("t-" + name, "d", {"type": "object", "properties": {"x": {"type": "integer"}}})(
            lambda args, r=result: r
        )
    ext.tool("later", deferred=True)(lambda args: "")
    ext.on("session_start", "turn_end")(lambda e: None)
    ext.intercept_tool_call(lambda call: block("no") if call.name == "bash" else rewrite({"x": 1}))
    ext.intercept_assistant_message(lambda text: replace_text("r"))
    ext.intercept_turn_start(lambda step: allow("note"))
    ext.before_agent_start(lambda e: "new prompt")

    @ext.on_hello
    def push(host: Any) -> None:
        ext.notify("info", "i")
        ext.notify("warn", "w")
        ext.clear_notes()
        ext.submit("s")
        ext.render_panel("id", "T", ["x"], "f")
        ext.render_panel("id")
        ext.close_panel("id")

    host = FakeHost(ext)
    host.handshake()
    for i, name in enumerate(replies):
        host.send({"type": "command_invoked", "id": f"c{i}", "name": name, "args": "a"})
    for i, name in enumerate(results):
        host.send({"type": "tool_call", "id": f"t{i}", "name": "t-" + name, "args": {"x": i}})
    intercepts = [
        {"event": "tool_call", "tool_id": "1", "tool_name": "bash", "tool_args": {"command": "ls"}},
        {"event": "tool_call", "tool_id": "2", "tool_name": "read", "tool_args": {"path": "a"}},
        {"event": "turn_start", "step": 1},
        {"event": "assistant_message", "text": "hello"},
        {
            "event": "before_agent_start",
            "session_id": "s",
            "agent_run_id": "r",
            "cwd": "/",
            "provider": "p",
            "model": "m",
            "system_prompt": "old",
        },
    ]
    for i, payload in enumerate(intercepts):
        host.send({"type": "event_intercept", "id": f"i{i}", **payload})
    frames = [host.recv() for _ in range(len(replies) + len(results) + len(intercepts))]
    host.send({"type": "shutdown"})
    frames.append(host.recv())
    host.close()
    frames = [json.loads(line) for line in host.raw_lines]
    kinds = {f["type"] for f in frames}
    assert kinds == {
        "hello", "notify", "clear_notes", "submit", "panel_render", "panel_close", "register_command",
        "register_tool", "subscribe", "ready", "command_response", "tool_result",
        "event_intercept_response", "shutdown_ack",
    }  # fmt: skip
    checker = FrameChecker(schema)
    bad = {json.dumps(f): checker.problems(f) for f in frames if checker.problems(f)}
    assert not bad, bad
    # The checker is not a rubber stamp.
    assert checker.problems({"type": "tool_result", "id": "1", "content": [{"type": "text"}]})
    assert checker.problems({"type": "tool_result", "id": "1", "activate_tool": ["x"]})
    assert checker.problems({"type": "command_response", "id": "1", "action": "explode"})
