"""`caldera webhook`: the HTTPS endpoint the apiserver calls with AdmissionReviews.

A thin shell around `admission.rules`, which decides and knows nothing of HTTP. The
stdlib is enough: `ThreadingHTTPServer` with one thread per connection, TLS done in that thread
(a slow handshake never blocks `accept`), `POST /validate` for `admission.k8s.io/v1`
AdmissionReviews and `GET /healthz` for probes. Flags live here, next to the options they fill,
as the forwarder's do, so `caldera webhook` has one definition.

A denial answers `allowed: false` with `status.code` 403 and the rule's message, as Volcano's
webhook does; the apiserver shows it as `admission webhook "<name>" denied the request: <msg>`.
When the queues cannot be read the answer is a denial with code 500: the registration says
`failurePolicy: Fail`, and an object that cannot be checked is not admitted.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any, Final, cast

from admission import lookup, rules
from service import logs

logger = logging.getLogger(__name__)

REVIEW_API: Final = "admission.k8s.io/v1"
DENIED_CODE: Final = 403
MAX_BODY: Final = 3 * 1024 * 1024  # the apiserver's own request limit is 3 MiB
READY_LINE: Final = "webhook serving"  # the dev stack waits for this line in the log


@dataclass(frozen=True)
class Options:
    bind: str = "127.0.0.1"
    port: int = 8443  # 0: the kernel picks one (logged in the ready line)
    cert: str = "tls.crt"
    key: str = "tls.key"
    kubeconfig: str | None = None  # None: $KUBECONFIG, then the in-cluster service account
    max_queue_depth: int = rules.DEFAULT_MAX_DEPTH
    log_format: str = "text"  # service.logs.FORMATS


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bind", default="127.0.0.1", help="listen address (127.0.0.1)")
    p.add_argument("--port", type=int, default=8443, help="HTTPS port (8443; 0 = any free)")
    p.add_argument("--cert", required=True, help="serving certificate (PEM)")
    p.add_argument("--key", required=True, help="its private key (PEM)")
    p.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"), help="$KUBECONFIG")
    p.add_argument(
        "--max-queue-depth",
        type=int,
        default=rules.DEFAULT_MAX_DEPTH,
        help=f"queue levels allowed below root ({rules.DEFAULT_MAX_DEPTH})",
    )
    p.add_argument("--log-level", default="INFO")
    logs.add_arguments(p)


def options_from(args: argparse.Namespace) -> Options:
    return Options(
        bind=args.bind,
        port=args.port,
        cert=args.cert,
        key=args.key,
        kubeconfig=args.kubeconfig,
        max_queue_depth=args.max_queue_depth,
        log_format=args.log_format,
    )


def answer(review: Mapping[str, object], queues: rules.Lookup, max_depth: int) -> dict[str, Any]:
    """The AdmissionReview to send back: same uid, the verdict, and 403 + message on denial."""
    request = review.get("request")
    request = request if isinstance(request, Mapping) else {}
    uid = request.get("uid", "")
    try:
        verdict = rules.review(request, queues, max_depth)
        code = DENIED_CODE
    except lookup.LookupFailed as e:
        verdict, code = rules.Verdict(allowed=False, message=f"caldera admission: {e}"), 500
    except Exception as e:  # a bug must still answer: refused, with the error named
        logger.exception("review failed uid=%s", uid)
        message = f"caldera admission: internal error: {e!r}"
        verdict, code = rules.Verdict(allowed=False, message=message), 500
    response: dict[str, Any] = {"uid": uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        response["status"] = {"code": code, "message": verdict.message}
    _log(request, verdict)
    return {"apiVersion": REVIEW_API, "kind": "AdmissionReview", "response": response}


def _log(request: Mapping[str, Any], verdict: rules.Verdict) -> None:
    resource = request.get("resource")
    resource = resource if isinstance(resource, Mapping) else {}
    keys = (
        f"operation={request.get('operation')} resource={resource.get('resource')} "
        f"namespace={request.get('namespace', '')} name={request.get('name', '')}"
    )
    if verdict.allowed:
        logger.debug("admitted %s", keys)
    else:
        logger.info("denied %s message=%r", keys, verdict.message)


class _Server(ThreadingHTTPServer):
    """One thread per connection; TLS is wrapped inside that thread, not in `accept`."""

    daemon_threads = True  # a stuck connection never holds the process at shutdown

    def __init__(self, options: Options, queues: rules.Lookup, context: ssl.SSLContext) -> None:
        super().__init__((options.bind, options.port), _Handler)
        self.queues = queues
        self.max_depth = options.max_queue_depth
        self.context = context

    def finish_request(self, request: Any, client_address: Any) -> None:
        sock = cast(socket.socket, request)
        sock.settimeout(_Handler.timeout)
        try:
            tls = self.context.wrap_socket(sock, server_side=True)
        except (ssl.SSLError, OSError) as e:
            logger.debug("handshake failed peer=%s error=%s", client_address, e)
            return
        super().finish_request(tls, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the apiserver reuses its connections
    timeout = 30  # seconds a connection may sit idle or a handshake may take

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self._send(HTTPStatus.OK, b"ok", "text/plain")
        else:
            self._send(HTTPStatus.NOT_FOUND, b"not found", "text/plain")

    def do_POST(self) -> None:
        if self.path.split("?")[0] != "/validate":
            self._send(HTTPStatus.NOT_FOUND, b"not found", "text/plain")
            return
        declared = self.headers.get("Content-Length") or "0"
        length = int(declared) if declared.isdigit() else 0
        if not 0 < length <= MAX_BODY:
            self._send(HTTPStatus.BAD_REQUEST, b"an AdmissionReview body is required", "text/plain")
            return
        try:
            review = json.loads(self.rfile.read(length))
        except ValueError:
            self._send(HTTPStatus.BAD_REQUEST, b"the body is not JSON", "text/plain")
            return
        if not isinstance(review, dict) or not isinstance(review.get("request"), dict):
            self._send(HTTPStatus.BAD_REQUEST, b"not an AdmissionReview request", "text/plain")
            return
        server = cast(_Server, self.server)
        body = json.dumps(answer(review, server.queues, server.max_depth)).encode()
        self._send(HTTPStatus.OK, body, "application/json")

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("http %s", format % args)


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["http/1.1"])  # no h2: the stdlib server speaks HTTP/1.1
    return context


def serve(
    options: Options, log_level: str = "INFO", on_stop: Callable[[], None] | None = None
) -> int:
    """Serve until SIGTERM or SIGINT; logs READY_LINE once the socket listens.

    on_stop (None: nothing to do) runs on the first signal while requests are still answered,
    then the server stops; a second signal exits at once.
    """
    logs.setup(log_level, options.log_format)
    fresh = lookup.ApiLookup(lookup.new_api(options.kubeconfig))
    # Its own client: the watch holds a connection the reviews' reads must not wait for.
    queues = lookup.CachedLookup(lookup.new_api(options.kubeconfig), fresh)
    queues.start()
    server = _Server(options, queues, tls_context(options.cert, options.key))
    stopping = threading.Event()

    def stop() -> None:
        try:
            if on_stop is not None:
                on_stop()
        except Exception:
            logger.exception("stop hook failed")
        finally:
            server.shutdown()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        logger.info("stopping signal=%s", signal.Signals(signum).name)
        if stopping.is_set():
            raise SystemExit(1)
        stopping.set()
        # shutdown() waits for serve_forever, which runs in this (the main) thread: stop from
        # another thread, and keep answering while on_stop withdraws the registration.
        threading.Thread(target=stop, name="stop", daemon=True).start()

    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, on_signal)
    host, port = server.server_address[:2]
    logger.info(
        "%s address=https://%s:%s max_queue_depth=%d",
        READY_LINE,
        host,
        port,
        options.max_queue_depth,
    )
    try:
        server.serve_forever()
    finally:
        server.server_close()
        queues.stop()
    logger.info("stopped")
    return 0
