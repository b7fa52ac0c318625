"""The server file: the shipped memory file reads, and a file that is wrong fails with one line naming the key."""

from __future__ import annotations

import pytest

from scenarios.mcp.serverfile import ToolCall, is_server_file, load, shipped
from scenarios.rest.servicefile import RESTART, ServiceFileError
from tests.scenarios.mcp.conftest import write_fake


def test_the_shipped_memory_file_reads():
    file = load("memory")
    assert "memory" in shipped() and file.name == "memory" and file.reset == RESTART
    assert file.env == {"MEMORY_FILE_PATH": "{dir}/memory.jsonl"}
    assert [(c.tool, c.named) for c in file.population] == [("create_entities", False), ("create_entities", True),
                                                            ("create_relations", True)]
    assert file.substitute("{here}/x", "/tmp/d").startswith(str(file.path.parent.resolve()))
    assert file.substitute(file.env["MEMORY_FILE_PATH"], "/tmp/d") == "/tmp/d/memory.jsonl"


def test_a_reset_call_and_exclusions_read(tmp_path):
    file = load(write_fake(tmp_path))
    assert file.reset == ToolCall("reset_tasks", {}, False) and file.exclude == ("reset_tasks",)
    assert is_server_file(file.path) and not is_server_file(tmp_path / "missing.toml")


@pytest.mark.parametrize("text, key, words", [
    ('name = "x"\n', "command", "list of strings"),
    ('name = "X y"\ncommand = ["a"]\n', "name", "lower-case identifier"),
    ('name = "x"\ncommand = ["a"]\nreset = "wipe"\n', "reset", "restart"),
    ('name = "x"\ncommand = ["a"]\nport = 3\n', "port", "unknown key"),
    ('name = "x"\ncommand = ["a"]\n[[population]]\narguments = {}\n', "population[0].tool", "name the tool"),
    ('name = "x"\ncommand = ["a"]\n[[population]]\ntool = "t"\narguments = { a = "{draw:nope}" }\n', "population",
     "unknown kind"),
    ('name = "x"\ncommand = ["a"]\n[[readers]]\ntool = "tree"\narguments = { path = "{dir}" }\n',
     "readers[0].arguments", "literal values"),
    ('name = "x"\ncommand = ["a"]\n[[readers]]\ntool = "t"\n[[readers]]\ntool = "t"\n', "readers", "twice"),
    ('name = "x"\ncommand = ["a"]\n[[readers]]\nresource = "notes"\n', "readers[0].resource", "one URI alone"),
    ('name = "x"\ncommand = ["a"]\n[[readers]]\nresource = "a://b"\ntool = "t"\n', "readers[0].resource",
     "one URI alone"),
    ('name = "x"\ncommand = ["a"]\n[[readers]]\nresource = "a://b"\n[[readers]]\nresource = "a://b"\n', "readers",
     "resource twice"),
])
def test_a_wrong_file_fails_with_one_line_naming_the_key(tmp_path, text, key, words):
    path = tmp_path / "x.toml"
    path.write_text(text)
    with pytest.raises(ServiceFileError) as caught:
        load(path)
    message = str(caught.value)
    assert "\n" not in message and f": {key}: " in message and words in message, message
