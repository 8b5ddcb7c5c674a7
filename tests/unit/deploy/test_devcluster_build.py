"""deploy/devcluster/build.sh builds only what its targets name, and `make dev` asks only for
the control plane it runs: `dev` is etcd, the three Kubernetes servers, kwok and kubectl, never
helm or the Temporal server. The builds themselves run against a fake `go` that writes a
binary reporting the pinned versions, so no Go build runs here."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from cli.devstack import controlplane, processes
from tests import access

SCRIPT = access.DEPLOY / "devcluster" / "build.sh"
DEV = {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kubectl"}
SERVER = {"temporal-server", "temporal-sql-tool", "temporal-ui-server"}
FAKE_GO = """#!/bin/sh
case $1 in
  version) echo "go version go1.99-fake linux/amd64"; exit 0 ;;
  mod) exit 0 ;;
  list) echo "$FAKE_MODULE_DIR"; exit 0 ;;
  build) ;;
  *) exit 1 ;;
esac
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
[ -z "$FAKE_GO_FAIL" ] || { echo "fake: undefined: kube.Thing" >&2; exit 1; }
printf '#!/bin/sh\\necho "%s"\\n' "$FAKE_VERSIONS" >"$out" && chmod +x "$out"
"""


def _versions() -> str:
    """Every pinned version in versions.env, as one string a fake binary prints."""
    text = (SCRIPT.parent / "versions.env").read_text()
    return " ".join(re.findall(r"^\w+_VERSION=(\S+)", text, re.MULTILINE))


def _run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *argv], capture_output=True, text=True, timeout=60, env=env)


def _listed(*targets: str) -> list[str]:
    done = _run("--list", *targets)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_dev_names_exactly_the_control_plane_and_kubectl() -> None:
    names = _listed("dev")
    assert sorted(names) == sorted(DEV)


def test_each_target_names_its_own_and_all_names_them_once() -> None:
    assert _listed("helm") == ["helm"]
    assert set(_listed("server")) == SERVER
    every = _listed("all")
    assert set(every) == DEV | SERVER | {"helm"}
    assert len(every) == len(set(every))
    assert _listed("dev", "all", "dev") == every


@pytest.mark.parametrize("argv", [[], ["everything"], ["dev", "--fast"]], ids=str)
def test_no_or_an_unknown_target_is_a_usage_error(argv: list[str]) -> None:
    done = _run(*argv)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Usage: build.sh" in done.stderr


def _make_builds(goal: str) -> list[str]:
    """The binaries `make -n <goal>` has build.sh build."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed: the Makefile's targets cannot be read (make test needs it)")
    done = subprocess.run(
        ["make", "-n", goal], cwd=access.ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    calls = [line.split()[1:] for line in done.stdout.splitlines() if "devcluster/build.sh" in line]
    assert calls, done.stdout
    return [name for argv in calls for name in _listed(*argv)]


def test_make_dev_builds_the_control_plane_only() -> None:
    assert sorted(_make_builds("dev")) == sorted(DEV)


def test_make_test_builds_what_the_tests_run() -> None:
    """The chart's tests need helm, the server profile's the Temporal server and its UI."""
    assert set(_make_builds("test")) == DEV | SERVER | {"helm"}


def _fake_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A `go` that "builds" a script printing every pinned version, and one module directory
    holding kwok's stages and the Temporal server's schema."""
    fake = tmp_path / "fake-go"
    fake.mkdir(exist_ok=True)
    go = fake / "go"
    go.write_text(FAKE_GO)
    go.chmod(go.stat().st_mode | stat.S_IXUSR)
    module = tmp_path / "module"
    for stage in (
        "node/fast/node-initialize",
        "node/heartbeat/node-heartbeat",
        "pod/fast/pod-ready",
    ):
        path = module / "kustomize" / "stage" / f"{stage}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("kind: Stage\n")
    (module / "kustomize" / "stage" / "pod/fast/pod-delete.yaml").write_text("kind: Stage\n")
    (module / "schema" / "postgresql").mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "PATH": f"{fake}:{os.environ['PATH']}",
        "CALDERA_CACHE": str(tmp_path / "cache"),
        "FAKE_VERSIONS": _versions(),
        "FAKE_MODULE_DIR": str(module),
        **extra,
    }


def _built(stdout: str) -> list[str]:
    return re.findall(r"^devcluster-build: (\S+) v\S+ +built in ", stdout, re.MULTILINE)


def test_dev_builds_its_six_and_kwoks_stages_only(tmp_path: Path) -> None:
    env = _fake_env(tmp_path)
    done = _run("dev", env=env)
    assert done.returncode == 0, done.stderr
    assert sorted(_built(done.stdout)) == sorted(DEV)
    bin_dir = Path(_run("--bin-dir", env=env).stdout.strip())
    assert {p.name for p in bin_dir.iterdir()} == DEV
    assert len(list((bin_dir.parent / "stages").glob("*.yaml"))) == 4
    assert not (bin_dir.parent / "temporal-schema").exists()

    server = _run("-q", "all", env=env)
    assert server.returncode == 0, server.stderr
    assert sorted(_built(server.stdout)) == sorted(SERVER | {"helm"})
    assert (bin_dir.parent / "temporal-schema" / "postgresql").is_dir()


def test_one_line_per_binary_built_then_cached(tmp_path: Path) -> None:
    env = _fake_env(tmp_path)
    bin_dir = Path(_run("--bin-dir", env=env).stdout.strip())
    assert bin_dir.is_relative_to(tmp_path / "cache")

    first = _run("helm", env=env)
    assert first.returncode == 0, first.stderr
    header, line = first.stdout.splitlines()
    assert header.startswith(f"devcluster-build: building with go1.99-fake into {bin_dir}")
    assert re.fullmatch(rf"devcluster-build: helm v[\d.]+ +built in \d+s +{bin_dir}/helm", line)
    assert (bin_dir / "helm").is_file()

    again = _run("helm", env=env)
    assert re.fullmatch(rf"devcluster-build: helm v[\d.]+ +cached +{bin_dir}/helm\n", again.stdout)
    assert _run("-q", "helm", env=env).stdout == ""


def test_a_failed_build_names_its_log(tmp_path: Path) -> None:
    env = _fake_env(tmp_path, FAKE_GO_FAIL="1")
    done = _run("helm", env=env)
    assert done.returncode == 1
    log = Path(done.stdout.splitlines()[-1].split("Go's output: ")[1])
    assert "FAILED after" in done.stdout
    assert "undefined: kube.Thing" in log.read_text()
    assert "undefined: kube.Thing" in done.stderr


def _fake_go_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **extra: str) -> None:
    env = _fake_env(tmp_path, **extra)
    for key in ("PATH", "CALDERA_CACHE", "FAKE_VERSIONS", "FAKE_MODULE_DIR", *extra):
        monkeypatch.setenv(key, env[key])


def test_build_binaries_reports_what_it_builds_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    _fake_go_here(tmp_path, monkeypatch)
    bin_dir = controlplane.build_binaries("helm")
    assert bin_dir == Path(_run("--bin-dir").stdout.strip())
    assert (bin_dir / "helm").is_file()
    out, err = capfd.readouterr()
    assert out == ""
    assert _built(err) == ["helm"]
    assert controlplane.build_binaries("helm") == bin_dir
    assert capfd.readouterr() == ("", "")  # cached: nothing to say


def test_a_failed_build_is_a_startup_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_go_here(tmp_path, monkeypatch, FAKE_GO_FAIL="1")
    with pytest.raises(processes.StartupError, match=r"build\.sh server failed \(exit 1\)"):
        controlplane.build_binaries("server")
