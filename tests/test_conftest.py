"""What a test session leaves in the temporary directory: only pytest's own folder of recent sessions."""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_test_session_removes_its_datasets_cache(tmp_path):
    """tests/conftest.py gives each session a private `datasets` cache in the temporary directory; it used to stay
    there, one folder per session."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/core/test_errors.py::test_first_few_counts_the_rest"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    assert [p.name for p in tmp.iterdir() if p.name != f"pytest-of-{getpass.getuser()}"] == []


def test_a_process_that_imports_the_test_helpers_outside_pytest_leaves_no_cache(tmp_path):
    """A test's subprocess may import its helpers (tests/core/test_ray_executor.py does), and so this module:
    its cache goes when that process exits, as a session's does when the session ends."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", "import tests.conftest"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert list(tmp.iterdir()) == []
