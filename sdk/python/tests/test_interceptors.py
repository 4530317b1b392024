"""Every interceptor through the real agent loop: tool_call block and
rewrite, turn_start block, assistant_message replace and block,
before_agent_start, and an interceptor that raises (the call is allowed)."""

from __future__ import annotations

import json

from harness import Env, make_extension
from mock_openai import MockOpenAI, text, tool_call

GUARD = """
    from zot_ext import Extension, block, rewrite

    ext = Extension("guard", "1.0.0")

    @ext.intercept_tool_call
    def guard(call):
        command = (call.args or {}).get("command", "")
        if call.name == "bash" and "rm -rf" in command:
            return block("refused: rm -rf is not allowed")
        if call.name == "bash" and command == "echo original":
            return rewrite({"command": "echo REWRITTEN"})
        return None

    ext.run()
"""


def test_tool_call_block_and_rewrite(env: Env, model: MockOpenAI) -> None:
    ext_dir = make_extension(env.root, "guard", GUARD)
    victim = env.project / "victim"
    victim.mkdir()
    model.answer(
        tool_call("bash", {"command": f"rm -rf {victim}"}, id="c_rm"),
        tool_call("bash", {"command": "echo original"}, id="c_echo"),
        tool_call("bash", {"command": "echo untouched"}, id="c_plain"),
    )
    model.answer(text("done"))
    zot = env.rpc(ext_dir)
    events = zot.prompt("clean up")
    results = {e["id"]: e for e in events if e["type"] == "tool_result"}
    assert results["c_rm"]["is_error"] is True
    assert victim.is_dir(), "the blocked command ran"
    follow_up = model.requests[1]
    assert model.tool_message(follow_up, "c_rm") == "refused: rm -rf is not allowed"
    echoed = model.tool_message(follow_up, "c_echo")
    assert "REWRITTEN" in echoed and "original" not in echoed
    assert "untouched" in model.tool_message(follow_up, "c_plain")
    # The SDK sent a bare allow for the call it let through.
    replies = [f for f in env.frames("send", "guard") if f["type"] == "event_intercept_response"]
    assert [sorted(r) for r in replies] == [
        ["block", "id", "reason", "type"],
        ["id", "modified_args", "type"],
        ["id", "type"],
    ]


def test_turn_start_block(env: Env, model: MockOpenAI) -> None:
    ext_dir = make_extension(
        env.root,
        "hours",
        """
        from zot_ext import Extension, block
        ext = Extension("hours", "1.0.0")

        @ext.intercept_turn_start
        def gate(step):
            return block(f"outside business hours (step {step})")

        ext.run()
        """,
    )
    zot = env.rpc(ext_dir)
    events = zot.prompt("hello?")
    assert model.requests == []
    (end,) = [e for e in events if e["type"] == "turn_end"]
    assert end["stop"] == "error"
    assert "outside business hours (step 1)" in end["error"]


SCRUB = """
    from zot_ext import Extension, block, replace_text

    ext = Extension("scrub", "1.0.0")

    @ext.intercept_assistant_message
    def scrub(text):
        if "FORBIDDEN" in text:
            return block("not for your eyes")
        if "SECRET123" in text:
            return replace_text(text.replace("SECRET123", "[redacted]"))
        return None

    ext.run()
"""


def assistant_texts(events: list) -> list:
    return [
        "".join(b["text"] for b in e["content"] if b["type"] == "text")
        for e in events
        if e["type"] == "assistant_message"
    ]


def test_assistant_message_replace_keeps_the_original_for_the_model(env: Env, model: MockOpenAI) -> None:
    ext_dir = make_extension(env.root, "scrub", SCRUB)
    model.answer(text("the password is SECRET123"))
    model.answer(text("ok"))
    zot = env.rpc(ext_dir)
    assert assistant_texts(zot.prompt("what is the password?")) == ["the password is [redacted]"]
    zot.prompt("thanks")
    history = [m for m in model.requests[1]["messages"] if m["role"] == "assistant"]
    assert "SECRET123" in json.dumps(history), "the model should see what it really said"


def test_assistant_message_block(env: Env, model: MockOpenAI) -> None:
    ext_dir = make_extension(env.root, "scrub", SCRUB)
    model.answer(text("this is FORBIDDEN knowledge"))
    zot = env.rpc(ext_dir)
    events = zot.prompt("tell me")
    assert assistant_texts(events) == []
    (blocked,) = [e for e in events if e["type"] == "assistant_blocked"]
    assert blocked["extension"] == "scrub" and blocked["reason"] == "not for your eyes"


def test_before_agent_start_replaces_the_system_prompt(env: Env, model: MockOpenAI) -> None:
    ext_dir = make_extension(
        env.root,
        "prompter",
        """
        from zot_ext import Extension
        ext = Extension("prompter", "1.0.0")

        @ext.before_agent_start
        def replace(event):
            facts = f"provider={event.provider} model={event.model} cwd={event.cwd}"
            ids = f"session={bool(event.session_id)} run={bool(event.agent_run_id)}"
            return event.system_prompt + "\\n\\nPYSDK-MARKER " + facts + " " + ids

        ext.run()
        """,
    )
    model.answer(text("one"))
    model.answer(text("two"))
    zot = env.rpc(ext_dir)
    zot.prompt("first")
    zot.prompt("second")
    first, second = model.requests
    system = model.system_prompt(first)
    marker = f"\n\nPYSDK-MARKER provider=openai model=gpt-4.1 cwd={env.project} session=True run=True"
    assert system.endswith(marker), system[-300:]
    assert len(system) > len(marker), "the original prompt should come first"
    # The replacement is stable across prompts: prepared once, not stacked.
    assert model.system_prompt(second) == system
    assert system.count("PYSDK-MARKER") == 1


def test_before_agent_start_empty_string_removes_the_prompt(env: Env, model: MockOpenAI) -> None:
    ext_dir = make_extension(
        env.root,
        "blank",
        """
        from zot_ext import Extension
        ext = Extension("blank", "1.0.0")

        @ext.before_agent_start
        def remove(event):
            return ""

        ext.run()
        """,
    )
    model.answer(text("hi"))
    env.rpc(ext_dir).prompt("hello")
    (request,) = model.requests
    assert model.system_prompt(request) == ""


def test_interceptor_exceptions_allow(env: Env, model: MockOpenAI) -> None:
    ext_dir = make_extension(
        env.root,
        "flaky",
        """
        from zot_ext import Extension
        ext = Extension("flaky", "1.0.0")

        @ext.intercept_tool_call
        def guard(call):
            raise RuntimeError("guard is broken")

        @ext.intercept_turn_start
        def gate(step):
            raise RuntimeError("gate is broken")

        @ext.intercept_assistant_message
        def scrub(text):
            return 42  # not a Decision: treated like an exception

        @ext.before_agent_start
        def prompt(event):
            raise RuntimeError("prompt hook is broken")

        ext.run()
        """,
    )
    model.answer(tool_call("bash", {"command": "echo fine"}, id="c1"))
    model.answer(text("all fine"))
    zot = env.rpc(ext_dir)
    events = zot.prompt("go")
    assert "fine" in model.tool_message(model.requests[1], "c1")
    assert assistant_texts(events)[-1] == "all fine"
    assert [e for e in events if e["type"] == "error"] == []
    replies = [f for f in env.frames("send", "flaky") if f["type"] == "event_intercept_response"]
    assert replies and all(sorted(r) == ["id", "type"] for r in replies), replies
    raised = [
        f"{what} interceptor (allowing) raised"
        for what in ("tool_call", "turn_start", "assistant_message", "before_agent_start")
    ]
    log = env.log_when("flaky", lambda log: all(line in log for line in raised))
    for line in raised:
        assert line in log, log
