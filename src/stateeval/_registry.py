"""What inspect_ai registers from this package (the `inspect_ai` entry point in pyproject.toml)."""

from stateeval.inspect_task import stateeval  # noqa: F401
