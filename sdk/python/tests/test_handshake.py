"""The handshake and registrations as zot sees them: `zot ext doctor`, host
info from hello_ack, the exact frame order, and a clean shutdown."""

from __future__ import annotations

import json
import os

from harness import Env, alive, make_extension

SHAKE = """
    import json, os
    from zot_ext import Extension, allow, display

    ext = Extension("shake", "2.0.0")

    @ext.command("one", "first command")
    def one(args):
        return display("one")

    @ext.tool("plain", "a plain tool", schema={"type": "object", "properties": {"q": {"type": "string"}}})
    def plain(args):
        return "p"

    @ext.tool("later", "a deferred tool", deferred=True)
    def later(args):
        return "l"

    @ext.on("turn_end")
    def seen(event):
        pass

    @ext.intercept_turn_start
    def gate(step):
        return allow()

    @ext.on_hello
    def registered_after_hello(host):
        @ext.command("in-" + os.path.basename(host.cwd), "registered in on_hello")
        def where(args):
            return display(host.cwd)

    @ext.on_shutdown
    def bye():
        with open(os.path.join(ext.host.data_dir, "shutdown.txt"), "w") as f:
            f.write("clean")

    ext.run()
"""


def test_doctor_sees_every_registration_ready(env: Env) -> None:
    ext_dir = make_extension(env.root, "shake", SHAKE, version="2.0.0")
    report = env.doctor(ext_dir)
    assert report["ok"] is True, report
    (entry,) = report["extensions"]
    assert entry["name"] == "shake" and entry["version"] == "2.0.0"
    assert entry["state"] == "ready", (entry, env.log("shake"))
    assert entry["error"] is None
    assert entry["commands"] == [
        {"name": "one", "description": "first command"},
        {"name": "in-project", "description": "registered in on_hello"},
    ]
    assert entry["tools"] == [
        {"name": "plain", "description": "a plain tool", "deferred": False},
        {"name": "later", "description": "a deferred tool", "deferred": True},
    ]
    assert entry["events"] == ["turn_end"]
    assert entry["intercepts"] == ["turn_start"]
    assert entry["warnings"] == []


def test_frame_order_and_clean_shutdown(env: Env) -> None:
    ext_dir = make_extension(env.root, "shake", SHAKE, version="2.0.0")
    env.doctor(ext_dir)
    sequence = [(r["dir"], r["frame"]["type"]) for r in env.records("shake")]
    assert sequence == [
        ("send", "hello"),
        ("recv", "hello_ack"),
        ("send", "register_command"),
        ("send", "register_command"),
        ("send", "register_tool"),
        ("send", "register_tool"),
        ("send", "subscribe"),
        ("send", "ready"),
        ("recv", "shutdown"),
        ("send", "shutdown_ack"),
    ], sequence
    sent = env.frames("send", "shake")
    assert sent[0] == {
        "type": "hello",
        "name": "shake",
        "version": "2.0.0",
        "capabilities": ["commands", "tools", "events", "panels"],
    }
    assert sent[3]["schema"] == {"type": "object", "properties": {"q": {"type": "string"}}}
    assert "deferred" not in sent[3]
    assert sent[4]["deferred"] is True
    # One subscribe, naming only the kinds that have handlers.
    assert sent[5] == {"type": "subscribe", "events": ["turn_end"], "intercept": ["turn_start"]}
    # on_shutdown ran and the process exited on its own with status 0.
    assert (ext_dir / "shutdown.txt").read_text() == "clean"
    assert "stopped (exit status: 0)" in env.log("shake"), env.log("shake")


def test_no_subscribe_without_handlers(env: Env) -> None:
    ext_dir = make_extension(
        env.root,
        "plainext",
        """
        from zot_ext import Extension
        ext = Extension("plainext")

        @ext.command
        def hi(args):
            "says hi"
            return "hi"

        @ext.command("bare")
        def undocumented(args):
            return "bare"

        ext.run()
        """,
    )
    entry = env.doctor(ext_dir)["extensions"][0]
    assert entry["state"] == "ready"
    assert entry["commands"] == [
        {"name": "hi", "description": "says hi"},
        {"name": "bare", "description": None},
    ]
    sent = env.frames("send", "plainext")
    assert [f["type"] for f in sent] == [
        "hello",
        "register_command",
        "register_command",
        "ready",
        "shutdown_ack",
    ]
    # No version, no description: the frames leave them out rather than send "".
    assert "version" not in sent[0]
    assert sent[2] == {"type": "register_command", "name": "bare"}


def test_host_info_from_hello_ack(env: Env) -> None:
    ext_dir = make_extension(
        env.root,
        "info",
        """
        import dataclasses, json
        from zot_ext import Extension, display
        ext = Extension("info", "1.0.0")
        seen = {}

        @ext.on_hello
        def keep(host):
            seen.update(dataclasses.asdict(host))

        @ext.command("host", "host info")
        def host(args):
            return display(json.dumps({"on_hello": seen, "now": dataclasses.asdict(ext.host)}))

        ext.run()
        """,
    )
    zot = env.rpc(ext_dir)
    events = zot.prompt("/host")
    (shown,) = [e for e in events if e["type"] == "ext_display"]
    info = json.loads(shown["text"])
    assert info["on_hello"] == info["now"]
    host = info["now"]
    assert host["protocol_version"] == 1
    assert host["zot_version"]
    assert host["provider"] == "openai"
    assert host["model"] == "gpt-4.1"
    assert os.path.realpath(host["cwd"]) == os.path.realpath(env.project)
    assert os.path.realpath(host["extension_dir"]) == os.path.realpath(ext_dir)
    assert host["data_dir"]
    # The extension runs in its own directory, not the project.
    assert shown["extension"] == "info" and shown["command"] == "host"
    # zot exits at stdin EOF; the extension answered shutdown and is gone.
    children = zot.extension_pids()
    assert children, "the extension process was never seen"
    assert zot.close() == 0, zot.describe()
    assert not [p for p in children if alive(p)]
    assert env.frames("send", "info")[-1] == {"type": "shutdown_ack"}
