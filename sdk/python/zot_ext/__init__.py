"""zot_ext: write zot extensions in Python.

    from zot_ext import Extension, display

    ext = Extension("hello", "1.0.0")

    @ext.command("hello", "say hi")
    def hello(args: str):
        return display(f"hi {args}")

    ext.run()

Pure standard library (`serve_websocket` needs the ``websockets`` extra);
see README.md for the whole surface.
"""

from .extension import MAX_FRAME_BYTES, PROTOCOL_VERSION, TRACE_ENV, Extension, FrameTooLarge
from .types import (
    EVENT_NAMES,
    NOTIFY_LEVELS,
    BeforeAgentStart,
    Block,
    Decision,
    Event,
    HostInfo,
    ImageBlock,
    Panel,
    PanelKey,
    Response,
    TextBlock,
    ToolCall,
    ToolResult,
    allow,
    block,
    display,
    error,
    insert,
    noop,
    open_panel,
    prompt,
    replace_text,
    rewrite,
)
from .websocket import serve_websocket

__version__ = "0.1.0"

__all__ = [
    "Extension",
    "FrameTooLarge",
    "MAX_FRAME_BYTES",
    "PROTOCOL_VERSION",
    "TRACE_ENV",
    "EVENT_NAMES",
    "NOTIFY_LEVELS",
    "BeforeAgentStart",
    "Block",
    "Decision",
    "Event",
    "HostInfo",
    "ImageBlock",
    "Panel",
    "PanelKey",
    "Response",
    "TextBlock",
    "ToolCall",
    "ToolResult",
    "allow",
    "block",
    "display",
    "error",
    "insert",
    "noop",
    "open_panel",
    "prompt",
    "replace_text",
    "rewrite",
    "serve_websocket",
]
