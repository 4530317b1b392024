#!/usr/bin/env python3
"""A nimlet-protocol extension (no SDK): zot runs it unmodified.

/note <text> appends a line to NOTES.md in the workspace; the model gets a
read-only `recall_notes` tool; every tool call is counted in a footer status.
"""
import json
import os
import sys

workspace = os.getcwd()  # nimlet extensions run in the workspace


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def notes_path():
    return os.path.join(workspace, "NOTES.md")


send({
    "type": "register",
    "commands": [{"name": "note", "description": "append a line to NOTES.md"}],
    "tools": [{
        "name": "recall_notes",
        "description": "Read the project's NOTES.md.",
        "input_schema": {"type": "object", "properties": {}},
        "capabilities": ["read"],
    }],
    "events": ["tool_call"],
})

calls = 0
for line in sys.stdin:
    if not line.strip():
        continue
    message = json.loads(line)
    kind = message.get("type")
    if kind == "initialize":
        workspace = message.get("workspace") or workspace
    elif kind == "command":
        text = message.get("arguments", "").strip()
        if not text:
            send({"type": "response", "id": message["id"], "message": "usage: /note <text>"})
            continue
        with open(notes_path(), "a") as handle:
            handle.write("- " + text + "\n")
        send({"type": "response", "id": message["id"], "message": "noted",
              "entry": {"noted": text}})
    elif kind == "tool":
        try:
            with open(notes_path()) as handle:
                content = handle.read() or "(no notes yet)"
        except FileNotFoundError:
            content = "(no notes yet)"
        send({"type": "response", "id": message["id"], "content": content})
    elif kind == "event":
        calls += 1
        send({"type": "response", "id": message["id"],
              "status": {"key": "calls", "text": "%d tool call(s) seen" % calls}})
    elif kind == "shutdown":
        break
