"""python -m scenarios.rest FILE: what it prints for a service, and exit status 2 with one line for a bad file or
service."""

from __future__ import annotations

import subprocess
import sys

from scenarios.rest.__main__ import main
from tests.scenarios.rest.conftest import write_service


def test_it_prints_the_operations_and_dependencies(tmp_path, capsys):
    assert main([str(write_service(tmp_path))]) == 0
    out = capsys.readouterr().out
    first, *rest = out.splitlines()
    assert first.startswith("fake: 3 operations kept from http://127.0.0.1:") and first.endswith(
        "/openapi.json, 1 dependencies inferred")
    assert any(line.split() == ["get_items", "GET", "/items", "reader", "List", "items"] for line in rest)
    assert any(line.split() == ["post_items", "$response.body#/id", "get_items_item", "path", "item", "path",
                                "prefix"] for line in rest)


def test_a_bad_file_or_service_exits_2_with_one_line(tmp_path, capsys):
    assert main([str(tmp_path / "missing.toml")]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'missing.toml'}: cannot be read (No such file or " \
                                      f"directory); give the path of a service file, or the name of one that " \
                                      f"comes with StateEval: kinto, session_http\n"
    path = write_service(tmp_path, start=["{python}", "-c", "raise SystemExit(4)"])
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: start: ") and "exited with status 4" in err and err.count("\n") == 1


def test_help_teaches(tmp_path):
    result = subprocess.run([sys.executable, "-m", "scenarios.rest", "--help"], capture_output=True, text=True,
                            check=True)
    assert "docs/services.md" in result.stdout and "scenarios/rest/services/kinto.toml" in result.stdout
