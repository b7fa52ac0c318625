"""A live service from its file (the stdlib fake service): start, ready, files, headers, spec, reset (a request or a
restart), population, stop; every failure one line; no process left behind, a child of the service's included."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scenarios.rest import process
from scenarios.rest.process import Service, ServiceError
from scenarios.rest.schema import SpecError
from scenarios.rest.servicefile import RESTART, load
from tests.scenarios.rest.conftest import FAKE, FAKE_SPEC, alive, write_service


def start_with(tmp_path, *args: str, **keys) -> Service:
    start = ["{python}", str(FAKE), "{port}", "--spec", "{dir}/openapi.json", *args]
    return Service(load(write_service(tmp_path, start=start, **keys)))


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_a_round_trip_with_the_files_and_headers_of_the_file(tmp_path):
    files = {"openapi.json": json.dumps(FAKE_SPEC), "conf.ini": "port = {port}\ndata = {dir}/data\n"}
    path = write_service(tmp_path, tables={"files": files, "headers": {"Authorization": "Bearer t0ken"}})
    with Service(load(path)) as service:
        assert service.url == f"http://127.0.0.1:{service.port}"
        assert (service.dir / "conf.ini").read_text() == f"port = {service.port}\ndata = {service.dir}/data\n"
        assert oct(service.dir.stat().st_mode & 0o777) == "0o700"
        assert service.request("POST", "/items", json={"a": 1}).json() == {"id": 1}
        assert service.request("GET", "/items").json() == [{"path": "/items", "body": {"a": 1}}]
        assert service.request("GET", "/headers").json()["Authorization"] == "Bearer t0ken"
        assert [op.label for op in service.operations()] == ["GET /items", "POST /items", "GET /items/{item}"]
        assert service.spec() == FAKE_SPEC
        pid, folder = service.process.pid, service.dir
        assert (folder / process.LOG_NAME).exists()
    assert not alive(pid) and not folder.exists()


def test_the_spec_from_a_file_beside_the_service_file(tmp_path):
    (tmp_path / "api.json").write_text(json.dumps(FAKE_SPEC))
    with Service(load(write_service(tmp_path, openapi="api.json", include=["GET *"]))) as service:
        assert [op.id for op in service.operations()] == ["get_items", "get_items_item"]


def test_reset_empties_and_sends_the_population_drawn_from_the_seed(tmp_path):
    population = [{"method": "POST", "path": "/items/{draw:word@kind}", "body": {"n": "{draw:int:1:1000000}"}},
                  {"method": "POST", "path": "/items/{draw:@kind}/more"}]
    with Service(load(write_service(tmp_path, arrays={"population": population}))) as service:
        service.request("POST", "/items", json={"left": "over"})
        answers = service.reset(seed=5)
        assert [a.json() for a in answers] == [{"id": 1}, {"id": 2}]
        first = service.request("GET", "/items").json()
        kind = first[0]["path"].split("/")[2]
        assert first[1]["path"] == f"/items/{kind}/more" and isinstance(first[0]["body"]["n"], int)
        service.reset(seed=5)
        assert service.request("GET", "/items").json() == first  # the same seed, the same state
        service.reset(seed=6)
        assert service.request("GET", "/items").json() != first


def test_a_restart_reset_is_a_fresh_process_and_folder_on_the_same_port(tmp_path):
    with Service(load(write_service(tmp_path, reset=RESTART))) as service:
        service.request("POST", "/items", json={"left": "over"})
        port, pid, folder = service.port, service.process.pid, service.dir
        service.reset()
        assert service.port == port and service.process.pid != pid and service.dir != folder
        assert not alive(pid) and not folder.exists()
        assert service.request("GET", "/items").json() == []


def test_stop_ends_the_whole_group_and_a_service_that_ignores_sigterm(tmp_path, monkeypatch):
    monkeypatch.setattr(process, "STOP_TIMEOUT_S", 0.5)
    child_file = tmp_path / "child.pid"
    service = start_with(tmp_path, "--child", str(child_file), "--ignore-term").start()
    pid, child = service.process.pid, int(child_file.read_text())
    assert alive(pid) and alive(child)
    service.stop()
    assert not alive(pid)  # reaped by stop
    # The child ignores SIGTERM too (it inherits that): SIGKILL ends it, delivered as the kernel gets to it
    deadline = time.monotonic() + 60
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)
    service.stop()  # twice is fine


def test_the_context_manager_stops_on_an_error(tmp_path):
    with pytest.raises(KeyError):
        with start_with(tmp_path) as service:
            pid = service.process.pid
            raise KeyError("in the test")
    assert not alive(pid)


def test_a_start_command_that_exits_says_what_it_printed(tmp_path):
    start = ["{python}", "-c", "import sys; print('loading'); sys.stderr.write('cannot open config.ini\\n'); "
                               "sys.exit(3)"]
    path = write_service(tmp_path, start=start)
    with pytest.raises(ServiceError) as caught:
        Service(load(path)).start()
    message = one_line(caught)
    assert message.startswith(f"{path}: start: {sys.executable} -c ")
    assert "exited with status 3 before http://127.0.0.1:" in message
    assert message.endswith("it printed: loading | cannot open config.ini")


def test_a_start_command_that_cannot_run(tmp_path):
    path = write_service(tmp_path, start=["/no/such/program", "{port}"])
    with pytest.raises(ServiceError) as caught:
        Service(load(path)).start()
    assert one_line(caught).startswith(f"{path}: start: cannot run /no/such/program ") and "fix the command" in \
        str(caught.value)


def test_a_service_that_never_becomes_ready(tmp_path):
    service = start_with(tmp_path, "--ready", "503", ready_timeout_s=1)
    with pytest.raises(ServiceError) as caught:
        service.start()
    message = one_line(caught)
    assert f": ready: GET http://127.0.0.1:{service.port}/ready did not answer 2xx within 1 s (last: " in message
    assert "raise ready_timeout_s" in message
    assert service.process is None and service.dir is None  # stopped, folder removed


def test_a_spec_that_cannot_be_fetched_or_does_not_parse(tmp_path):
    with Service(load(write_service(tmp_path, openapi="/nowhere.json"))) as service:
        with pytest.raises(ServiceError) as caught:
            service.spec()
        assert f"openapi: GET {service.url}/nowhere.json answered 404: '{{\"error\": \"no such path\"}}'" in \
            one_line(caught)
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    path = write_service(garbage, tables={"files": {"openapi.json": "{\"openapi\": \"3.0.0\", \"paths\": {"}})
    with Service(load(path)) as service:
        with pytest.raises(SpecError) as caught:
            service.spec()
        assert one_line(caught).startswith(f"the document at {service.url}/openapi.json: ")


def test_a_document_with_no_usable_operation_names_the_filter(tmp_path):
    with Service(load(write_service(tmp_path, exclude=["*_items*"]))) as service:
        with pytest.raises(SpecError) as caught:
            service.operations()
    assert one_line(caught).startswith("no operation of fake's document is left after include = [] and exclude = "
                                       "['*_items*']")


def test_a_reset_that_fails_or_a_population_request_that_fails(tmp_path):
    path = write_service(tmp_path, start=["{python}", str(FAKE), "{port}", "--reset", "500"])
    with Service(load(path)) as service:
        with pytest.raises(ServiceError) as caught:
            service.reset()
    assert one_line(caught) == (f"{path}: reset: POST /reset answered 500: '{{\"error\": \"cannot reset now\"}}'; "
                                f"fix reset (or write \"restart\")")
    other = tmp_path / "other"
    other.mkdir()
    path = write_service(other, arrays={"population": [{"method": "POST", "path": "/nowhere/{draw:int:7:7}"}]})
    with Service(load(path)) as service:
        with pytest.raises(ServiceError) as caught:
            service.reset()
    assert one_line(caught) == f"{path}: population[0]: POST /nowhere/7 answered 404: '{{\"error\": \"no such path\"}}'"


def test_requests_to_a_service_not_started_or_gone(tmp_path):
    service = start_with(tmp_path)
    with pytest.raises(ServiceError, match="the service is not running; start"):
        service.request("GET", "/items")
    with service:
        os.kill(service.process.pid, signal.SIGKILL)
        service.process.wait()
        with pytest.raises(ServiceError) as caught:
            service.request("GET", "/items")
        assert f"GET {service.url}/items failed (ConnectionError)" in one_line(caught)


def test_requests_go_as_a_requests_session_sends_them_redirects_followed_cookies_kept(tmp_path):
    with start_with(tmp_path) as service:
        moved = service.request("GET", "/moved")
        assert (moved.status_code, moved.json(), moved.url) == (200, [], f"{service.url}/items")
        assert [r.status_code for r in moved.history] == [302]
        assert "Cookie" not in service.request("GET", "/headers").json()
        service.request("GET", "/cookie")
        assert service.request("GET", "/headers").json()["Cookie"] == "seen=yes"


def test_one_connection_kept_alive_and_a_new_one_once_the_service_ended_it(tmp_path):
    with start_with(tmp_path, "--idle-s", "0.2") as service:
        assert service.request("GET", "/items").json() == []
        kept = service._connection
        assert service.request("POST", "/items", json={"a": 1}).status_code == 201
        assert service._connection is kept
        deadline = time.monotonic() + 60
        while not process._readable(kept.sock) and time.monotonic() < deadline:
            time.sleep(0.05)  # until the service has ended the idle connection
        assert process._readable(kept.sock)
        assert service.request("GET", "/items").json() == [{"path": "/items", "body": {"a": 1}}]
        assert service._connection is not kept


def test_a_service_never_stopped_is_stopped_when_python_exits(tmp_path):
    path = write_service(tmp_path)
    script = ("import sys; from scenarios.rest.process import Service; from scenarios.rest.servicefile import load; "
              f"s = Service(load({str(path)!r})).start(); print(s.process.pid, s.dir, flush=True)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[3])
    assert done.returncode == 0, done.stderr[-2000:]
    pid, folder = done.stdout.split()
    assert not alive(int(pid)) and not Path(folder).exists()
