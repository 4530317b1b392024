"""The Python examples (examples/extensions/weather and redact) through the
real zot: loaded from the checkout with --ext, and installed with
`zot ext install`, where they find the SDK the way a user's copy would."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

from harness import EXAMPLES_DIR, SDK_DIR, Env
from mock_openai import MockOpenAI, text, tool_call

WEATHER = EXAMPLES_DIR / "weather"
REDACT = EXAMPLES_DIR / "redact"


def assistant_texts(events: List[dict]) -> List[str]:
    return [
        "".join(b["text"] for b in e["content"] if b["type"] == "text")
        for e in events
        if e["type"] == "assistant_message"
    ]


def test_examples_register_everything(env: Env) -> None:
    report = env.doctor(WEATHER, REDACT)
    assert report["ok"] is True, report
    weather, redact = report["extensions"]
    assert weather["name"] == "weather" and weather["state"] == "ready", (weather, env.log("weather"))
    assert [(t["name"], t["deferred"]) for t in weather["tools"]] == [
        ("weather", False),
        ("load_forecast", False),
        ("forecast", True),
    ]
    assert [c["name"] for c in weather["commands"]] == ["weather"]
    assert redact["name"] == "redact" and redact["state"] == "ready", (redact, env.log("redact"))
    assert redact["intercepts"] == ["assistant_message"]
    assert [c["name"] for c in redact["commands"]] == ["redact"]


def test_weather_tools_and_deferred_forecast(env: Env, model: MockOpenAI) -> None:
    model.answer(tool_call("weather", {"city": "Berlin"}, id="c_now"))
    model.answer(tool_call("load_forecast", {}, id="c_load"))
    model.answer(tool_call("forecast", {"city": "Berlin", "days": 2}, id="c_fc"))
    model.answer(text("Foggy now, then whatever comes."))
    events = env.run_json("weather in Berlin, now and the next two days?", WEATHER)
    assert events[-1]["type"] == "done", events[-3:]
    first, second, third, fourth = model.requests
    assert {"weather", "load_forecast"} <= set(model.tool_names(first))
    assert "forecast" not in model.tool_names(first)
    assert model.tool_spec(first, "weather")["parameters"]["required"] == ["city"]
    assert model.tool_message(second, "c_now") == "Berlin: 16°C, fog"
    assert "forecast" not in model.tool_names(second)
    assert model.tool_message(third, "c_load") == "The forecast tool is now available."
    assert "forecast" in model.tool_names(third)
    forecast = model.tool_message(fourth, "c_fc").splitlines()
    assert forecast[0] == "Berlin, next 2 day(s):" and len(forecast) == 3
    assert assistant_texts(events)[-1] == "Foggy now, then whatever comes."


def test_weather_command_and_bad_arguments(env: Env, model: MockOpenAI) -> None:
    events = env.run_json("/weather Paris", WEATHER)
    assert [e for e in events if e["type"] == "ext_display"] == [
        {"type": "ext_display", "extension": "weather", "command": "weather", "text": "Paris: 19°C, sunny"}
    ]
    model.answer(
        tool_call("forecast", {"city": "Oslo", "days": 99}, id="c_bad"), tool_call("weather", {}, id="c_none")
    )
    model.answer(text("sorry"))
    # `forecast` is not active yet: the host refuses it; `weather` without a city is the tool's error.
    events = env.run_json("forecast please", WEATHER)
    results = {e["id"]: e for e in events if e["type"] == "tool_result"}
    assert results["c_bad"]["is_error"] is True
    assert results["c_none"]["is_error"] is True
    assert "city" in results["c_none"]["content"][0]["text"]


def test_redact_rewrites_what_the_user_sees(env: Env, model: MockOpenAI) -> None:
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"
    model.answer(text(f"Use {secret} and password = hunter22 with AKIAABCDEFGHIJKLMNOP."))
    events = env.run_json("what are the credentials?", REDACT)
    assert assistant_texts(events) == [
        "Use [redacted:openai-key] and password = [redacted:password] with [redacted:aws-key]."
    ]
    model.answer(text("Nothing secret here."))
    assert assistant_texts(env.run_json("and now?", REDACT)) == ["Nothing secret here."]


def python_with_sdk(env: Env) -> Dict[str, str]:
    """Environment overrides so `python3` on PATH (this interpreter) imports
    zot_ext as if `pip install sdk/python` had run (run-tests.sh installs it
    for real; a bare pytest run gets PYTHONPATH instead)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import zot_ext"],
        cwd="/",
        env={**env.vars, "PYTHONPATH": ""},
        capture_output=True,
    )
    return {} if probe.returncode == 0 else {"PYTHONPATH": str(SDK_DIR)}


def install(env: Env, source: Path) -> Path:
    done = env.command(["ext", "install", str(source)])
    assert done.returncode == 0, done.stderr
    installed = env.home / "extensions" / source.name
    assert (installed / "extension.json").is_file()
    return installed


def test_installed_examples_work(env: Env, model: MockOpenAI) -> None:
    install(env, WEATHER)
    install(env, REDACT)
    extra = python_with_sdk(env)
    env.vars.update(extra)
    report = env.doctor()
    states = {e["name"]: (e["scope"], e["state"]) for e in report["extensions"]}
    assert states == {"weather": ("global", "ready"), "redact": ("global", "ready")}, (
        report,
        env.log("weather"),
    )
    model.answer(tool_call("weather", {"city": "Tokyo"}, id="c1"))
    model.answer(text("It is Tokyo, token=abcd1234efgh."))
    events = env.run_json("weather in Tokyo?")
    assert model.tool_message(model.requests[1], "c1") == "Tokyo: 22°C, partly cloudy"
    assert assistant_texts(events)[-1] == "It is Tokyo, token=[redacted:password]."


def test_installed_example_without_the_sdk_says_how_to_fix_it(env: Env) -> None:
    install(env, WEATHER)
    # An interpreter that cannot see the SDK (no site-packages, no PYTHONPATH).
    shim = env.root / "bare-python"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S -E "$@"\n')
    shim.chmod(0o755)
    report = env.doctor(ZOT_PYTHON=str(shim))
    (entry,) = report["extensions"]
    assert report["ok"] is False
    assert entry["state"] == "failed", entry
    assert "exit status: 1" in entry["error"], entry["error"]
    assert "pip install <zot checkout>/sdk/python" in env.log("weather")


def test_redact_patterns() -> None:
    spec = importlib.util.spec_from_file_location("redact_example", REDACT / "redact.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines the extension; run() only under __main__
    cases = {
        'api_key: "sk-abcdefghijklmnopqrstuvwxyz"': 'api_key: "[redacted:openai-key]"',
        "sk-ant-api03-abcdefghijkl": "[redacted:anthropic-key]",
        "ghp_" + "a" * 36 + " is mine": "[redacted:github-token] is mine",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----": "[redacted:private-key]",
        "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2Q": "[redacted:jwt]",
        "xoxb-1234567890-abc": "[redacted:slack-token]",
        "PASSWORD='correct horse'": "PASSWORD='[redacted:password]'",
        "secret: 's3cr3t!', done": "secret: '[redacted:password]', done",
        "token=abc": "token=abc",
        "plain text, nothing to hide": "plain text, nothing to hide",
    }
    for raw, want in cases.items():
        assert module.redact(raw)[0] == want, raw
