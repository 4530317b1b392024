"""redact: rewrites the assistant's visible answer so secrets never reach the screen.

The assistant_message interceptor replaces every match of the patterns below
with `[redacted:<kind>]`. The model's own transcript keeps the original text
(the host shows the user the replacement only). `/redact` shows how many
secrets were hidden in this session.
"""

from __future__ import annotations

import re
import sys
import threading

try:
    from zot_ext import Extension, display, replace_text
except ImportError:
    sys.stderr.write("redact: the zot_ext package is missing; run `pip install <zot checkout>/sdk/python`\n")
    sys.exit(1)

ext = Extension("redact", "1.0.0")

PATTERNS = [
    (
        "private-key",
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S),
    ),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{10,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{16,}")),
    ("aws-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    # `password = hunter2`, `api_key: "abc def"`: keep the name (and quotes), hide the value.
    (
        "password",
        re.compile(
            r"(?i)\b((?:password|passwd|secret|api[_-]?key|token)\s*[:=]\s*)"
            r"(?:(['\"])(?!\[redacted)[^'\"\n]{4,}\2|(?!\[redacted)[^\s'\",;]{3,}[^\s'\",;.!?)])"
        ),
    ),
]

_lock = threading.Lock()
_hidden = 0


def _keep_name(match: re.Match) -> str:
    quote = match.group(2) or ""
    return f"{match.group(1)}{quote}[redacted:password]{quote}"


def redact(text: str) -> tuple[str, int]:
    """`text` with every secret replaced, and how many were."""
    count = 0
    for kind, pattern in PATTERNS:
        if kind == "password":
            text, n = pattern.subn(_keep_name, text)
        else:
            text, n = pattern.subn(f"[redacted:{kind}]", text)
        count += n
    return text, count


@ext.intercept_assistant_message
def scrub(text: str):
    global _hidden
    clean, count = redact(text)
    if not count:
        return None
    with _lock:
        _hidden += count
    return replace_text(clean)


@ext.command("redact", "how many secrets were hidden from answers in this session")
def stats(args: str):
    with _lock:
        return display(f"redact: {_hidden} secret(s) hidden so far")


if __name__ == "__main__":
    ext.run()
