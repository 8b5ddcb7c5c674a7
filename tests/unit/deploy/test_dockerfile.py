"""The Dockerfile builds the package pyproject.toml describes and runs what deploy/ asks for.

Docker is not available here, so the build is checked piece by piece: the build context and
COPY lines hold every package pyproject.toml installs; setuptools, run on exactly those
files, finds every module, the package data and the `caldera` console script; and every
Deployment's command is a module in the package or a `caldera` subcommand whose flags parse.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from cli import main as cli_main
from tests import access

ROOT = access.ROOT
DOCKERFILE = (ROOT / "Dockerfile").read_text()
PYPROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())
DEPLOYMENTS = [
    *access.containers(access.manifests()),
    *access.containers(access.manifests(access.DEPLOY / "codec-server")),
]


def _instructions() -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", DOCKERFILE)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _stages() -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for word, rest in _instructions():
        if word == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((word, rest))
    return stages


def _packaged() -> set[str]:
    """Top-level names pyproject.toml installs, plus the files its build reads."""
    tool = PYPROJECT["tool"]["setuptools"]
    packages = {p.rstrip("*") for p in tool["packages"]["find"]["include"]}
    modules = {f"{m}.py" for m in tool.get("py-modules", [])}
    return packages | modules | {"pyproject.toml", PYPROJECT["project"]["readme"]}


def _copied() -> set[str]:
    sources = set()
    for word, rest in _stages()[0]:
        if word == "COPY" and not rest.startswith("--from"):
            *srcs, _dest = rest.split()
            sources |= {s.rstrip("/") for s in srcs}
    return sources


def test_both_stages_use_the_base_python_312_slim_by_default() -> None:
    stages = _stages()
    assert len(stages) == 2
    for stage in stages:
        assert stage[0][1].split()[0] == "${BASE}"
    (base,) = [r for w, r in _instructions() if w == "ARG" and r.startswith("BASE=")]
    assert base == "BASE=python:3.12-slim"


def test_the_build_copies_exactly_what_the_package_is_made_of() -> None:
    assert _copied() == _packaged()
    on_disk = {p for p in _packaged() if (ROOT / p).exists()}
    assert on_disk == _packaged()


def test_the_build_context_is_the_same_allow_list() -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    assert "*" in lines
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    assert allowed == _packaged()


def test_it_installs_the_package_and_runs_as_a_non_root_user() -> None:
    build, final = _stages()
    assert any(w == "RUN" and re.search(r"pip wheel .*\s\.$", r) for w, r in build)
    assert any(w == "RUN" and "pip install" in r and " caldera" in r for w, r in final)
    (user,) = [r for w, r in final if w == "USER"]
    uid = int(user.split(":")[0])
    assert uid != 0
    for account, container in DEPLOYMENTS:
        d = next(
            doc
            for doc in [*access.manifests(), *access.manifests(access.DEPLOY / "codec-server")]
            if doc["kind"] == "Deployment"
            and doc["spec"]["template"]["spec"]["serviceAccountName"] == account
        )
        pod = d["spec"]["template"]["spec"]["securityContext"]
        assert pod["runAsUser"] == uid and pod["runAsNonRoot"] is True, account
        assert container["securityContext"]["readOnlyRootFilesystem"] is True, account
    (cmd,) = [r for w, r in final if w == "CMD"]
    assert cmd == '["python", "-m", "worker"]'


SETUP = "from setuptools import setup; setup()"


@pytest.fixture(scope="module")
def egg_info(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """setuptools' view of the Docker build context: the COPY'd files only."""
    work = tmp_path_factory.mktemp("docker-context")
    src, out = work / "src", work / "out"
    src.mkdir()
    out.mkdir()
    ignore = shutil.ignore_patterns("__pycache__")
    for name in _copied():
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            shutil.copy2(path, src / name)
    subprocess.run(
        [sys.executable, "-c", SETUP, "-q", "egg_info", "--egg-base", str(out)],
        cwd=src,
        check=True,
        capture_output=True,
    )
    (info,) = out.glob("*.egg-info")
    return info


def test_the_context_builds_every_module_and_the_console_script(egg_info: Path) -> None:
    sources = set((egg_info / "SOURCES.txt").read_text().split())
    tool = PYPROJECT["tool"]["setuptools"]
    for package in (p.rstrip("*") for p in tool["packages"]["find"]["include"]):
        for py in (ROOT / package).rglob("*.py"):
            assert str(py.relative_to(ROOT)) in sources
    for pattern_owner, patterns in tool.get("package-data", {}).items():
        directory = ROOT / pattern_owner.replace(".", "/")
        for pattern in patterns:
            for data in directory.glob(pattern):
                assert str(data.relative_to(ROOT)) in sources
    assert "worker.py" in sources
    scripts = (egg_info / "entry_points.txt").read_text()
    assert re.search(r"^caldera = cli\.main:main$", scripts, re.MULTILINE)


@pytest.mark.parametrize(("account", "container"), DEPLOYMENTS, ids=[a for a, _ in DEPLOYMENTS])
def test_every_deployment_command_exists_in_the_image(
    account: str, container: dict[str, Any], egg_info: Path
) -> None:
    argv = [*container["command"], *container.get("args", [])]
    env = {e["name"]: "caldera-system" for e in container.get("env") or [] if "valueFrom" in e}
    argv = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in argv]
    top_level = set((egg_info / "top_level.txt").read_text().split())
    if argv[:2] == ["python", "-m"]:
        module = argv[2]
        assert module in top_level
        assert re.search(r"^def main\(", (ROOT / f"{module}.py").read_text(), re.MULTILINE)
        return
    assert argv[0] == "caldera"
    args = cli_main.parser().parse_args(argv[1:])  # exits (fails the test) on an unknown flag
    assert callable(args.fn)
