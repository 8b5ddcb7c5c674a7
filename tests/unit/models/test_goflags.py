"""Plugin arguments parse as Go's flag package parses them."""

from __future__ import annotations

import dataclasses

import pytest

from models import goflags


@dataclasses.dataclass(frozen=True)
class Flags:
    on: bool = False
    off: bool = True
    port: int = 22
    path: str = "/root/.ssh"
    head_container: str = dataclasses.field(default="head", metadata={"flag": "headContainer"})


D = Flags()

PARSE_CASES = [
    pytest.param([], D, None, id="empty-defaults"),
    pytest.param(["--on"], dataclasses.replace(D, on=True), None, id="bool-double-dash"),
    pytest.param(["-on"], dataclasses.replace(D, on=True), None, id="bool-single-dash"),
    pytest.param(["--off=false"], dataclasses.replace(D, off=False), None, id="bool-false"),
    pytest.param(["--off=F"], dataclasses.replace(D, off=False), None, id="bool-go-spelling"),
    pytest.param(["--on=1"], dataclasses.replace(D, on=True), None, id="bool-one"),
    pytest.param(
        ["--on", "false"], dataclasses.replace(D, on=True), None, id="bool-no-separate-value"
    ),
    pytest.param(["--port=2222"], dataclasses.replace(D, port=2222), None, id="int-equals"),
    pytest.param(["--port", "2222"], dataclasses.replace(D, port=2222), None, id="int-separate"),
    pytest.param(["--port=0x10"], dataclasses.replace(D, port=16), None, id="int-hex"),
    pytest.param(["--port=010"], dataclasses.replace(D, port=8), None, id="int-leading-zero-octal"),
    pytest.param(["--port=1_000"], dataclasses.replace(D, port=1000), None, id="int-underscore"),
    pytest.param(["--port=-5"], dataclasses.replace(D, port=-5), None, id="int-negative"),
    pytest.param(["--path=/x=y"], dataclasses.replace(D, path="/x=y"), None, id="str-with-equals"),
    pytest.param(["--path="], dataclasses.replace(D, path=""), None, id="str-empty"),
    pytest.param(
        ["--headContainer=ray"], dataclasses.replace(D, head_container="ray"), None, id="metadata"
    ),
    pytest.param(
        ["--on", "stop", "--port=1"], dataclasses.replace(D, on=True), None, id="stops-at-non-flag"
    ),
    pytest.param(["--", "--on"], D, None, id="stops-at-terminator"),
    pytest.param(["-"], D, None, id="lone-dash-is-not-a-flag"),
    pytest.param(
        ["--on", "--bogus", "--port=1"],
        dataclasses.replace(D, on=True),
        "flag provided but not defined: -bogus",
        id="unknown-keeps-earlier",
    ),
    pytest.param(
        ["--port=abc", "--on"],
        D,
        'invalid value "abc" for flag -port: parse error',
        id="bad-int-stops",
    ),
    pytest.param(
        ["--port= 7"], D, 'invalid value " 7" for flag -port: parse error', id="int-no-spaces"
    ),
    pytest.param(
        ["--port=9223372036854775808"],
        D,
        'invalid value "9223372036854775808" for flag -port: value out of range',
        id="int-out-of-range",
    ),
    pytest.param(
        ["--on=yes"], D, 'invalid value "yes" for flag -on: parse error', id="bad-bool-stops"
    ),
    pytest.param(["--port"], D, "flag needs an argument: -port", id="missing-value"),
    pytest.param(["---on"], D, "bad flag syntax: ---on", id="three-dashes"),
    pytest.param(["-=x"], D, "bad flag syntax: -=x", id="empty-name"),
    pytest.param(["--help"], D, "flag provided but not defined: -help", id="help-stops"),
]


@pytest.mark.parametrize(("args", "want", "error"), PARSE_CASES)
def test_parse_go_flags_matches_go_flag_package(
    args: list[str], want: Flags, error: str | None
) -> None:
    assert goflags.parse(D, args) == (want, error)
