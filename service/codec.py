"""Optional payload encryption: AES-256-GCM over every payload Caldera sends to Temporal.

Workflow inputs, signals, activity arguments and results carry Job specs (pod templates, env,
the ssh plugin's arguments), and Temporal stores them in its database and shows them in the
UI. With `CALDERA_CODEC_KEY` set, every process (worker, forwarder, CLI) encrypts them before
they leave the process, so the Temporal service only ever holds ciphertext; the codec server
(`caldera codec-server`) lets the UI and the `temporal` CLI show them decrypted.

The format follows Temporal's encryption sample: the encoded payload has encoding
`binary/encrypted`, the key id in metadata `encryption-key-id`, and data = 12-byte nonce ||
AES-GCM(serialized original payload) with the key id as associated data (a payload cannot be
passed off as encrypted under another key). Payloads without that encoding decode unchanged:
histories written before encryption was switched on stay readable.

Keys: `CALDERA_CODEC_KEY` (base64 of 32 random bytes; `openssl rand -base64 32`) encrypts;
`CALDERA_CODEC_KEY_ID` names it (default: a fingerprint of the key, so a different key is a
different id); `CALDERA_CODEC_PREVIOUS_KEYS` (`id:base64,id:base64`) still decrypts payloads
written under retired keys. An unknown key id fails clearly instead of yielding garbage.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import os
from collections.abc import Mapping, Sequence
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from pydantic import BaseModel, ConfigDict, SecretBytes
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, PayloadCodec

ENCODING: Final = b"binary/encrypted"
ENCODING_KEY: Final = "encoding"
KEY_ID_KEY: Final = "encryption-key-id"
NONCE_BYTES: Final = 12
KEY_BYTES: Final = 32  # AES-256

KEY_ENV: Final = "CALDERA_CODEC_KEY"
KEY_ID_ENV: Final = "CALDERA_CODEC_KEY_ID"
PREVIOUS_KEYS_ENV: Final = "CALDERA_CODEC_PREVIOUS_KEYS"


class CodecError(ValueError):
    """A payload could not be decrypted, or a key is malformed; the message says which."""


class CodecKeys(BaseModel):
    """The key that encrypts (`active`) and every key that may decrypt, by key id."""

    model_config = ConfigDict(frozen=True)

    active: str
    keys: dict[str, SecretBytes]  # key id → 32-byte key; holds `active`


def fingerprint(key: bytes) -> str:
    """A stable, non-secret id for a key: the first 8 bytes of its SHA-256, in hex."""
    return hashlib.sha256(key).hexdigest()[:16]


def decode_key(text: str, what: str = KEY_ENV) -> bytes:
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as e:
        raise CodecError(f"{what} is not valid base64: {e}") from e
    if len(key) != KEY_BYTES:
        raise CodecError(f"{what} must be base64 of {KEY_BYTES} bytes, got {len(key)} bytes")
    return key


def keys_from_env(environ: Mapping[str, str] | None = None) -> CodecKeys | None:
    """The codec keys from the environment; None when CALDERA_CODEC_KEY is unset or empty."""
    env = os.environ if environ is None else environ
    text = env.get(KEY_ENV) or ""
    if not text:
        return None
    key = decode_key(text)
    active = env.get(KEY_ID_ENV) or fingerprint(key)
    keys = {active: key}
    for entry in (env.get(PREVIOUS_KEYS_ENV) or "").split(","):
        if not entry.strip():
            continue
        key_id, sep, encoded = entry.strip().partition(":")
        if not sep or not key_id:
            raise CodecError(f"{PREVIOUS_KEYS_ENV} entries are `id:base64key`, got {key_id!r}")
        if key_id in keys:
            raise CodecError(f"{PREVIOUS_KEYS_ENV}: key id {key_id!r} given twice")
        keys[key_id] = decode_key(encoded, f"{PREVIOUS_KEYS_ENV} key {key_id!r}")
    return CodecKeys(active=active, keys={k: SecretBytes(v) for k, v in keys.items()})


class EncryptionCodec(PayloadCodec):
    """AES-GCM PayloadCodec; the sync methods serve the codec server's request threads."""

    def __init__(self, keys: CodecKeys) -> None:
        if keys.active not in keys.keys:
            raise CodecError(f"the active key id {keys.active!r} has no key")
        self.key_id = keys.active
        self._ciphers = {k: AESGCM(v.get_secret_value()) for k, v in keys.keys.items()}

    def encode_sync(self, payloads: Sequence[Payload]) -> list[Payload]:
        cipher, aad = self._ciphers[self.key_id], self.key_id.encode()
        out = []
        for p in payloads:
            nonce = os.urandom(NONCE_BYTES)
            out.append(
                Payload(
                    metadata={ENCODING_KEY: ENCODING, KEY_ID_KEY: aad},
                    data=nonce + cipher.encrypt(nonce, p.SerializeToString(), aad),
                )
            )
        return out

    def decode_sync(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self._decode_one(p) for p in payloads]

    def _decode_one(self, payload: Payload) -> Payload:
        if payload.metadata.get(ENCODING_KEY) != ENCODING:
            return payload  # never encrypted (older history, or another codec's job)
        key_id = payload.metadata.get(KEY_ID_KEY, b"").decode(errors="replace")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            known = ", ".join(sorted(self._ciphers))
            raise CodecError(
                f"payload encrypted with key id {key_id!r}, which this process does not have "
                f"(known: {known}); set {KEY_ENV} or add it to {PREVIOUS_KEYS_ENV}"
            )
        nonce, sealed = payload.data[:NONCE_BYTES], payload.data[NONCE_BYTES:]
        try:
            plain = cipher.decrypt(nonce, sealed, key_id.encode())
        except InvalidTag as e:
            raise CodecError(
                f"payload under key id {key_id!r} does not decrypt: wrong key for that id, "
                "or the payload was altered"
            ) from e
        return Payload.FromString(plain)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return self.encode_sync(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return self.decode_sync(payloads)


def data_converter(keys: CodecKeys | None) -> DataConverter:
    """Caldera's converter: pydantic payloads, encrypted when keys are given."""
    if keys is None:
        return pydantic_data_converter
    return dataclasses.replace(pydantic_data_converter, payload_codec=EncryptionCodec(keys))
