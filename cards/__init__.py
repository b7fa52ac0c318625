"""Templates for the dataset card and the leaderboard page.

They ship inside the wheel as package data and are read through `importlib.resources`, so a build or a board made
from an installed package finds them exactly as one made from a source checkout does.
"""

from __future__ import annotations

from importlib import resources

DATASET_CARD = "dataset_card.md"
LEADERBOARD_PAGE = "leaderboard.html"


def template(name: str) -> str:
    """The text of one template of this package (a `string.Template`; the caller substitutes it)."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
