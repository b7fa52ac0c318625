"""The fields a service makes up beyond its file's `volatile`, decided once for a build and for every worker.

The build learns them when it probes the service (`scenarios.rest.world.learn`, in `RestScenario.model`) and
`decide`s them; a resumed build takes those of the run it goes on from, kept in its checkpoint. A dataset keeps
them beside its copy of the service file (`NAME.learned.json`, `{"learned": [...]}`, written by
`scenarios.rest.registration.save`), and registering that copy decides them again. They reach the sandbox workers
through `STATEEVAL_LEARNED` (JSON: each service's name and its fields), which the harness passes on, so that every
worker of a run renames the same fields and an answer scores alike on all of them. A world that finds none for its
service (a service file used alone, outside a build) learns them itself.
"""

from __future__ import annotations

import json
import os

from scenarios.rest.servicefile import ServiceFile, ServiceFileError

LEARNED_ENV = "STATEEVAL_LEARNED"  # {name: [field, ...]}: the made-up fields decided for each service
LEARNED = "{name}.learned.json"  # beside a dataset's copy of a service file: {"learned": [field, ...]}


def shipped_fields(file: ServiceFile) -> list[str] | None:
    """The made-up fields kept beside a dataset's copy of a service file (`NAME.learned.json`), None without one;
    ServiceFileError for one that cannot be read."""
    path = file.path.with_name(LEARNED.format(name=file.name))
    if not path.is_file():
        return None
    try:
        fields = json.loads(path.read_text())["learned"]
        if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
            raise ValueError("not a list of strings")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ServiceFileError(f"{path}: cannot read the learned fields ({e}); build the dataset again "
                               "or remove the file") from None
    return fields


def decide(name: str, fields) -> None:
    """Make `fields` the made-up fields of the service `name` for this process and the workers it starts."""
    known = json.loads(os.environ.get(LEARNED_ENV) or "{}")
    known[name] = sorted(fields)
    os.environ[LEARNED_ENV] = json.dumps(known, sort_keys=True)


def made_up(name: str) -> tuple[str, ...] | None:
    """The made-up fields decided for the service `name` (`decide`), or None when none were."""
    fields = json.loads(os.environ.get(LEARNED_ENV) or "{}").get(name)
    return None if fields is None else tuple(fields)
