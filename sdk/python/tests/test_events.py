"""Lifecycle events through the real agent loop: they arrive, in order, each
handler of an event runs, and a handler that raises stops nothing."""

from __future__ import annotations

from harness import Env, make_extension
from mock_openai import MockOpenAI, text, tool_call

EVENTS = """
    from zot_ext import Extension
    ext = Extension("watcher", "1.0.0")

    def describe(event):
        detail = {
            "turn_start": str(event.step),
            "turn_end": event.stop,
            "tool_call": event.tool_name + " " + str((event.tool_args or {}).get("command")),
            "assistant_message": event.text,
        }.get(event.name, "")
        return (event.name + " " + detail).strip()

    @ext.on("turn_start")
    def first_handler_raises(event):
        raise RuntimeError("first handler fails")

    @ext.on("session_start", "turn_start", "turn_end", "tool_call", "assistant_message")
    def report(event):
        ext.notify("info", describe(event))

    ext.run()
"""


def test_events_arrive_in_order(env: Env, model: MockOpenAI) -> None:
    ext_dir = make_extension(env.root, "watcher", EVENTS)
    model.answer(text("let me check"), tool_call("bash", {"command": "echo hi"}, id="c1"))
    model.answer(text("all done"))
    zot = env.rpc(ext_dir)
    mark = len(zot.lines)
    zot.prompt("check")
    last = "turn_end end_turn"
    zot.wait_for(lambda e: e.get("type") == "ext_notify" and e.get("message") == last, start=mark)
    seen = [e["message"] for e in zot.events_since(mark) if e["type"] == "ext_notify"]
    assert seen == [
        "session_start",
        "turn_start 1",
        "assistant_message let me check",
        "tool_call bash echo hi",
        "turn_end tool_use",
        "turn_start 2",
        "assistant_message all done",
        "turn_end end_turn",
    ], seen
    # The raising handler ran for each turn_start and was logged, no more.
    raised = "turn_start event handler raised"
    assert env.log_when("watcher", lambda log: log.count(raised) >= 2).count(raised) == 2
    subscribe = [f for f in env.frames("send", "watcher") if f["type"] == "subscribe"]
    assert subscribe == [
        {
            "type": "subscribe",
            "events": ["turn_start", "session_start", "turn_end", "tool_call", "assistant_message"],
        }
    ]
