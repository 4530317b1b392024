"""The README's quick start is a working extension."""

from __future__ import annotations

import os
import re

from harness import SDK_DIR, Env, make_extension


def test_readme_quick_start_runs(env: Env) -> None:
    readme = (SDK_DIR / "README.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", readme, re.S)
    ext_dir = make_extension(env.root, "hello-py", code)
    (entry,) = env.doctor(ext_dir)["extensions"]
    assert entry["state"] == "ready", (entry, env.log("hello-py"))
    assert [c["name"] for c in entry["commands"]] == ["hello", "where"]
    assert [t["name"] for t in entry["tools"]] == ["shout"]
    assert entry["intercepts"] == ["tool_call"]
    events = env.rpc(ext_dir).prompt("/where")
    (shown,) = [e for e in events if e["type"] == "ext_display"]
    assert os.path.realpath(shown["text"]) == os.path.realpath(env.project)
