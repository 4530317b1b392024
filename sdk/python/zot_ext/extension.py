"""The `Extension` runtime: registrations, the handshake, the read loop and
dispatch to handlers, and the one writer every frame goes through.

Threads: the main thread (inside `run`) reads host frames. Commands, tools
and intercepts each run in a thread of their own, so a slow handler never
holds up another. Events and panel keys run in order on one worker thread.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import re
import sys
import threading
import traceback
from typing import (
    IO,
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
    overload,
)

from .types import (
    EVENT_NAMES,
    NOTIFY_LEVELS,
    BeforeAgentStart,
    Block,
    Decision,
    Event,
    HostInfo,
    ImageBlock,
    PanelKey,
    Response,
    TextBlock,
    ToolCall,
    ToolResult,
    display,
    error,
    noop,
)

__all__ = ["Extension", "FrameTooLarge", "MAX_FRAME_BYTES", "PROTOCOL_VERSION", "TRACE_ENV"]

#: The protocol version this SDK speaks (``hello_ack.protocol_version``).
PROTOCOL_VERSION = 1

#: The host drops the connection on a longer frame (spec, "System prompt
#: replacement": "complete transport frames are limited to 4 MiB").
MAX_FRAME_BYTES = 4 * 1024 * 1024

#: How long shutdown waits for queued events to be handled. The host gives
#: every extension 2 s in all to exit (spec, "Lifecycle").
EVENT_DRAIN_SECONDS = 1.0

#: Environment variable naming a file that gets every frame sent and
#: received, one JSON object per line (``{"ext","dir","frame"}``).
TRACE_ENV = "ZOT_EXT_TRACE"

#: What zot recognises after '/' as a command name.
_COMMAND_NAME = re.compile(r"[A-Za-z0-9_-]+")

#: What the model APIs accept as a tool name (Anthropic and OpenAI alike).
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

F = TypeVar("F", bound=Callable[..., Any])

CommandHandler = Callable[[str], Union[Response, str, None]]
ToolHandler = Callable[[Any], Any]
EventHandler = Callable[[Event], None]


class FrameTooLarge(ValueError):
    """A frame would exceed `MAX_FRAME_BYTES`; the host would disconnect."""


class _Wire:
    """Writes whole frames, one line each, under one lock; optionally traces."""

    def __init__(self, out: IO[bytes], name: str, log: Callable[[str], None]) -> None:
        self._out = out
        self._name = name
        self._log = log
        self._lock = threading.Lock()
        self.closed = False
        # One os.write per record on an O_APPEND descriptor: several extensions
        # may trace into one file without their lines interleaving.
        self._trace: Optional[int] = None
        path = os.environ.get(TRACE_ENV)
        if path:
            try:
                self._trace = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError as e:
                log(f"cannot open {TRACE_ENV} file {path}: {e}")

    @staticmethod
    def encode(frame: Dict[str, Any]) -> bytes:
        text = json.dumps(frame, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        line = text.encode("utf-8") + b"\n"
        if len(line) > MAX_FRAME_BYTES:
            raise FrameTooLarge(
                f"{frame.get('type')} frame is {len(line)} bytes; the host accepts at most {MAX_FRAME_BYTES}"
            )
        return line

    def send(self, frame: Dict[str, Any]) -> None:
        line = self.encode(frame)
        with self._lock:
            if self.closed:
                return
            # Traced first, so a trace reader never sees the host's reaction before the frame.
            self._record("send", frame)
            try:
                self._out.write(line)
                self._out.flush()
            except (OSError, ValueError) as e:
                self.closed = True
                self._log(f"cannot write to the host ({e}); no more frames are sent")

    def trace_received(self, frame: Any) -> None:
        if self._trace is not None:
            with self._lock:
                self._record("recv", frame)

    def _record(self, direction: str, frame: Any) -> None:
        if self._trace is None:
            return
        record = json.dumps({"ext": self._name, "dir": direction, "frame": frame}, ensure_ascii=False)
        try:
            os.write(self._trace, (record + "\n").encode("utf-8"))
        except OSError:
            self._trace = None

    def close(self) -> None:
        with self._lock:
            self.closed = True
            if self._trace is not None:
                os.close(self._trace)
                self._trace = None


class Extension:
    """One zot extension. Register handlers with the decorators, then call `run`.

    >>> ext = Extension("hello", "1.0.0")
    >>> @ext.command("hi", "say hi")
    ... def hi(args: str) -> Response:
    ...     return display("hi " + args)
    """

    def __init__(
        self,
        name: str,
        version: str = "",
        *,
        capabilities: Optional[Sequence[str]] = None,
    ) -> None:
        if not name or not isinstance(name, str):
            raise ValueError('an extension needs a name (the manifest\'s "name")')
        self.name = name
        self.version = version
        self.capabilities = (
            list(capabilities) if capabilities is not None else ["commands", "tools", "events", "panels"]
        )
        self._host = HostInfo()
        self._lock = threading.RLock()
        # Registrations as (register frame, handler); commands keyed by lower-case name.
        self._commands: Dict[str, Tuple[Dict[str, Any], CommandHandler]] = {}
        self._tools: Dict[str, Tuple[Dict[str, Any], ToolHandler]] = {}
        self._events: Dict[str, List[EventHandler]] = {}
        self._intercepts: Dict[str, Callable[..., Any]] = {}
        self._hello_handlers: List[Callable[[HostInfo], None]] = []
        self._shutdown_handlers: List[Callable[[], None]] = []
        self._panel_keys: Dict[Optional[str], Callable[[PanelKey], None]] = {}
        self._panel_closes: Dict[Optional[str], Callable[[str], None]] = {}
        self._wire: Optional[_Wire] = None
        self._announced = False
        self._started = False
        self._ordered: "queue.Queue[Optional[Callable[[], None]]]" = queue.Queue()
        self._shutdown_requested = False

    # ------------------------------------------------------------ host info

    @property
    def host(self) -> HostInfo:
        """What the host sent in ``hello_ack`` (all empty before that)."""
        return self._host

    # ------------------------------------------------------------ registration

    @overload
    def command(self, name: F) -> F: ...

    @overload
    def command(self, name: Optional[str] = None, description: Optional[str] = None) -> Callable[[F], F]: ...

    def command(self, name: Any = None, description: Optional[str] = None) -> Any:
        """Register a slash command. The handler gets the argument string and
        returns a `Response` (``prompt``/``insert``/``display``/``open_panel``/
        ``noop``/``error``), a ``str`` (shown as ``display``) or ``None`` (noop).
        Name and description default to the function's name and docstring,
        so a bare ``@ext.command`` works too."""
        if callable(name):
            return self.command()(name)

        def register(fn: F) -> F:
            cmd = name if name is not None else fn.__name__
            if not isinstance(cmd, str) or not _COMMAND_NAME.fullmatch(cmd):
                raise ValueError(
                    f"command name {cmd!r}: use letters, digits, '_' or '-' (what zot recognises after '/')"
                )
            frame: Dict[str, Any] = {"type": "register_command", "name": cmd}
            desc = description if description is not None else _doc_line(fn)
            if desc:
                frame["description"] = desc
            with self._lock:
                if cmd.lower() in self._commands:
                    raise ValueError(f"command {cmd!r} is already registered (names ignore case)")
                self._commands[cmd.lower()] = (frame, fn)
                self._announce_late(frame)
            return fn

        return register

    @overload
    def tool(self, name: F) -> F: ...

    @overload
    def tool(
        self,
        name: Optional[str] = None,
        description: Optional[str] = None,
        schema: Optional[Dict[str, Any]] = None,
        *,
        deferred: bool = False,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        name: Any = None,
        description: Optional[str] = None,
        schema: Optional[Dict[str, Any]] = None,
        *,
        deferred: bool = False,
    ) -> Any:
        """Register a tool the model can call. ``schema`` is the JSON Schema
        object of its arguments (default: an object with no properties). A
        ``deferred`` tool stays hidden until a tool result activates it.
        The handler gets the parsed arguments and returns a `ToolResult`,
        a ``str``, blocks, or any JSON value (sent as JSON text). Name and
        description default to the function's name and docstring."""
        if callable(name):
            return self.tool()(name)

        def register(fn: F) -> F:
            tool_name = name if name is not None else fn.__name__
            if not isinstance(tool_name, str) or not _TOOL_NAME.fullmatch(tool_name):
                raise ValueError(
                    f"tool name {tool_name!r}: use 1-64 letters, digits, '_' or '-' (model APIs' rule)"
                )
            tool_schema = schema if schema is not None else {"type": "object", "properties": {}}
            if not isinstance(tool_schema, dict):
                raise ValueError(f"tool {tool_name!r}: schema must be a dict (a JSON Schema object)")
            try:
                json.dumps(tool_schema, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise ValueError(f"tool {tool_name!r}: schema is not JSON: {e}") from None
            frame: Dict[str, Any] = {"type": "register_tool", "name": tool_name}
            desc = description if description is not None else _doc_line(fn)
            if desc:
                frame["description"] = desc
            frame["schema"] = tool_schema
            if deferred:
                frame["deferred"] = True
            with self._lock:
                if tool_name in self._tools:
                    raise ValueError(f"tool {tool_name!r} is already registered")
                self._tools[tool_name] = (frame, fn)
                self._announce_late(frame)
            return fn

        return register

    def on(self, *events: str) -> Callable[[F], F]:
        """Observe lifecycle events (``session_start``, ``turn_start``,
        ``turn_end``, ``tool_call``, ``tool_confirmation_requested``,
        ``assistant_message``). Handlers get an `Event` and run in order."""
        if not events:
            raise ValueError("name at least one event")
        if callable(events[0]):
            raise TypeError('name the events: @ext.on("turn_start", ...)')
        for event in events:
            if event not in EVENT_NAMES:
                raise ValueError(f"unknown event {event!r}; known: {', '.join(EVENT_NAMES)}")

        def register(fn: F) -> F:
            with self._lock:
                new = [e for e in events if e not in self._events]
                for event in events:
                    self._events.setdefault(event, []).append(fn)
                if new:
                    self._announce_late({"type": "subscribe", "events": new})
            return fn

        return register

    def intercept_tool_call(self, fn: F) -> F:
        """Decide on every tool call before it runs. The handler gets a
        `ToolCall` and returns ``allow()``/``None``, ``block(reason)`` or
        ``rewrite(args)``."""
        return self._intercept("tool_call", fn)

    def intercept_turn_start(self, fn: F) -> F:
        """Decide before each model call. The handler gets the step number
        and returns ``allow()``/``None`` or ``block(reason)``."""
        return self._intercept("turn_start", fn)

    def intercept_assistant_message(self, fn: F) -> F:
        """Decide on the assistant's final text. The handler gets the text and
        returns ``allow()``/``None``, ``block(reason)``, ``replace_text(new)``
        or a plain ``str`` (the replacement)."""
        return self._intercept("assistant_message", fn)

    def before_agent_start(self, fn: F) -> F:
        """Replace the complete system prompt before the first model call.
        The handler gets a `BeforeAgentStart` and returns the new prompt
        (``""`` removes it) or ``None`` to keep it."""
        return self._intercept("before_agent_start", fn)

    def on_hello(self, fn: F) -> F:
        """Run ``fn(host_info)`` after ``hello_ack``; registrations it makes are
        announced before ``ready``. Keep it quick: the host takes 250 ms of
        silence without ``ready`` as ready."""
        with self._lock:
            self._hello_handlers.append(fn)
        return fn

    def on_shutdown(self, fn: F) -> F:
        """Run ``fn()`` when the host shuts the extension down (or goes away)."""
        with self._lock:
            self._shutdown_handlers.append(fn)
        return fn

    def on_panel_key(self, panel_id: Optional[str] = None) -> Callable[[F], F]:
        """Handle keys for ``panel_id`` (or, without one, for any panel that has
        no handler of its own). The handler gets a `PanelKey`."""

        def register(fn: F) -> F:
            with self._lock:
                self._panel_keys[panel_id] = fn
            return fn

        return register

    def on_panel_close(self, panel_id: Optional[str] = None) -> Callable[[F], F]:
        """Handle the user closing ``panel_id`` (or any panel without a handler
        of its own). The handler gets the panel id."""

        def register(fn: F) -> F:
            with self._lock:
                self._panel_closes[panel_id] = fn
            return fn

        return register

    def _intercept(self, kind: str, fn: F) -> F:
        with self._lock:
            if kind in self._intercepts:
                raise ValueError(f"a {kind} interceptor is already registered")
            self._intercepts[kind] = fn
            self._announce_late({"type": "subscribe", "intercept": [kind]})
        return fn

    def _announce_late(self, frame: Dict[str, Any]) -> None:
        """After ``ready``, a new registration is sent at once (the host
        accepts registrations and subscriptions at any time)."""
        if self._announced:
            self._send(frame)

    # ------------------------------------------------------------ talking to the host

    def notify(self, level: str, message: str) -> None:
        """Show a one-shot note (``info``, ``success``, ``warn`` or ``error``)."""
        if level == "warning":
            level = "warn"
        if level not in NOTIFY_LEVELS:
            raise ValueError(f"notify level {level!r} is not one of {', '.join(NOTIFY_LEVELS)}")
        self._send({"type": "notify", "level": level, "message": str(message)})

    def clear_notes(self) -> None:
        """Remove every note this extension showed."""
        self._send({"type": "clear_notes"})

    def submit(self, text: str) -> None:
        """Submit ``text`` as a user prompt (interactive zot only)."""
        self._send({"type": "submit", "text": text})

    def render_panel(
        self,
        panel_id: str,
        title: Optional[str] = None,
        lines: Sequence[str] = (),
        footer: Optional[str] = None,
    ) -> None:
        """Redraw an open panel."""
        frame: Dict[str, Any] = {"type": "panel_render", "panel_id": panel_id}
        if title is not None:
            frame["title"] = title
        if lines:
            frame["lines"] = [str(line) for line in lines]
        if footer is not None:
            frame["footer"] = footer
        self._send(frame)

    def close_panel(self, panel_id: str) -> None:
        """Close one of this extension's panels."""
        self._send({"type": "panel_close", "panel_id": panel_id})

    def log(self, message: str) -> None:
        """Write ``[name] message`` to stderr, which zot keeps in the extension's log."""
        stream = sys.stderr
        try:
            stream.write(f"[{self.name}] {message}\n")
            stream.flush()
        except (OSError, ValueError):
            pass

    def _send(self, frame: Dict[str, Any]) -> None:
        wire = self._wire
        if wire is None:
            raise RuntimeError(
                f"{frame['type']}: not connected; call this from a handler or once run() has started"
            )
        wire.send(frame)

    # ------------------------------------------------------------ running

    def run(self, stdin: Optional[IO[Any]] = None, stdout: Optional[IO[bytes]] = None) -> None:
        """Speak the protocol until the host sends ``shutdown`` or closes stdin.

        Sends ``hello``, waits for ``hello_ack``, runs the ``on_hello``
        handlers, announces every registration and one ``subscribe``, sends
        ``ready``, then dispatches host frames. With the default streams,
        ``sys.stdout`` is pointed at stderr while running, so a stray
        ``print`` lands in the log instead of corrupting the protocol."""
        self._claim_start("run()")
        reader = stdin if stdin is not None else _binary(sys.stdin, 0, "rb")
        saved_stdout = None
        if stdout is None:
            sys.stdout.flush()
            stdout = _binary(sys.stdout, 1, "wb")
            saved_stdout, sys.stdout = sys.stdout, sys.stderr
        try:
            self._session(reader, stdout)
        finally:
            if saved_stdout is not None:
                sys.stdout = saved_stdout

    def _claim_start(self, what: str) -> None:
        with self._lock:
            if self._started:
                raise RuntimeError(f"{what}: this extension is already running")
            self._started = True

    def _session(self, reader: IO[Any], out: IO[bytes]) -> None:
        """One connection to a host, whatever carries it: ``reader.readline()``
        yields one frame (``""`` at the end), ``out.write`` takes one encoded
        frame. Stdio and the WebSocket server (`zot_ext.websocket`) both run
        the protocol through here."""
        with self._lock:
            self._announced = False
            self._shutdown_requested = False
            self._host = HostInfo()
            self._ordered = queue.Queue()
            self._wire = _Wire(out, self.name, self.log)
        worker = threading.Thread(target=self._ordered_loop, name=f"{self.name}-events", daemon=True)
        try:
            hello: Dict[str, Any] = {"type": "hello", "name": self.name}
            if self.version:
                hello["version"] = self.version
            if self.capabilities:
                hello["capabilities"] = self.capabilities
            self._send(hello)
            if not self._await_hello_ack(reader):
                self.log("the host went away before hello_ack")
                return
            for on_hello in list(self._hello_handlers):
                try:
                    on_hello(self._host)
                except Exception:
                    self._log_exception("on_hello handler")
            self._announce()
            worker.start()
            self._read_loop(reader)
        except KeyboardInterrupt:
            pass
        finally:
            if worker.is_alive():
                self._ordered.put(None)
                worker.join(EVENT_DRAIN_SECONDS)
            for on_shutdown in list(self._shutdown_handlers):
                try:
                    on_shutdown()
                except Exception:
                    self._log_exception("on_shutdown handler")
            if self._shutdown_requested:
                try:
                    self._send({"type": "shutdown_ack"})
                except (RuntimeError, ValueError):
                    pass
            self._wire.close()

    def _lines(self, reader: IO[Any]) -> Iterator[Dict[str, Any]]:
        """Yields each host frame as a dict; malformed lines are logged and skipped."""
        while True:
            try:
                line = reader.readline()
            except (OSError, ValueError) as e:
                self.log(f"cannot read from the host: {e}")
                return
            if not line:
                return
            if isinstance(line, bytes):
                try:
                    line = line.decode("utf-8")
                except UnicodeDecodeError as e:
                    self.log(f"skipping a host frame that is not UTF-8: {e}")
                    continue
            if not line.strip():
                continue
            try:
                frame = json.loads(line)
            except ValueError as e:
                self.log(f"skipping malformed host frame ({e}): {line.strip()[:200]}")
                continue
            if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
                self.log(f'skipping host frame without a "type": {line.strip()[:200]}')
                continue
            if self._wire is not None:
                self._wire.trace_received(frame)
            yield frame

    def _await_hello_ack(self, reader: IO[Any]) -> bool:
        for frame in self._lines(reader):
            if frame["type"] == "hello_ack":
                self._host = HostInfo.from_frame(frame)
                if self._host.protocol_version not in (0, PROTOCOL_VERSION):
                    version = self._host.protocol_version
                    self.log(f"host speaks protocol {version}, this SDK {PROTOCOL_VERSION}; carrying on")
                return True
            if frame["type"] == "shutdown":
                self._shutdown_requested = True
                return False
            self.log(f"ignoring {frame['type']!r} before hello_ack")
        return False

    def _announce(self) -> None:
        """Every registration, one ``subscribe`` (only kinds with handlers), ``ready``."""
        with self._lock:
            for frame, _ in [*self._commands.values(), *self._tools.values()]:
                self._send(frame)
            subscribe: Dict[str, Any] = {"type": "subscribe"}
            if self._events:
                subscribe["events"] = list(self._events)
            if self._intercepts:
                subscribe["intercept"] = list(self._intercepts)
            if len(subscribe) > 1:
                self._send(subscribe)
            self._send({"type": "ready"})
            self._announced = True

    def _read_loop(self, reader: IO[Any]) -> None:
        for frame in self._lines(reader):
            kind = frame["type"]
            if kind == "shutdown":
                self._shutdown_requested = True
                return
            if kind == "command_invoked":
                self._spawn(self._handle_command, frame)
            elif kind == "tool_call":
                self._spawn(self._handle_tool, frame)
            elif kind == "event_intercept":
                self._spawn(self._handle_intercept, frame)
            elif kind == "event":
                self._ordered.put(functools.partial(self._handle_event, frame))
            elif kind == "panel_key":
                self._ordered.put(functools.partial(self._handle_panel_key, frame))
            elif kind == "panel_close":
                self._ordered.put(functools.partial(self._handle_panel_close, frame))
            elif kind == "hello_ack":
                self._host = HostInfo.from_frame(frame)
            else:
                self.log(f"skipping unknown host frame type {kind!r}")

    def _spawn(self, target: Callable[[Dict[str, Any]], None], frame: Dict[str, Any]) -> None:
        threading.Thread(
            target=target, args=(frame,), name=f"{self.name}-{frame['type']}", daemon=True
        ).start()

    def _ordered_loop(self) -> None:
        while True:
            job = self._ordered.get()
            if job is None:
                return
            job()

    def _log_exception(self, what: str) -> None:
        self.log(f"{what} raised:\n{traceback.format_exc().rstrip()}")

    def _reply(self, frame: Dict[str, Any], fallback: Callable[[str], Dict[str, Any]]) -> None:
        """Sends a reply; if it cannot be encoded, sends ``fallback(problem)`` instead."""
        try:
            self._send(frame)
        except (TypeError, ValueError) as e:
            self.log(f"cannot send {frame['type']}: {e}")
            self._send(fallback(f"{frame['type']} could not be sent: {e}"))

    # ------------------------------------------------------------ dispatch

    def _handle_command(self, frame: Dict[str, Any]) -> None:
        id_ = _field(frame, "id")
        name = _field(frame, "name")
        args = _field(frame, "args")
        entry = self._commands.get(name.lower())
        if entry is None:
            response = error(f"no handler for /{name}")
        else:
            try:
                response = _as_response(entry[1](args))
            except Exception as e:
                self._log_exception(f"command /{name}")
                response = error(_describe(e))
        self._reply(response.to_frame(id_), lambda problem: error(problem).to_frame(id_))

    def _handle_tool(self, frame: Dict[str, Any]) -> None:
        id_ = _field(frame, "id")
        name = _field(frame, "name")
        entry = self._tools.get(name)
        if entry is None:
            result = ToolResult.error(f'no handler for tool "{name}"')
        else:
            args = frame.get("args")
            try:
                result = _as_tool_result(entry[1]({} if args is None else args))
            except Exception as e:
                self._log_exception(f"tool {name}")
                result = ToolResult.error(_describe(e))
        self._reply(result.to_frame(id_), lambda problem: ToolResult.error(problem).to_frame(id_))

    def _handle_intercept(self, frame: Dict[str, Any]) -> None:
        id_ = _field(frame, "id")
        kind = _field(frame, "event")
        fn = self._intercepts.get(kind)
        reply: Dict[str, Any] = {"type": "event_intercept_response", "id": id_}
        if fn is not None:
            try:
                reply.update(self._decide(kind, fn, frame))
            except Exception:
                # The host fails open; so does the SDK: a broken interceptor allows.
                self._log_exception(f"{kind} interceptor (allowing)")
                reply = {"type": "event_intercept_response", "id": id_}
        self._reply(reply, lambda _problem: {"type": "event_intercept_response", "id": id_})

    def _decide(self, kind: str, fn: Callable[..., Any], frame: Dict[str, Any]) -> Dict[str, Any]:
        if kind == "before_agent_start":
            prompt = fn(BeforeAgentStart.from_frame(frame))
            if prompt is None:
                return {}
            if not isinstance(prompt, str):
                raise TypeError(f"before_agent_start must return str or None, not {type(prompt).__name__}")
            return {"system_prompt": prompt}
        if kind == "tool_call":
            call = ToolCall(_field(frame, "tool_id"), _field(frame, "tool_name"), frame.get("tool_args"))
            decision = fn(call)
        elif kind == "turn_start":
            step = frame.get("step")
            decision = fn(step if isinstance(step, int) else 0)
        elif kind == "assistant_message":
            decision = fn(_field(frame, "text"))
            if isinstance(decision, str):
                decision = Decision(replace_text=decision)
        else:
            return {}
        if decision is None:
            return {}
        if not isinstance(decision, Decision):
            raise TypeError(
                f"{kind} interceptor must return a Decision or None, not {type(decision).__name__}"
            )
        return self._decision_fields(kind, decision, frame)

    def _decision_fields(self, kind: str, decision: Decision, frame: Dict[str, Any]) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        if decision.reason:
            out["reason"] = decision.reason
        if decision.block:
            out["block"] = True
            return out
        if decision.modified_args is not None:
            if kind != "tool_call":
                self.log(f"{kind} interceptor: modified_args only applies to tool_call; ignored")
            elif not isinstance(decision.modified_args, dict):
                self.log("tool_call interceptor: modified_args must be a dict; ignored")
            elif decision.modified_args != frame.get("tool_args"):
                out["modified_args"] = decision.modified_args
        if decision.replace_text is not None:
            if kind != "assistant_message":
                self.log(f"{kind} interceptor: replace_text only applies to assistant_message; ignored")
            elif decision.replace_text != frame.get("text"):
                out["replace_text"] = decision.replace_text
        return out

    def _handle_event(self, frame: Dict[str, Any]) -> None:
        event = Event.from_frame(frame)
        for fn in list(self._events.get(event.name, ())):
            try:
                fn(event)
            except Exception:
                self._log_exception(f"{event.name} event handler")

    def _handle_panel_key(self, frame: Dict[str, Any]) -> None:
        panel_id = _field(frame, "panel_id")
        fn = self._panel_keys.get(panel_id) or self._panel_keys.get(None)
        if fn is None:
            self.log(f"panel_key for {panel_id!r} has no handler")
            return
        text = frame.get("text")
        try:
            fn(PanelKey(panel_id, _field(frame, "key"), text if isinstance(text, str) else None))
        except Exception:
            self._log_exception(f"panel {panel_id!r} key handler")

    def _handle_panel_close(self, frame: Dict[str, Any]) -> None:
        panel_id = _field(frame, "panel_id")
        fn = self._panel_closes.get(panel_id) or self._panel_closes.get(None)
        if fn is None:
            return
        try:
            fn(panel_id)
        except Exception:
            self._log_exception(f"panel {panel_id!r} close handler")


# ---------------------------------------------------------------- helpers


def _binary(stream: Any, fd: int, mode: str) -> IO[Any]:
    """The binary side of a standard stream, or the file descriptor itself
    when the stream was replaced by one without a buffer."""
    buffer = getattr(stream, "buffer", None)
    return buffer if buffer is not None else open(fd, mode, closefd=False)


def _field(frame: Dict[str, Any], key: str) -> str:
    """A string field of a host frame; "" when missing or not a string."""
    value = frame.get(key)
    return value if isinstance(value, str) else ""


def _doc_line(fn: Callable[..., Any]) -> str:
    doc = (fn.__doc__ or "").strip()
    return doc.splitlines()[0].strip() if doc else ""


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def _as_response(value: Any) -> Response:
    if isinstance(value, Response):
        return value
    if value is None:
        return noop()
    if isinstance(value, str):
        return display(value)
    return error(f"command handler returned {type(value).__name__}, not a Response")


def _as_tool_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult()
    if isinstance(value, str):
        return ToolResult.text(value)
    if isinstance(value, (TextBlock, ImageBlock)):
        return ToolResult([value])
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, (TextBlock, ImageBlock)) for v in value)
    ):
        blocks: List[Block] = list(value)
        return ToolResult(blocks)
    return ToolResult.text(json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False))
