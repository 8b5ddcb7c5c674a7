"""`caldera codec-server`: decrypt (and encrypt) payloads for the Temporal UI and CLI.

Temporal's codec server protocol: `POST <endpoint>/decode` and `POST <endpoint>/encode` take
and return JSON `{"payloads": [{"metadata": {"encoding": "<base64>"}, "data": "<base64>"}]}`
(protobuf JSON of `temporal.api.common.v1.Payloads`). The UI calls it from the browser, so
the answer carries CORS headers for the UI's origin (`--ui-origin`), and preflight `OPTIONS`
requests are answered without authentication (browsers send no credentials on them).

Authorisation: with `CALDERA_CODEC_TOKEN` set, every encode/decode needs
`Authorization: Bearer <token>` (`temporal ... --codec-auth "Bearer <token>"`). The UI never
sends that token: it sends the signed-in user's own access token as the Authorization header
("pass the user access token") and the browser's credentials ("include cross-origin
credentials"). In production an authenticating proxy in front of this server checks that
user, and this server stays on loopback or a private network.

The stdlib server is enough (one thread per request, as `caldera webhook`); the codec's sync
methods do the work in the request thread.
"""

from __future__ import annotations

import argparse
import hmac
import json
import logging
import os
import signal
import threading
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Final

from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads

from service import codec

logger = logging.getLogger(__name__)

TOKEN_ENV: Final = "CALDERA_CODEC_TOKEN"
DEFAULT_UI_ORIGIN: Final = "http://localhost:8233"
DEFAULT_PORT: Final = 8081
MAX_BODY: Final = 8 * 1024 * 1024  # a 2 MB payload limit, base64, a few payloads at once
READY_LINE: Final = "codec server serving"
ALLOWED_HEADERS: Final = "Authorization, Content-Type, X-Namespace"


@dataclass(frozen=True)
class Options:
    bind: str = "127.0.0.1"
    port: int = DEFAULT_PORT  # 0: the kernel picks one (logged in the ready line)
    ui_origins: tuple[str, ...] = (DEFAULT_UI_ORIGIN,)
    token: str | None = field(default=None, repr=False)  # None: no token asked for


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bind", default="127.0.0.1", help="listen address (127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port ({DEFAULT_PORT})")
    p.add_argument(
        "--ui-origin",
        action="append",
        dest="ui_origins",
        help=f"browser origin of the Temporal UI allowed by CORS, repeatable ({DEFAULT_UI_ORIGIN})",
    )
    p.add_argument("--log-level", default="INFO")


def options_from(args: argparse.Namespace) -> Options:
    return Options(
        bind=args.bind,
        port=args.port,
        ui_origins=tuple(args.ui_origins or (DEFAULT_UI_ORIGIN,)),
        token=os.environ.get(TOKEN_ENV) or None,
    )


def _convert(body: bytes, encode: bool, payload_codec: codec.EncryptionCodec) -> bytes:
    message = Payloads()
    json_format.Parse(body, message)
    convert = payload_codec.encode_sync if encode else payload_codec.decode_sync
    done: list[Payload] = convert(list(message.payloads))
    return json_format.MessageToJson(Payloads(payloads=done)).encode()


def _handler(
    options: Options, payload_codec: codec.EncryptionCodec
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            logger.debug("%s " + format, self.address_string(), *args)

        def _cors(self) -> None:
            origin = self.headers.get("Origin")
            if origin is not None and origin in options.ui_origins:
                self.send_header("Access-Control-Allow-Origin", origin)
                self.send_header("Access-Control-Allow-Credentials", "true")
                self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS")
                self.send_header("Access-Control-Allow-Headers", ALLOWED_HEADERS)
                self.send_header("Access-Control-Max-Age", "600")
            self.send_header("Vary", "Origin")

        def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self._cors()
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            if status == HTTPStatus.UNAUTHORIZED:
                self.send_header("WWW-Authenticate", 'Bearer realm="caldera-codec"')
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status: HTTPStatus, message: str) -> None:
            self._send(status, json.dumps({"error": message}).encode(), "application/json")

        def _authorised(self) -> bool:
            if options.token is None:
                return True
            given = self.headers.get("Authorization", "")
            return hmac.compare_digest(given.encode(), f"Bearer {options.token}".encode())

        def do_OPTIONS(self) -> None:
            self._send(HTTPStatus.NO_CONTENT, b"", "text/plain")

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/healthz", "/readyz"):
                self._send(HTTPStatus.OK, b"ok\n", "text/plain")
            else:
                self._error(HTTPStatus.NOT_FOUND, "not found")

        def do_POST(self) -> None:
            # Any prefix: a proxy may serve this under /codec/decode and pass the path on.
            path = self.path.split("?", 1)[0].rstrip("/")
            encode = path.endswith("/encode")
            if not (encode or path.endswith("/decode")):
                self._error(HTTPStatus.NOT_FOUND, "POST /encode or /decode")
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self.close_connection = True
                self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body over {MAX_BODY} bytes")
                return
            body = self.rfile.read(length)
            if not self._authorised():
                logger.warning("codec request refused: bad or missing bearer token")
                self._error(HTTPStatus.UNAUTHORIZED, "a valid bearer token is required")
                return
            try:
                answer = _convert(body, encode, payload_codec)
            except json_format.ParseError as e:
                self._error(HTTPStatus.BAD_REQUEST, f'expected {{"payloads": [...]}}: {e}')
                return
            except codec.CodecError as e:
                self._error(HTTPStatus.BAD_REQUEST, str(e))
                return
            logger.debug("%s namespace=%s", path, self.headers.get("X-Namespace", ""))
            self._send(HTTPStatus.OK, answer, "application/json")

    return Handler


def make_server(options: Options, keys: codec.CodecKeys) -> ThreadingHTTPServer:
    """Bound and ready to `serve_forever`; `server_address` has the real port."""
    server = ThreadingHTTPServer(
        (options.bind, options.port), _handler(options, codec.EncryptionCodec(keys))
    )
    server.daemon_threads = True
    return server


def serve(options: Options, log_level: str = "INFO") -> int:
    """Run until SIGTERM or SIGINT; refuses to start without a codec key."""
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    try:
        keys = codec.keys_from_env()
    except codec.CodecError as e:
        logger.error("%s", e)
        return 2
    if keys is None:
        logger.error("%s is not set: there is nothing to encode or decode with", codec.KEY_ENV)
        return 2
    server = make_server(options, keys)

    def stop(signum: int, frame: FrameType | None) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, stop)
    host, port = server.server_address[:2]
    logger.info(
        "%s on http://%s:%s key_id=%s keys=%d ui_origins=%s token=%s",
        READY_LINE,
        host,
        port,
        keys.active,
        len(keys.keys),
        ",".join(options.ui_origins),
        "required" if options.token else "not required",
    )
    with server:
        server.serve_forever()
    logger.info("codec server stopped")
    return 0
