"""LLM-callable tools through the real agent loop and a mock model: the
schema in the request, results in the next request, errors, images, and
deferred tools activated by a loader tool."""

from __future__ import annotations

import json

from harness import Env, make_extension
from mock_openai import MockOpenAI, text, tool_call

LOOKUP_SCHEMA = {
    "type": "object",
    "properties": {"key": {"type": "string", "description": "what to look up"}},
    "required": ["key"],
}

TOOLS = f"""
    from zot_ext import Extension, ImageBlock, TextBlock, ToolResult

    ext = Extension("tools", "1.0.0")

    @ext.tool("lookup", "Look a key up.", schema={LOOKUP_SCHEMA!r})
    def lookup(args):
        return "value-of-" + args["key"]

    @ext.tool("refuse", "Always fails.")
    def refuse(args):
        return ToolResult.error("refused: " + args.get("why", ""))

    @ext.tool("broken", "Raises.")
    def broken(args):
        raise KeyError("missing")

    @ext.tool("data", "Returns JSON.")
    def data(args):
        return {{"n": 3, "echo": args}}

    @ext.tool("picture", "Returns text and an image.")
    def picture(args):
        return [TextBlock("a red dot"), ImageBlock.from_bytes("image/png", b"\\x89PNG\\r\\n\\x1a\\nfake")]

    ext.run()
"""


def test_tool_round_trip(env: Env, model: MockOpenAI) -> None:
    ext_dir = make_extension(env.root, "tools", TOOLS)
    model.answer(tool_call("lookup", {"key": "k1"}, id="call_1"))
    model.answer(text("The value is value-of-k1."))
    zot = env.rpc(ext_dir)
    events = zot.prompt("look up k1")
    assert len(model.requests) == 2
    spec = model.tool_spec(model.requests[0], "lookup")
    assert spec == {"name": "lookup", "description": "Look a key up.", "parameters": LOOKUP_SCHEMA}
    assert model.tool_message(model.requests[1], "call_1") == "value-of-k1"
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["id"] == "call_1" and result["is_error"] is False
    assert result["content"] == [{"type": "text", "text": "value-of-k1"}]
    assert [e for e in events if e["type"] == "error"] == []


def test_errors_exceptions_json_and_images(env: Env, model: MockOpenAI) -> None:
    ext_dir = make_extension(env.root, "tools", TOOLS)
    model.answer(
        tool_call("refuse", {"why": "policy"}, id="c_refuse"),
        tool_call("broken", {}, id="c_broken"),
        tool_call("data", {"x": 1}, id="c_data"),
        tool_call("picture", {}, id="c_picture"),
        tool_call("lookup", {"key": "after"}, id="c_after"),
    )
    model.answer(text("done"))
    zot = env.rpc(ext_dir)
    events = zot.prompt("use every tool")
    results = {e["id"]: e for e in events if e["type"] == "tool_result"}
    assert results["c_refuse"]["is_error"] is True
    assert results["c_refuse"]["content"] == [{"type": "text", "text": "refused: policy"}]
    # An exception becomes an error result; the next call still works.
    assert results["c_broken"]["is_error"] is True
    assert results["c_broken"]["content"] == [{"type": "text", "text": "KeyError: 'missing'"}]
    assert results["c_after"]["content"] == [{"type": "text", "text": "value-of-after"}]
    assert json.loads(results["c_data"]["content"][0]["text"]) == {"n": 3, "echo": {"x": 1}}
    picture = results["c_picture"]
    assert picture["is_error"] is False
    assert picture["content"][0] == {"type": "text", "text": "a red dot"}
    assert picture["content"][1]["type"] == "image" and picture["content"][1]["mime_type"] == "image/png"
    follow_up = model.requests[1]
    assert model.tool_message(follow_up, "c_refuse") == "refused: policy"
    assert model.tool_message(follow_up, "c_broken") == "KeyError: 'missing'"
    assert "a red dot" in model.tool_message(follow_up, "c_picture")
    assert "Traceback" in env.log("tools") and "tool broken raised" in env.log("tools")
    assert sent_results(env, "tools")["picture"]["content"][1]["data"] == "iVBORw0KGgpmYWtl"


DEFERRED = """
    from zot_ext import Extension, ToolResult

    ext = Extension("vault", "1.0.0")

    @ext.tool("open_vault", "Makes the vault tools available.")
    def open_vault(args):
        return ToolResult.text("vault tools enabled", activate_tools=["read_secret"])

    @ext.tool(
        "read_secret",
        "Reads a secret.",
        schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        deferred=True,
    )
    def read_secret(args):
        return "the secret " + args["name"] + " is 42"

    ext.run()
"""


def test_deferred_tool_is_activated_by_a_loader(env: Env, model: MockOpenAI) -> None:
    ext_dir = make_extension(env.root, "vault", DEFERRED)
    model.answer(tool_call("open_vault", {}, id="c_open"))
    model.answer(tool_call("read_secret", {"name": "door"}, id="c_read"))
    model.answer(text("The door secret is 42."))
    zot = env.rpc(ext_dir)
    events = zot.prompt("what is the door secret?")
    first, second, third = model.requests
    assert "open_vault" in model.tool_names(first)
    assert "read_secret" not in model.tool_names(first)
    assert model.tool_message(second, "c_open") == "vault tools enabled"
    assert "read_secret" in model.tool_names(second)
    assert model.tool_spec(second, "read_secret")["parameters"]["required"] == ["name"]
    assert model.tool_message(third, "c_read") == "the secret door is 42"
    assert events_text(events)[-1] == "The door secret is 42."
    assert sent_results(env, "vault")["open_vault"]["activate_tools"] == ["read_secret"]
    assert "activate_tools" not in sent_results(env, "vault")["read_secret"]


def events_text(events: list) -> list:
    """The text of each assistant_message event."""
    return [
        "".join(b["text"] for b in e["content"] if b["type"] == "text")
        for e in events
        if e["type"] == "assistant_message"
    ]


def sent_results(env: Env, ext: str) -> dict:
    """The tool_result frames the SDK sent, by tool name (the host's call ids
    are its own, not the model's)."""
    names = {f["id"]: f["name"] for f in env.frames("recv", ext) if f["type"] == "tool_call"}
    return {names[f["id"]]: f for f in env.frames("send", ext) if f["type"] == "tool_result"}
