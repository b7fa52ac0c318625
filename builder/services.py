"""Scenarios made from a service or server file, for the builder's commands (a build, `readiness`)."""

from __future__ import annotations

import argparse


def register_service(p: argparse.ArgumentParser, path: str, server: bool = False) -> str:
    """Register a service file's scenario and probe its service (`scenarios.rest`); its name. A file, service or
    document that cannot be used ends the command with one line and exit status 2. `server`: given as an MCP server
    file (--mcp), so that a file that cannot be read is named as one."""
    from scenarios import get_scenario
    from scenarios.mcp.client import ServerError
    from scenarios.rest.process import ServiceError
    from scenarios.rest.registration import register
    from scenarios.rest.schema import SpecError
    from scenarios.rest.servicefile import ServiceFileError

    try:
        if server:
            from scenarios.mcp.serverfile import load

            load(path)
        name = register(path)
        get_scenario(name).model  # noqa: B018 - started and probed now, so that a failure is one line here
    except (ServiceFileError, ServiceError, ServerError, SpecError) as exc:
        p.exit(2, f"{p.prog}: error: {exc}\n")
    return name
