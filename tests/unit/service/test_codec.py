"""Payload encryption: what a Temporal client with CALDERA_CODEC_KEY writes and reads back."""

from __future__ import annotations

import base64
import os

import pytest
from temporalio.api.common.v1 import Payload

from models.signals import job as job_signals
from service import codec, temporal


def _key() -> str:
    return base64.b64encode(os.urandom(codec.KEY_BYTES)).decode()


def _keys(**env: str) -> codec.CodecKeys:
    keys = codec.keys_from_env({k.upper(): v for k, v in env.items()})
    assert keys is not None
    return keys


def _plain(text: str) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=text.encode())


async def test_round_trip_hides_the_data_and_restores_it_exactly() -> None:
    c = codec.EncryptionCodec(_keys(caldera_codec_key=_key(), caldera_codec_key_id="k1"))
    original = [_plain('{"ssh": ["--private-key=secret"]}'), _plain("2")]
    encoded = await c.encode(original)
    assert len(encoded) == 2
    for e in encoded:
        assert e.metadata["encoding"] == b"binary/encrypted"
        assert e.metadata["encryption-key-id"] == b"k1"
        assert b"secret" not in e.data and b"json/plain" not in e.data
    assert encoded[0].data != (await c.encode(original[:1]))[0].data  # fresh nonce each time
    assert await c.decode(encoded) == original


async def test_pydantic_values_survive_the_encrypting_converter() -> None:
    converter = codec.data_converter(_keys(caldera_codec_key=_key()))
    value = job_signals.JobStart()
    (payload,) = await converter.encode([value])
    assert payload.metadata["encoding"] == b"binary/encrypted"
    assert await converter.decode([payload], [job_signals.JobStart]) == [value]


async def test_another_key_under_the_same_id_is_refused_clearly() -> None:
    writer = codec.EncryptionCodec(_keys(caldera_codec_key=_key(), caldera_codec_key_id="k1"))
    reader = codec.EncryptionCodec(_keys(caldera_codec_key=_key(), caldera_codec_key_id="k1"))
    encoded = await writer.encode([_plain("x")])
    with pytest.raises(codec.CodecError, match="key id 'k1' does not decrypt"):
        await reader.decode(encoded)


async def test_an_unknown_key_id_is_refused_naming_it() -> None:
    writer = codec.EncryptionCodec(_keys(caldera_codec_key=_key(), caldera_codec_key_id="old"))
    reader = codec.EncryptionCodec(_keys(caldera_codec_key=_key(), caldera_codec_key_id="new"))
    encoded = await writer.encode([_plain("x")])
    with pytest.raises(codec.CodecError, match=r"key id 'old'.*known: new"):
        await reader.decode(encoded)


async def test_a_tampered_payload_is_refused() -> None:
    c = codec.EncryptionCodec(_keys(caldera_codec_key=_key(), caldera_codec_key_id="k1"))
    (encoded,) = await c.encode([_plain("x")])
    flipped = bytes([encoded.data[-1] ^ 1])
    tampered = Payload(metadata=encoded.metadata, data=encoded.data[:-1] + flipped)
    with pytest.raises(codec.CodecError, match="altered"):
        await c.decode([tampered])


async def test_key_id_is_bound_to_the_ciphertext() -> None:
    """Relabelling a payload with another key id the reader has fails instead of decrypting."""
    key = _key()
    c = codec.EncryptionCodec(
        _keys(
            caldera_codec_key=key, caldera_codec_key_id="a", caldera_codec_previous_keys=f"b:{key}"
        )
    )
    (encoded,) = await c.encode([_plain("x")])
    relabelled = Payload(
        metadata={**encoded.metadata, "encryption-key-id": b"b"}, data=encoded.data
    )
    with pytest.raises(codec.CodecError, match="'b' does not decrypt"):
        await c.decode([relabelled])


async def test_payloads_from_before_encryption_pass_through_untouched() -> None:
    c = codec.EncryptionCodec(_keys(caldera_codec_key=_key()))
    old = [_plain('{"phase": "Running"}'), Payload(metadata={"encoding": b"binary/null"})]
    no_metadata = Payload(data=b"raw")
    assert await c.decode([*old, no_metadata]) == [*old, no_metadata]


async def test_rotation_decrypts_under_a_previous_key_and_encrypts_under_the_new() -> None:
    old_key = _key()
    old = codec.EncryptionCodec(_keys(caldera_codec_key=old_key, caldera_codec_key_id="2025"))
    written = await old.encode([_plain("history")])
    rotated = codec.EncryptionCodec(
        _keys(
            caldera_codec_key=_key(),
            caldera_codec_key_id="2026",
            caldera_codec_previous_keys=f"2025:{old_key}",
        )
    )
    assert await rotated.decode(written) == [_plain("history")]
    (fresh,) = await rotated.encode([_plain("new")])
    assert fresh.metadata["encryption-key-id"] == b"2026"


def test_default_key_id_is_a_fingerprint_that_differs_per_key() -> None:
    a, b = _key(), _key()
    assert _keys(caldera_codec_key=a).active == _keys(caldera_codec_key=a).active
    assert _keys(caldera_codec_key=a).active != _keys(caldera_codec_key=b).active
    assert a not in _keys(caldera_codec_key=a).active


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CALDERA_CODEC_KEY": "not base64!"}, "not valid base64"),
        (
            {"CALDERA_CODEC_KEY": base64.b64encode(b"short").decode()},
            "32 bytes, got 5 bytes",
        ),
        (
            {"CALDERA_CODEC_KEY": _key(), "CALDERA_CODEC_PREVIOUS_KEYS": "nocolon"},
            "`id:base64key`",
        ),
    ],
    ids=["not-base64", "short", "previous-without-id"],
)
def test_malformed_keys_fail_at_startup(env: dict[str, str], message: str) -> None:
    with pytest.raises(codec.CodecError, match=message):
        codec.keys_from_env(env)


def test_no_key_means_plain_payloads() -> None:
    assert codec.keys_from_env({}) is None
    assert codec.keys_from_env({"CALDERA_CODEC_KEY": ""}) is None
    assert codec.data_converter(None).payload_codec is None


def test_the_one_connect_path_picks_the_key_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CALDERA_CODEC_KEY", _key())
    monkeypatch.setenv("CALDERA_CODEC_KEY_ID", "prod-1")
    options = temporal.options_from_env()
    assert options.codec_keys is not None and options.codec_keys.active == "prod-1"
    assert "prod-1" in repr(options)
    key = base64.b64decode(os.environ["CALDERA_CODEC_KEY"])
    assert repr(key) not in repr(options) and str(key) not in str(options)  # never logged
    converter = codec.data_converter(options.codec_keys)
    assert isinstance(converter.payload_codec, codec.EncryptionCodec)
