"""StateEval's own session service from scenarios/rest/services/session_http.toml alone: started, read, reset by a restart
(an empty database), populated, and its one inferred dependency confirmed live."""

from __future__ import annotations

from pathlib import Path

from scenarios.rest.dependencies import PATH_PREFIX, infer
from scenarios.rest.process import Service
from scenarios.rest.servicefile import load
from tests.scenarios.rest.conftest import alive

SESSION = Path(__file__).resolve().parents[3] / "scenarios" / "rest" / "services" / "session_http.toml"
LISTING = "/api/sessions/{source}/{type}"


def test_the_session_service_from_its_file():
    with Service(load(SESSION)) as service:
        operations = {op.id: op for op in service.operations()}
        assert service.spec()["openapi"].startswith("3.1")
        assert "GET /info" not in {op.label for op in operations.values()}
        add = next(op for op in operations.values() if op.label == f"POST {LISTING}")
        get = next(op for op in operations.values() if op.label == f"GET {LISTING}/{{id}}")

        edge = next(e for e in infer(list(operations.values())) if (e.producer, e.consumer) == (add.id, get.id))
        assert (edge.field, edge.parameter, edge.reason) == ("$response.body#/id", "id", PATH_PREFIX)
        made = service.request("POST", "/api/sessions/lab_portal/settings", json={"colour": "red"})
        assert made.status_code == 201
        read = service.request("GET", f"/api/sessions/lab_portal/settings/{made.json()['id']}")
        assert read.status_code == 200 and read.json()["data"] == {"colour": "red"}

        pid = service.process.pid
        answers = service.reset(seed=1)
        assert not alive(pid)  # a restart
        assert [a.status_code for a in answers] == [201, 201]
        assert service.request("GET", "/api/sessions/lab_portal/settings").json() == []  # emptied
        stored = {kind: [s for portal in ("msk_portal", "public_portal")
                         for s in service.request("GET", f"/api/sessions/{portal}/{kind}").json()]
                  for kind in ("main_session", "virtual_study")}
        assert [s["id"] for s in stored["main_session"] + stored["virtual_study"]] == [a.json()["id"] for a in answers]
        assert stored["main_session"][0]["data"]["title"].endswith(" study")
        assert isinstance(stored["virtual_study"][0]["data"]["size"], int)
