"""MCP server files registered as scenarios, and their probed models decided once for a build and its workers.

`scenarios.rest.registration.register` hands a server file (one with `command`) to `register` here, so that
`--mcp FILE`, a dataset's `services/` folder and `STATEEVAL_SERVICES` work for both kinds of file. The model a build
probed (`scenarios.mcp.model`) reaches the sandbox workers through `STATEEVAL_MCP_MODELS` (JSON: each server's name
and its model as plain data), and a dataset keeps it beside its copy of the file (`NAME.model.json`), so that every
worker of a run and every later evaluation derives the same tools, keys and readers without probing.
"""

from __future__ import annotations

import dataclasses
import json
from functools import partial
from pathlib import Path

from scenarios.mcp.model import Model, decide
from scenarios.mcp.serverfile import SHIPPED, ServerFile, load
from scenarios.rest.servicefile import ServiceFileError

MODEL = "{name}.model.json"  # beside a dataset's copy of a server file
SHIPPED_HERE = "<shipped>"  # `here` of a file that comes with StateEval: its folder wherever StateEval is installed
_files: dict[str, ServerFile] = {}


def register(path: str | Path, taken) -> ServerFile:
    """Register the server file at `path` as a scenario; `taken(name)` says whether another scenario has the name."""
    file = load(path)
    known = _files.get(file.name)
    if known is not None and known.path.resolve() == file.path.resolve():
        return file
    if taken(file.name):
        raise ServiceFileError(f"{file.path}: name: {file.name!r} is already a scenario's name; give the server "
                               "another name")
    from scenarios import SCENARIOS
    from scenarios.mcp.machine import McpScenario

    shipped = file.path.with_name(MODEL.format(name=file.name))
    if shipped.is_file():
        try:
            plain = json.loads(shipped.read_text())
            here = SHIPPED if plain.get("here") == SHIPPED_HERE else Path(plain.get("here", ""))
            if plain.get("here") and here.is_dir():  # where the original file was: what its command names is there
                file = dataclasses.replace(file, here=here)
            decide(file.name, Model.from_plain(file, plain))
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ServiceFileError(f"{shipped}: cannot read the probed model ({e}); build the dataset again or "
                                   "remove the file") from None
    SCENARIOS.add(file.name, partial(McpScenario, file))
    _files[file.name] = file
    return file


def registered(name: str) -> ServerFile | None:
    return _files.get(name)


def save(folder: Path, name: str) -> None:
    """Copy the server file of `name` into `folder` (a dataset's services/), with the model the build probed."""
    from scenarios import get_scenario

    file = _files[name]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.toml").write_bytes(file.path.read_bytes())
    model = get_scenario(name).model
    here = (file.here or file.path.parent).resolve()
    plain = {**model.to_plain(), "here": SHIPPED_HERE if here == SHIPPED.resolve() else str(here)}
    (folder / MODEL.format(name=name)).write_text(json.dumps(plain, indent=2, sort_keys=True) + "\n")
