"""The library versions a dataset or a result was made with, recorded so that it can be reproduced."""

from __future__ import annotations

import platform
from importlib import metadata


def library_versions(*dists: str) -> dict[str, str | None]:
    """Python's version and each distribution's installed version (None: not installed)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for dist in dists:
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    return versions
