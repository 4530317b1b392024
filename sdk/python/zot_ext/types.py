"""Values handlers receive and return, and how each becomes a wire frame.

Everything here is plain data: the `Extension` runtime (extension.py) turns
host frames into these objects and these objects back into frames.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

__all__ = [
    "HostInfo",
    "Event",
    "ToolCall",
    "BeforeAgentStart",
    "PanelKey",
    "Panel",
    "Response",
    "prompt",
    "insert",
    "display",
    "open_panel",
    "noop",
    "error",
    "TextBlock",
    "ImageBlock",
    "Block",
    "ToolResult",
    "Decision",
    "allow",
    "block",
    "rewrite",
    "replace_text",
    "EVENT_NAMES",
    "NOTIFY_LEVELS",
]

#: Lifecycle events an extension may observe with ``@ext.on(name)``.
EVENT_NAMES = (
    "session_start",
    "turn_start",
    "turn_end",
    "tool_call",
    "tool_confirmation_requested",
    "assistant_message",
)

#: Levels accepted by ``ext.notify``.
NOTIFY_LEVELS = ("info", "success", "warn", "error")


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _opt_str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# ---------------------------------------------------------------- from the host


@dataclass(frozen=True)
class HostInfo:
    """What the host said in ``hello_ack``. Empty strings until it arrived."""

    protocol_version: int = 0
    zot_version: str = ""
    provider: str = ""
    model: str = ""
    #: The user's project directory (the extension itself runs in its own dir).
    cwd: str = ""
    #: The directory holding the extension's manifest.
    extension_dir: str = ""
    #: Where the extension should keep its own state.
    data_dir: str = ""

    @classmethod
    def from_frame(cls, frame: Mapping[str, Any]) -> HostInfo:
        return cls(
            protocol_version=_int(frame.get("protocol_version")),
            zot_version=_str(frame.get("zot_version")),
            provider=_str(frame.get("provider")),
            model=_str(frame.get("model")),
            cwd=_str(frame.get("cwd")),
            extension_dir=_str(frame.get("extension_dir")),
            data_dir=_str(frame.get("data_dir")),
        )


@dataclass(frozen=True)
class Event:
    """A lifecycle notification (``{"type":"event"}``). Fields that do not
    belong to ``name`` keep their defaults; ``raw`` is the whole frame."""

    name: str
    step: int = 0
    stop: str = ""
    error: Optional[str] = None
    tool_id: str = ""
    tool_name: str = ""
    tool_args: Any = None
    tool_preview: str = ""
    text: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_frame(cls, frame: Mapping[str, Any]) -> Event:
        return cls(
            name=_str(frame.get("event")),
            step=_int(frame.get("step")),
            stop=_str(frame.get("stop")),
            error=_opt_str(frame.get("error")),
            tool_id=_str(frame.get("tool_id")),
            tool_name=_str(frame.get("tool_name")),
            tool_args=frame.get("tool_args"),
            tool_preview=_str(frame.get("tool_preview")),
            text=_str(frame.get("text")),
            raw=dict(frame),
        )


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model is about to make, as an interceptor sees it."""

    id: str
    name: str
    #: The parsed arguments (normally a dict).
    args: Any


@dataclass(frozen=True)
class BeforeAgentStart:
    """The ``before_agent_start`` intercept: the complete system prompt."""

    system_prompt: str
    session_id: str = ""
    agent_run_id: str = ""
    cwd: str = ""
    provider: str = ""
    model: str = ""

    @classmethod
    def from_frame(cls, frame: Mapping[str, Any]) -> BeforeAgentStart:
        return cls(
            system_prompt=_str(frame.get("system_prompt")),
            session_id=_str(frame.get("session_id")),
            agent_run_id=_str(frame.get("agent_run_id")),
            cwd=_str(frame.get("cwd")),
            provider=_str(frame.get("provider")),
            model=_str(frame.get("model")),
        )


@dataclass(frozen=True)
class PanelKey:
    """A key pressed while one of this extension's panels is focused.
    ``key`` is ``up``, ``down``, ``enter``, ..., or ``rune`` with ``text``."""

    panel_id: str
    key: str
    text: Optional[str] = None


# ---------------------------------------------------------------- command responses


@dataclass
class Panel:
    """The content of an extension-owned panel."""

    id: str
    title: Optional[str] = None
    lines: List[str] = field(default_factory=list)
    footer: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"id": self.id}
        if self.title is not None:
            out["title"] = self.title
        if self.lines:
            out["lines"] = [str(line) for line in self.lines]
        if self.footer is not None:
            out["footer"] = self.footer
        return out


@dataclass
class Response:
    """What a slash command answers. Build one with `prompt`, `insert`,
    `display`, `open_panel`, `noop` or `error`."""

    action: str = "noop"
    prompt: Optional[str] = None
    insert: Optional[str] = None
    display: Optional[str] = None
    open_panel: Optional[Panel] = None
    #: Shown as a red status line; the host then skips the action.
    error: Optional[str] = None

    def to_frame(self, id: str) -> Dict[str, Any]:
        frame: Dict[str, Any] = {"type": "command_response", "id": id, "action": self.action}
        if self.prompt is not None:
            frame["prompt"] = self.prompt
        if self.insert is not None:
            frame["insert"] = self.insert
        if self.display is not None:
            frame["display"] = self.display
        if self.open_panel is not None:
            frame["open_panel"] = self.open_panel.to_json()
        if self.error:
            frame["error"] = self.error
        return frame


def prompt(text: str) -> Response:
    """Submit ``text`` as a fresh user message; the agent runs a turn."""
    return Response(action="prompt", prompt=text)


def insert(text: str) -> Response:
    """Insert ``text`` into the editor at the cursor without submitting."""
    return Response(action="insert", insert=text)


def display(text: str) -> Response:
    """Show ``text`` as a one-shot note; no model call, not in the transcript."""
    return Response(action="display", display=text)


def open_panel(
    id: str,
    title: Optional[str] = None,
    lines: Sequence[str] = (),
    footer: Optional[str] = None,
) -> Response:
    """Open an interactive panel owned by this extension."""
    return Response(action="open_panel", open_panel=Panel(id, title, list(lines), footer))


def noop() -> Response:
    """The command handled everything itself."""
    return Response(action="noop")


def error(message: str) -> Response:
    """Fail the command: the host shows ``message`` as a red status line."""
    return Response(action="noop", error=message or "error")


# ---------------------------------------------------------------- tool results


@dataclass
class TextBlock:
    text: str

    def to_json(self) -> Dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass
class ImageBlock:
    mime_type: str
    #: Standard base64 of the image bytes.
    data: str

    @classmethod
    def from_bytes(cls, mime_type: str, raw: bytes) -> ImageBlock:
        return cls(mime_type, base64.b64encode(raw).decode("ascii"))

    def to_json(self) -> Dict[str, Any]:
        return {"type": "image", "mime_type": self.mime_type, "data": self.data}


Block = Union[TextBlock, ImageBlock]


@dataclass
class ToolResult:
    """A tool's answer: content blocks, an error flag, and names of deferred
    tools that become available to the model after this result."""

    content: List[Block] = field(default_factory=list)
    is_error: bool = False
    activate_tools: List[str] = field(default_factory=list)

    @classmethod
    def text(cls, text: str, *, is_error: bool = False, activate_tools: Sequence[str] = ()) -> ToolResult:
        return cls([TextBlock(text)], is_error, list(activate_tools))

    @classmethod
    def error(cls, text: str) -> ToolResult:
        return cls([TextBlock(text)], is_error=True)

    def to_frame(self, id: str) -> Dict[str, Any]:
        frame: Dict[str, Any] = {
            "type": "tool_result",
            "id": id,
            "content": [block.to_json() for block in self.content],
        }
        if self.is_error:
            frame["is_error"] = True
        if self.activate_tools:
            frame["activate_tools"] = [str(name) for name in self.activate_tools]
        return frame


# ---------------------------------------------------------------- intercept decisions


@dataclass
class Decision:
    """An interceptor's verdict. The default allows, unchanged."""

    block: bool = False
    reason: Optional[str] = None
    #: tool_call only: the arguments the tool will actually see.
    modified_args: Optional[Dict[str, Any]] = None
    #: assistant_message only: the text the user sees instead.
    replace_text: Optional[str] = None


def allow(reason: Optional[str] = None) -> Decision:
    """Let the action through unchanged."""
    return Decision(reason=reason)


def block(reason: str) -> Decision:
    """Refuse: a tool call fails with ``reason``, a turn or message is stopped."""
    return Decision(block=True, reason=reason)


def rewrite(args: Mapping[str, Any]) -> Decision:
    """tool_call only: run the tool with ``args`` instead."""
    return Decision(modified_args=dict(args))


def replace_text(text: str) -> Decision:
    """assistant_message only: show ``text`` to the user instead."""
    return Decision(replace_text=text)
