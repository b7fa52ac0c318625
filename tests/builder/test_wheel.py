"""The wheel users install builds a dataset and a board: every file the package reads at run time is in it.

The sources are copied out of the checkout, built into a wheel, and the wheel is unpacked into a folder that
stands first on the path of a builder run made from elsewhere, so nothing can be read from the source tree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("builder", "core", "evaluate", "scenarios", "cards")


@pytest.mark.e2e  # .ci/run also builds the wheel and a dataset from it
def test_a_dataset_builds_from_the_wheel(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in PACKAGES:
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--no-build-isolation", "--no-index", "--wheel-dir", str(tmp_path / "dist"), str(src)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = (tmp_path / "dist").glob("stateeval-*.whl")
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)

    run = tmp_path / "run"
    run.mkdir()
    env = dict(os.environ, PYTHONPATH=str(site))
    done = subprocess.run([sys.executable, "-m", "builder", "--scenarios", "tensor", "--n", "3", "--out", "ds",
                           "--workers", "1"], cwd=run, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads((run / "ds" / "MANIFEST.json").read_text())
    card = (run / "ds" / "README.md").read_text()
    assert all(f"- {path}" in card for path in manifest["files"])  # the card template, rendered
    board = subprocess.run([sys.executable, "-m", "evaluate.leaderboard", "build", "--out", "board", "--root", "lb"],
                           cwd=run, env=env, capture_output=True, text=True, timeout=120)
    assert board.returncode == 0, board.stderr[-3000:]
    assert "No validated submission yet." in (run / "board" / "index.html").read_text()  # the page template

    where = subprocess.run([sys.executable, "-c", "import json, builder, cards, core, evaluate, scenarios; "
                            "print(json.dumps([m.__file__ for m in (builder, cards, core, evaluate, scenarios)]))"],
                           cwd=run, env=env, capture_output=True, text=True, timeout=120, check=True)
    assert all(Path(f).is_relative_to(site) for f in json.loads(where.stdout)), where.stdout

