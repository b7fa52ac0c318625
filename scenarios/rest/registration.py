"""Scenarios registered at run time from service files: `python -m builder --service FILE` registers one, a dataset
folder's `services/` registers those its tasks were built from (`core.records.load_tasks`), and a sandbox worker,
started with `STATEEVAL_SERVICES` in its environment, registers the same ones when `scenarios` is imported.

`scenarios.rest.registration` is imported by what registers (the builder, `core.records`, the sandbox worker), never
by `scenarios` itself. A dataset keeps, under `services/`, a copy of each service file (`NAME.toml`) and of the OpenAPI document the build
read (`NAME.openapi.json`, the file's own document when it names a file beside it), so that evaluation rebuilds
the same world with no extra flag.

The fields a service makes up beyond the file's `volatile` are learned once, by the build, and kept in the dataset
too (`NAME.learned.json`, see `scenarios.rest.learned`); `register` decides them from a dataset's file.
"""

from __future__ import annotations

import json
import os
import shutil
from functools import partial
from pathlib import Path

from scenarios import SCENARIOS, get_scenario, readiness
from scenarios.rest.learned import LEARNED, decide, made_up, shipped_fields
from scenarios.mcp.serverfile import shipped as mcp_shipped
from scenarios.rest.servicefile import ServiceFile, ServiceFileError, load

ENV = "STATEEVAL_SERVICES"  # service files to register, separated by os.pathsep (the workers inherit it)
FOLDER = "services"  # a dataset's copies of its service files
_files: dict[str, ServiceFile] = {}  # name -> the file registered under it


def register(path: str | Path) -> str:
    """Register the service file at `path` (or a shipped one by name) as a scenario; its name. ServiceFileError for a
    file that cannot be used or whose name another scenario has."""
    from scenarios.mcp.serverfile import is_server_file

    if is_server_file(path) or (not Path(path).exists() and str(path) in mcp_shipped()):
        from scenarios.mcp.registration import register as register_server

        file = register_server(path, lambda name: name in SCENARIOS)
        _remember(file.path)
        return file.name
    file = load(path)
    known = _files.get(file.name)
    if known is not None and known.path.resolve() == file.path.resolve():
        return file.name
    if file.name in SCENARIOS:
        raise ServiceFileError(f"{file.path}: name: {file.name!r} is already a scenario's name; give the service "
                               "another name")
    from scenarios.rest.machine import RestScenario

    fields = shipped_fields(file)
    SCENARIOS.add(file.name, partial(RestScenario, file))
    _files[file.name] = file
    if fields is not None:
        decide(file.name, fields)
    _remember(file.path)
    return file.name


def _remember(path: Path) -> None:
    """Name the file in `STATEEVAL_SERVICES`, so that the sandbox workers register it too."""
    paths = [p for p in os.environ.get(ENV, "").split(os.pathsep) if p]
    if str(path.resolve()) not in paths:
        os.environ[ENV] = os.pathsep.join([*paths, str(path.resolve())])


def register_environment() -> None:
    """Register every file `STATEEVAL_SERVICES` names (in a sandbox worker: those of the harness)."""
    for path in os.environ.get(ENV, "").split(os.pathsep):
        if path:
            register(path)


def register_folder(folder: str | Path) -> list[str]:
    """Register the service files a dataset folder keeps; their names."""
    where = Path(folder) / FOLDER
    return [register(p) for p in sorted(where.glob("*.toml"))] if where.is_dir() else []


def registered(name: str) -> ServiceFile | None:
    return _files.get(name)


def save(folder: str | Path, names: list[str]) -> None:
    """Copy the service files of the scenarios `names` that came from one into `folder/services`, with the
    document each build read and the service's agent-readiness report (`scenarios.readiness`)."""
    from scenarios.mcp import registration as servers

    for name in names:
        file = _files.get(name)
        if file is None:
            if servers.registered(name) is not None:
                servers.save(Path(folder) / FOLDER, name)
                readiness.write(Path(folder) / FOLDER, name, get_scenario(name).findings())
            continue
        where = Path(folder) / FOLDER
        where.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file.path, where / f"{name}.toml")
        if not file.spec_on_service:
            shutil.copyfile(file.spec_file, where / file.openapi)
        scenario = get_scenario(name)
        scenario.model  # noqa: B018 - read the document, if not yet done
        document = dict(scenario.document)
        document.pop("host", None)  # Swagger 2.0's host names the port this build's instance ran on
        servers = document.get("servers")
        if isinstance(servers, list):  # OpenAPI 3's too
            document["servers"] = [s for s in servers if "127.0.0.1" not in str(s) and "localhost" not in str(s)]
        (where / f"{name}.openapi.json").write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
        learned = made_up(name)  # as decided: a resumed build keeps those of the run it goes on from
        learned = list(scenario.learned if learned is None else learned)
        (where / LEARNED.format(name=name)).write_text(json.dumps({"learned": learned}, indent=2) + "\n")
        readiness.write(where, name, scenario.findings())
