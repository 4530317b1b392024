"""Serving an extension over WebSocket, for zot's remote extensions (a
manifest with ``"url": "ws://…"`` or ``"wss://…"``).

Needs the ``websockets`` package: ``pip install 'zot-ext[websocket]'``. The
rest of the SDK stays standard library only, so this module imports it
lazily. The protocol is the same as over stdio, through the same dispatch
(`Extension._session`); only the framing differs: one frame per text message.
"""

from __future__ import annotations

import hmac
import http
import threading
from typing import TYPE_CHECKING, Any, Optional, Union

from .extension import MAX_FRAME_BYTES

if TYPE_CHECKING:
    from .extension import Extension

__all__ = ["serve_websocket", "BUSY_CLOSE_CODE"]

#: Close code for a second host while one is connected: RFC 6455's registry
#: names 1013 "Try Again Later". An `Extension` has one host at a time (its
#: `host` info, `notify` and panels address that host).
BUSY_CLOSE_CODE = 1013


class _MessageReader:
    """``readline()`` over WebSocket messages: one text message per frame,
    ``""`` once the connection is closed. Binary messages are a protocol
    error on this wire; they are logged and skipped."""

    def __init__(self, conn: Any, ext: "Extension") -> None:
        self._conn = conn
        self._ext = ext

    def readline(self) -> str:
        from websockets.exceptions import ConnectionClosed

        while True:
            try:
                message: Union[str, bytes] = self._conn.recv()
            except ConnectionClosed:
                return ""
            if isinstance(message, bytes):
                self._ext.log(f"skipping a binary message ({len(message)} bytes); frames are text messages")
                continue
            if message.strip():
                return message


class _MessageWriter:
    """Takes one encoded frame per ``write`` (as `_Wire` produces them) and
    sends it as one text message, without the stdio newline."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def write(self, data: bytes) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            self._conn.send(data.rstrip(b"\n").decode("utf-8"))
        except ConnectionClosed as e:
            # _Wire treats OSError as "the host is gone" and stops sending.
            raise OSError(f"the WebSocket connection is closed ({e})") from None

    def flush(self) -> None:
        pass


def serve_websocket(ext: "Extension", host: str, port: int, token: Optional[str] = None) -> None:
    """Serve ``ext`` on ``ws://host:port`` until interrupted (Ctrl-C).

    zot connects to the manifest's ``url``; each connection is one session
    (hello, registrations, dispatch) exactly as over stdio, and a host that
    reconnects says hello again. One host is served at a time; another one
    is closed with `BUSY_CLOSE_CODE`. With ``token``, the upgrade request must
    carry ``Authorization: Bearer <token>`` (the manifest's ``headers``),
    else it is answered ``401``. Pings are answered by ``websockets``. Put
    TLS (``wss://``) in front with a reverse proxy for anything beyond
    loopback."""
    try:
        from websockets.sync.server import serve
    except ImportError:
        raise RuntimeError(
            "serve_websocket needs the websockets package: pip install 'zot-ext[websocket]'"
        ) from None

    ext._claim_start("serve_websocket()")
    expected = f"Bearer {token}".encode("utf-8") if token is not None else None
    busy = threading.Lock()

    def check_token(conn: Any, request: Any) -> Any:
        if expected is None:
            return None
        given = request.headers.get("Authorization", "").encode("utf-8")
        if hmac.compare_digest(given, expected):
            return None
        ext.log("refused a connection: missing or wrong bearer token")
        return conn.respond(http.HTTPStatus.UNAUTHORIZED, "missing or wrong bearer token\n")

    def session(conn: Any) -> None:
        if not busy.acquire(blocking=False):
            conn.close(BUSY_CLOSE_CODE, "this extension is serving another host")
            return
        try:
            ext._session(_MessageReader(conn, ext), _MessageWriter(conn))
        finally:
            conn.close()
            busy.release()

    # The host drops a longer frame (MAX_FRAME_BYTES); accept the same from it.
    with serve(session, host, port, process_request=check_token, max_size=MAX_FRAME_BYTES) as server:
        ext.log(f"serving on ws://{host}:{port}")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
