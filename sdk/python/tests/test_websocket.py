"""`serve_websocket`: an extension served by the SDK over WebSocket and
loaded by the real zot through a manifest ``url``: a tool round trip through
the agent loop, and a wrong bearer token refused at the upgrade."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Iterator, List

import pytest
from harness import SDK_DIR, SHORT_TIMEOUT, Env
from mock_openai import MockOpenAI, text, tool_call

TOKEN = "s3cret-token"

SERVER = """
    import sys
    from zot_ext import Extension, serve_websocket

    ext = Extension("remote", "1.0.0")

    @ext.tool("lookup", "Look a key up.")
    def lookup(args):
        return "remote-value-of-" + args["key"]

    serve_websocket(ext, "127.0.0.1", int(sys.argv[1]), token=sys.argv[2])
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SHORT_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited ({proc.returncode}):\n{log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"the server did not listen on {port} within {SHORT_TIMEOUT}s:\n{log.read_text()}")


@pytest.fixture
def server(env: Env) -> Iterator[int]:
    """The SDK's WebSocket server in a process of its own, on a free loopback port."""
    port = free_port()
    script = env.root / "server.py"
    script.write_text(textwrap.dedent(SERVER))
    log = env.root / "server-stderr.txt"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, str(script), str(port), TOKEN],
            env={**env.vars, "PYTHONPATH": str(SDK_DIR)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        wait_listening(port, proc, log)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(SHORT_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def remote_manifest(env: Env, port: int, token: str) -> Path:
    ext_dir = env.root / "remote"
    ext_dir.mkdir()
    (ext_dir / "extension.json").write_text(
        json.dumps(
            {
                "name": "remote",
                "version": "1.0.0",
                "url": f"ws://127.0.0.1:{port}",
                "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"},
            }
        )
    )
    env.vars["REMOTE_TOKEN"] = token
    return ext_dir


def test_tool_round_trip_over_websocket(env: Env, model: MockOpenAI, server: int) -> None:
    ext_dir = remote_manifest(env, server, TOKEN)
    model.answer(tool_call("lookup", {"key": "k1"}, id="call_1"))
    model.answer(text("The value is remote-value-of-k1."))
    zot = env.rpc(ext_dir)
    events = zot.prompt("look up k1")
    assert model.tool_message(model.requests[1], "call_1") == "remote-value-of-k1"
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["id"] == "call_1" and result["is_error"] is False
    assert result["content"] == [{"type": "text", "text": "remote-value-of-k1"}]
    zot.close()
    # The session went through the SDK's ordinary dispatch, one frame per message.
    sent: List[str] = [f["type"] for f in env.frames("send", "remote")]
    assert sent[:3] == ["hello", "register_tool", "ready"], sent
    assert "tool_result" in sent and sent[-1] == "shutdown_ack", sent


def test_wrong_token_is_refused(env: Env, server: int) -> None:
    ext_dir = remote_manifest(env, server, "not-the-token")
    report = env.doctor(ext_dir)
    (entry,) = report["extensions"]
    assert entry["state"] == "failed", entry
    assert "refused the websocket upgrade: HTTP 401" in entry["error"], entry
    assert env.frames("send", "remote") == []
