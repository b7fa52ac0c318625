"""The service file: what a good one gives, and the one-line error, naming the file and the key, of each bad one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from scenarios.rest.servicefile import RESTART, Request, ServiceFileError, load, shipped, substitute
from tests.scenarios.rest.conftest import write_service

SERVICES = Path(__file__).resolve().parents[3] / "scenarios" / "rest" / "services"


def test_a_full_file_reads_into_its_fields(tmp_path):
    path = write_service(tmp_path, include=["get_*", "POST /items"], exclude=["DELETE /*"],
                         volatile=["data.last_modified", "items.*.etag"], request_timeout_s=5,
                         tables={"headers": {"Authorization": "Basic eDp5"}},
                         arrays={"population": [{"method": "POST", "path": "/items/{draw:word@a}",
                                                 "body": {"n": "{draw:int:1:9}"}},
                                                {"method": "GET", "path": "/items/{draw:@a}"}]})
    file = load(path)
    assert file.name == "fake" and file.path == path
    assert file.spec_on_service and file.ready == "/ready"
    assert file.reset_request == ("POST", "/reset")
    assert file.headers == {"Authorization": "Basic eDp5"}
    assert "openapi.json" in file.files
    assert file.include == ("get_*", "POST /items") and file.exclude == ("DELETE /*",)
    assert file.volatile == ("data.last_modified", "items.*.etag")
    assert file.population == (Request("POST", "/items/{draw:word@a}", {"n": "{draw:int:1:9}"}),
                               Request("GET", "/items/{draw:@a}"))
    assert (file.ready_timeout_s, file.request_timeout_s) == (120.0, 5.0)


def test_defaults_and_a_restart_reset(tmp_path):
    file = load(write_service(tmp_path, reset=RESTART, ready_timeout_s=None))
    assert file.reset_request is None
    assert file.ready_timeout_s == 30.0 and file.request_timeout_s == 30.0
    assert file.headers == {} and file.population == () and file.include == file.exclude == ()


def test_an_openapi_file_beside_the_service_file(tmp_path):
    (tmp_path / "api.json").write_text("{}")
    file = load(write_service(tmp_path, openapi="api.json"))
    assert not file.spec_on_service and file.spec_file == tmp_path / "api.json"


def test_substitute_fills_port_dir_and_python_only():
    assert substitute("{python} --port={port} --db {dir}/x {id}", 8080, "/tmp/d") == \
        f"{sys.executable} --port=8080 --db /tmp/d/x {{id}}"


@pytest.mark.parametrize("name", ["kinto", "session_http"])
def test_the_shipped_files_read_by_path_and_by_name(name):
    assert shipped() == ["kinto", "session_http"]
    file = load(SERVICES / f"{name}.toml")
    assert file.name == name and file.population, "each shipped file shows a population"
    assert load(name) == file


@pytest.mark.parametrize("keys, named, fix", [
    (dict(name=None), "name: missing", "required"),
    (dict(name="My Service"), "name: 'My Service' is not a lower-case identifier", "e.g."),
    (dict(openapi="nowhere.json"), "openapi: no file", "name a file beside"),
    (dict(start="python serve.py"), "start: must be the command as a list of strings", "e.g."),
    (dict(start=[]), "start: must be the command as a list of strings", "e.g."),
    (dict(ready="health"), "ready: 'health' is not a path on the service", "start it with /"),
    (dict(reset="flush"), "reset: 'flush' is neither \"restart\" nor \"METHOD /path\"", "METHOD one of"),
    (dict(reset="FETCH /reset"), "reset: 'FETCH /reset' is neither", "METHOD one of"),
    (dict(include="get_*"), "include: must be a list of non-empty strings", "e.g."),
    (dict(volatile=["data..id"]), "volatile: 'data..id' is not a dotted field path", "such as"),
    (dict(ready_timeout_s=0), "ready_timeout_s: must be a positive number of seconds", "not 0"),
    (dict(ready_timeout_s="30"), "ready_timeout_s: must be a positive number of seconds", "not '30'"),
    (dict(colour="blue"), "colour: unknown key", "the keys are name, openapi"),
])
def test_each_bad_key_is_one_line_naming_file_and_key(tmp_path, keys, named, fix):
    path = write_service(tmp_path, **keys)
    with pytest.raises(ServiceFileError) as caught:
        load(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: {named}") and fix in message and "\n" not in message


@pytest.mark.parametrize("tables, arrays, named", [
    ({"headers": {"X-Count": 3}}, None, "headers: must be a table of strings"),
    ({"files": {"../escape.ini": "x"}}, None, "files.../escape.ini: must be a plain file name"),
    (None, {"population": [{"method": "POST"}]}, "population[0].path: must be a non-empty string"),
    (None, {"population": [{"method": "FETCH", "path": "/a"}]}, "population[0].method: 'FETCH' is not one of"),
    (None, {"population": [{"method": "GET", "path": "/a", "query": "x"}]}, "population[0].query: unknown key"),
    (None, {"population": [{"method": "PUT", "path": "/a", "named": "no"}]},
     "population[0].named: must be true or false, not 'no'"),
    (None, {"population": [{"method": "GET", "path": "/a/{draw:colour}"}]},
     "population: {draw:colour}: unknown kind 'colour'"),
    (None, {"population": [{"method": "GET", "path": "/a/{draw:@later}"},
                           {"method": "GET", "path": "/a/{draw:word@later}"}]},
     "population: {draw:@later} names no kind and no label drawn before it"),
])
def test_bad_tables_and_population_entries(tmp_path, tables, arrays, named):
    path = write_service(tmp_path, tables=tables, arrays=arrays)
    with pytest.raises(ServiceFileError) as caught:
        load(path)
    assert str(caught.value).startswith(f"{path}: {named}") and "\n" not in str(caught.value)


def test_a_file_that_is_not_toml_or_not_there(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(ServiceFileError, match=r"bad.toml: not TOML \(.*line 1.*\); see docs/services.md"):
        load(bad)
    with pytest.raises(ServiceFileError, match=r"missing.toml: cannot be read \(No such file or directory\)"):
        load(tmp_path / "missing.toml")
