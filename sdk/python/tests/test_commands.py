"""Slash commands over `zot rpc`: every response kind, the args string,
notify / clear_notes, and a handler that raises."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest
from harness import Env, Zot, make_extension
from mock_openai import MockOpenAI, text

COMMANDS = """
    from zot_ext import Extension, display, error, insert, noop, open_panel, prompt

    ext = Extension("cmds", "1.0.0")

    @ext.command("show", "display the args")
    def show(args):
        return display("shown: " + args)

    @ext.command("ask", "prompt the model")
    def ask(args):
        return prompt("Tell me about " + args)

    @ext.command("put", "insert into the editor")
    def put(args):
        return insert("inserted text")

    @ext.command("panel", "open a panel")
    def panel(args):
        return open_panel("cmds-main", "Title", ["line one", "line two"], "esc close")

    @ext.command("nothing", "noop")
    def nothing(args):
        return noop()

    @ext.command("fail", "error form")
    def fail(args):
        return error("no such city: " + args)

    @ext.command("boom", "raises")
    def boom(args):
        raise ValueError("kaboom")

    @ext.command("plain", "returns a str")
    def plain(args):
        return "plain " + args

    @ext.command("quiet", "returns None")
    def quiet(args):
        return None

    @ext.command("note", "notify, clear_notes, submit")
    def note(args):
        ext.notify("warning", "careful: " + args)
        ext.clear_notes()
        ext.notify("success", "done")
        ext.submit("submit is ignored outside the TUI")
        return noop()

    ext.run()
"""


@pytest.fixture
def zot(env: Env) -> Zot:
    return env.rpc(make_extension(env.root, "cmds", COMMANDS))


def of_type(events: List[Dict[str, Any]], kind: str) -> List[Dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def responses(env: Env) -> Dict[str, Dict[str, Any]]:
    """The command_response frames the SDK sent, by command, via the trace."""
    ids = {f["id"]: f["name"] for f in env.frames("recv", "cmds") if f["type"] == "command_invoked"}
    return {ids[f["id"]]: f for f in env.frames("send", "cmds") if f["type"] == "command_response"}


def test_display_gets_the_args(zot: Zot) -> None:
    events = zot.prompt("/show hello   world ")
    assert of_type(events, "ext_display") == [
        {"type": "ext_display", "extension": "cmds", "command": "show", "text": "shown: hello   world"}
    ]
    assert of_type(events, "error") == []
    # Command names match case-insensitively; the SDK gets the canonical one.
    events = zot.prompt("/SHOW again")
    assert of_type(events, "ext_display")[0]["text"] == "shown: again"


def test_prompt_reaches_the_model(zot: Zot, model: MockOpenAI) -> None:
    model.answer(text("Paris is the capital of France."))
    events = zot.prompt("/ask Paris")
    (request,) = model.requests
    assert request["messages"][-1] == {"role": "user", "content": "Tell me about Paris"}
    (message,) = of_type(events, "assistant_message")
    assert message["content"] == [{"type": "text", "text": "Paris is the capital of France."}]


def test_insert_and_open_panel_need_the_tui(env: Env, zot: Zot) -> None:
    for name, action in (("put", "insert"), ("panel", "open_panel")):
        events = zot.prompt("/" + name)
        (err,) = of_type(events, "error")
        assert err["message"] == f'/{name}: "{action}" needs the interactive TUI'

    sent = responses(env)
    assert sent["put"]["action"] == "insert" and sent["put"]["insert"] == "inserted text"
    assert sent["panel"]["action"] == "open_panel"
    assert sent["panel"]["open_panel"] == {
        "id": "cmds-main",
        "title": "Title",
        "lines": ["line one", "line two"],
        "footer": "esc close",
    }


def test_noop_and_none(env: Env, zot: Zot, model: MockOpenAI) -> None:
    for name in ("nothing", "quiet"):
        events = zot.prompt("/" + name)
        assert [e["type"] for e in events] == ["done"], events
    assert model.requests == []
    sent = responses(env)
    assert sent["nothing"]["action"] == sent["quiet"]["action"] == "noop"
    assert "error" not in sent["quiet"]


def test_str_is_display(zot: Zot) -> None:
    (shown,) = of_type(zot.prompt("/plain words"), "ext_display")
    assert shown["text"] == "plain words"


def test_error_form(env: Env, zot: Zot) -> None:
    (err,) = of_type(zot.prompt("/fail Atlantis"), "error")
    assert err["message"] == "/fail: no such city: Atlantis"
    assert responses(env)["fail"] == {
        "type": "command_response",
        "id": responses(env)["fail"]["id"],
        "action": "noop",
        "error": "no such city: Atlantis",
    }


def test_exception_answers_an_error_and_the_extension_keeps_running(env: Env, zot: Zot) -> None:
    (err,) = of_type(zot.prompt("/boom"), "error")
    assert err["message"] == "/boom: ValueError: kaboom"
    (shown,) = of_type(zot.prompt("/show still alive"), "ext_display")
    assert shown["text"] == "shown: still alive"
    log = env.log_when("cmds", lambda log: "ValueError: kaboom" in log)
    assert "command /boom raised" in log and "Traceback" in log and "ValueError: kaboom" in log


def test_notify_and_clear_notes_reach_rpc(env: Env, zot: Zot) -> None:
    mark = len(zot.lines)
    events = zot.prompt("/note now")
    assert of_type(events, "error") == []
    # Host events travel apart from the prompt's own; wait for the last one.
    zot.wait_for(lambda e: e.get("type") == "ext_notify" and e.get("level") == "success", start=mark)
    seen = [e for e in zot.events_since(mark) if e["type"] in ("ext_notify", "ext_clear_notes")]
    assert seen == [
        {"type": "ext_notify", "extension": "cmds", "level": "warn", "message": "careful: now"},
        {"type": "ext_clear_notes", "extension": "cmds"},
        {"type": "ext_notify", "extension": "cmds", "level": "success", "message": "done"},
    ]
    assert {"type": "submit", "text": "submit is ignored outside the TUI"} in env.frames("send", "cmds")
