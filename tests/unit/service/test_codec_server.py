"""`caldera codec-server` over real HTTP on loopback, as the Temporal UI and CLI call it."""

from __future__ import annotations

import base64
import json
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload

from service import codec, codec_server

UI = "http://localhost:8233"


def _keys(key_id: str = "k1") -> codec.CodecKeys:
    key = base64.b64encode(os.urandom(32)).decode()
    keys = codec.keys_from_env({"CALDERA_CODEC_KEY": key, "CALDERA_CODEC_KEY_ID": key_id})
    assert keys is not None
    return keys


def _serve(options: codec_server.Options, keys: codec.CodecKeys) -> Iterator[str]:
    server = codec_server.make_server(options, keys)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


KEYS = _keys()


@pytest.fixture
def open_server() -> Iterator[str]:
    yield from _serve(codec_server.Options(port=0), KEYS)


@pytest.fixture
def token_server() -> Iterator[str]:
    yield from _serve(codec_server.Options(port=0, token="s3cret"), KEYS)


def _call(
    url: str, body: bytes | None, headers: dict[str, str] | None = None, method: str = "POST"
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def _wire(payloads: list[Payload]) -> bytes:
    """The JSON the UI sends: metadata values and data in base64."""
    return json.dumps(
        {
            "payloads": [
                {
                    "metadata": {k: base64.b64encode(v).decode() for k, v in p.metadata.items()},
                    "data": base64.b64encode(p.data).decode(),
                }
                for p in payloads
            ]
        }
    ).encode()


def _payloads(body: bytes) -> list[Payload]:
    doc: dict[str, Any] = json.loads(body)
    return [
        Payload(
            metadata={k: base64.b64decode(v) for k, v in p.get("metadata", {}).items()},
            data=base64.b64decode(p.get("data", "")),
        )
        for p in doc["payloads"]
    ]


PLAIN = Payload(metadata={"encoding": b"json/plain"}, data=b'{"queue": "default"}')
JSON = {"Content-Type": "application/json"}


def test_decode_shows_what_a_caldera_process_encrypted(open_server: str) -> None:
    encrypted = codec.EncryptionCodec(KEYS).encode_sync([PLAIN, PLAIN])
    status, headers, body = _call(f"{open_server}/decode", _wire(encrypted), JSON)
    assert status == 200, body
    assert headers["Content-Type"] == "application/json"
    assert _payloads(body) == [PLAIN, PLAIN]


def test_encode_then_decode_round_trips_over_http(open_server: str) -> None:
    status, _, body = _call(f"{open_server}/encode", _wire([PLAIN]), JSON)
    assert status == 200, body
    (encoded,) = _payloads(body)
    assert encoded.metadata["encoding"] == b"binary/encrypted"
    assert codec.EncryptionCodec(KEYS).decode_sync([encoded]) == [PLAIN]
    status, _, body = _call(f"{open_server}/decode", _wire([encoded]), JSON)
    assert _payloads(body) == [PLAIN]


def test_unencrypted_payloads_come_back_unchanged(open_server: str) -> None:
    status, _, body = _call(f"{open_server}/decode", _wire([PLAIN]), JSON)
    assert status == 200 and _payloads(body) == [PLAIN]


def test_a_payload_under_an_unknown_key_is_a_clear_400(open_server: str) -> None:
    other = codec.EncryptionCodec(_keys("retired")).encode_sync([PLAIN])
    status, _, body = _call(f"{open_server}/decode", _wire(other), JSON)
    assert status == 400
    assert "key id 'retired'" in json.loads(body)["error"]


def test_malformed_json_is_a_400(open_server: str) -> None:
    status, _, body = _call(f"{open_server}/decode", b"{not json", JSON)
    assert status == 400 and "payloads" in json.loads(body)["error"]


def test_a_path_prefix_from_a_proxy_is_accepted(open_server: str) -> None:
    status, _, body = _call(f"{open_server}/codec/decode", _wire([PLAIN]), JSON)
    assert status == 200 and _payloads(body) == [PLAIN]
    status, _, _ = _call(f"{open_server}/other", _wire([PLAIN]), JSON)
    assert status == 404


def test_cors_allows_the_ui_origin_only(open_server: str) -> None:
    preflight = {
        "Origin": UI,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type,x-namespace",
    }
    status, headers, _ = _call(f"{open_server}/decode", None, preflight, method="OPTIONS")
    assert status == 204
    assert headers["Access-Control-Allow-Origin"] == UI
    assert headers["Access-Control-Allow-Credentials"] == "true"
    allowed = {h.strip().lower() for h in headers["Access-Control-Allow-Headers"].split(",")}
    assert {"authorization", "content-type", "x-namespace"} <= allowed
    status, headers, _ = _call(f"{open_server}/decode", _wire([PLAIN]), {**JSON, "Origin": UI})
    assert status == 200 and headers["Access-Control-Allow-Origin"] == UI
    evil = {**JSON, "Origin": "https://evil.example"}
    _, headers, _ = _call(f"{open_server}/decode", _wire([PLAIN]), evil)
    assert "Access-Control-Allow-Origin" not in headers


def test_without_the_token_nothing_is_decoded(token_server: str) -> None:
    encrypted = _wire(codec.EncryptionCodec(KEYS).encode_sync([PLAIN]))
    for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
        status, headers, body = _call(f"{token_server}/decode", encrypted, {**JSON, **auth})
        assert status == 401, auth
        assert headers["WWW-Authenticate"].startswith("Bearer")
        assert b"queue" not in body
    status, _, _ = _call(f"{token_server}/encode", _wire([PLAIN]), JSON)
    assert status == 401


def test_with_the_token_it_decodes(token_server: str) -> None:
    encrypted = _wire(codec.EncryptionCodec(KEYS).encode_sync([PLAIN]))
    auth = {**JSON, "Authorization": "Bearer s3cret", "X-Namespace": "default"}
    status, _, body = _call(f"{token_server}/decode", encrypted, auth)
    assert status == 200 and _payloads(body) == [PLAIN]


def test_preflight_needs_no_token_and_health_answers(token_server: str) -> None:
    """Browsers send no credentials on a preflight; refusing it would break the UI."""
    status, headers, _ = _call(f"{token_server}/decode", None, {"Origin": UI}, method="OPTIONS")
    assert status == 204 and headers["Access-Control-Allow-Origin"] == UI
    status, _, body = _call(f"{token_server}/healthz", None, method="GET")
    assert status == 200 and body == b"ok\n"


def test_flags_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    p = argparse.ArgumentParser()
    codec_server.add_arguments(p)
    monkeypatch.delenv("CALDERA_CODEC_TOKEN", raising=False)
    default = codec_server.options_from(p.parse_args([]))
    assert default.ui_origins == (UI,) and default.token is None and default.bind == "127.0.0.1"
    monkeypatch.setenv("CALDERA_CODEC_TOKEN", "tok-8c1f")
    args = p.parse_args(["--ui-origin", "https://temporal.example", "--ui-origin", UI])
    options = codec_server.options_from(args)
    assert options.ui_origins == ("https://temporal.example", UI)
    assert options.token == "tok-8c1f" and "tok-8c1f" not in repr(options)
