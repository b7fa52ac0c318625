"""The agent-readiness report (scenarios/readiness.py): on a service and a server whose documentation has gaps planted
beside parts it documents well, every planted gap is found, with its evidence, and nothing it documents is reported
missing. The real subjects' reports (Kinto, the memory server) are checked on their builds, beside which they are
written (tests/builder/test_service_build.py, test_mcp_build.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scenarios.readiness import Finding, enrich, render_json, render_markdown, similar
from tests.scenarios.mcp.conftest import write_fake
from tests.scenarios.rest.conftest import isolated_registry, toml_value  # noqa: F401 - a fixture

SHELF = Path(__file__).parent / "rest" / "shelf_service.py"
ITEM = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}
BOOK = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"},
                                         "created": {"type": "integer"}}}
PAGE = {"type": "object", "properties": {"items": {"type": "array", "items": ITEM}, "next": {"type": "string"}}}
BODY = {"content": {"application/json": {"schema": {"type": "object", "properties": {"name": {"type": "string"}}}}}}
SHELF_ID = {"name": "shelf_id", "in": "path", "required": True, "schema": {"type": "string"},
            "description": "the id of the shelf"}


def ok(schema, status="200"):
    return {status: {"description": "done", "content": {"application/json": {"schema": schema}}}}


# Planted: GET /shelves/{shelf_id} lists no 404 (GET .../books/{book_id} does); POST /shelves's schema leaves out
# `created` (that of POST .../books lists it); GET /shelves pages through an undescribed `limit` (that of .../books
# says so); DELETE /shelves/{shelf_id} deletes the books on it unsaid; the two item reads are described alike.
SPEC = {
    "openapi": "3.0.3", "info": {"title": "shelves", "version": "1"},
    "paths": {
        "/shelves": {
            "get": {"summary": "List the shelves", "parameters": [
                {"name": "limit", "in": "query", "schema": {"type": "integer"}}], "responses": ok(PAGE)},
            "post": {"summary": "Add a shelf", "requestBody": BODY, "responses": ok(ITEM, "201")}},
        "/shelves/{shelf_id}": {
            "parameters": [SHELF_ID],
            "get": {"summary": "Get one shelf by its id", "responses": ok(ITEM)},
            "put": {"summary": "Put a shelf of this id", "requestBody": BODY, "responses": ok(ITEM, "201")},
            "delete": {"summary": "Delete a shelf", "responses": {"204": {"description": "deleted"}}}},
        "/shelves/{shelf_id}/books": {
            "parameters": [SHELF_ID],
            "get": {"summary": "List a shelf's books", "parameters": [
                {"name": "limit", "in": "query", "schema": {"type": "integer"},
                 "description": "at most this many books a page; `next` in the answer asks for the next page"}],
                "responses": ok(PAGE)},
            "post": {"summary": "Add a book to a shelf", "requestBody": BODY, "responses": ok(BOOK, "201")}},
        "/shelves/{shelf_id}/books/{book_id}": {
            "parameters": [SHELF_ID, {"name": "book_id", "in": "path", "required": True,
                                      "schema": {"type": "string"}, "description": "the id of the book"}],
            "get": {"summary": "Get one shelf book by its id",
                    "responses": {**ok(BOOK), "404": {"description": "no such book"}}},
            "put": {"summary": "Put a book of this id on the shelf", "requestBody": BODY, "responses": ok(BOOK, "201")},
            "delete": {"summary": "Take a book off its shelf",
                       "responses": {"204": {"description": "deleted"}, "404": {"description": "no such book"}}}},
    },
}


def shelf_file(folder: Path) -> Path:
    lines = ['name = "shelves"', 'openapi = "/openapi.json"',
             f'start = {toml_value(["{python}", str(SHELF), "{port}", "{dir}/openapi.json"])}',
             'ready = "/openapi.json"', 'reset = "POST /reset"',
             f'\n[files]\n"openapi.json" = {toml_value(json.dumps(SPEC))}',
             '\n[[population]]\nmethod = "PUT"\npath = "/shelves/{draw:word@shelf}"\nbody = { name = "{draw:word}" }',
             '\n[[population]]\nmethod = "PUT"\npath = "/shelves/{draw:@shelf}/books/{draw:hex:6}"\n'
             'body = { name = "{draw:word}" }']
    path = folder / "shelves.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def found(findings: list[Finding]) -> dict[tuple[str, str], Finding]:
    return {(f.operation, f.kind): f for f in findings}


@pytest.fixture(scope="module")
def shelves(tmp_path_factory):
    from scenarios.rest.model import probe
    from scenarios.rest.process import Service
    from scenarios.rest.readiness import findings
    from scenarios.rest.servicefile import load

    file = load(shelf_file(tmp_path_factory.mktemp("shelves")))
    with Service(file) as service:
        model = probe(file, service, service.operations())
        return findings(model, service)


def test_the_planted_gaps_of_a_service_are_found_with_their_evidence(shelves):
    by = found(shelves)
    missing = by[("GET /shelves/{shelf_id}", "undocumented status")]
    assert "404" in missing.finding and missing.evidence.startswith("GET /shelves/no-such-item-0 -> 404")
    made = by[("POST /shelves", "made-up fields")]
    assert "`created`" in made.finding and "`id`" not in made.finding, "the schema lists id: only created is made up"
    pages = by[("GET /shelves", "pagination")]
    assert "`next`" in pages.finding and "1 of 3 items" in pages.evidence
    cascade = by[("DELETE /shelves/{shelf_id}", "delete cascade")]
    assert cascade.finding.startswith("also deletes the books under it") and cascade.evidence.endswith("-> 404")
    assert ("GET /shelves/{shelf_id}", "indistinct") in by, "two reads described alike"
    assert ("GET /shelves", "undescribed parameter") in by and "`limit`" in by[("GET /shelves",
                                                                                "undescribed parameter")].finding


def test_what_a_service_documents_is_not_reported_missing(shelves):
    by = found(shelves)
    assert ("GET /shelves/{shelf_id}/books/{book_id}", "undocumented status") not in by, "its 404 is listed"
    assert ("POST /shelves/{shelf_id}/books", "made-up fields") not in by, "its schema lists created"
    assert ("GET /shelves/{shelf_id}/books", "pagination") not in by, "its limit says it pages"
    assert not any(f.kind == "no description" for f in shelves), "every operation has a summary"
    assert not any(f.kind == "undescribed parameter" and f.operation != "GET /shelves" for f in shelves)
    assert all(f.evidence for f in shelves if f.kind in ("undocumented status", "made-up fields", "pagination",
                                                         "delete cascade")), "an observed finding shows its call"


def test_the_report_is_one_table_and_json(shelves):
    markdown = render_markdown("shelves", shelves)
    table = [line for line in markdown.splitlines() if line.startswith("| ")]
    assert len(table) == len(shelves) + 1 and table[0].startswith("| operation | kind | finding | evidence |")
    plain = json.loads(render_json("shelves", shelves))
    assert len(plain["findings"]) == len(shelves) and {"recommendation", "evidence", "observed"} <= set(
        plain["findings"][0])
    assert similar("Get one shelf by its id", "Get one shelf book by its id")
    assert not similar("List the shelves", "Add a shelf")


def test_the_enriched_documentation_adds_what_was_observed_per_operation_and_nothing_else(shelves):
    doc = "# Shelves\n\nGET /shelves: list the shelves.\n"
    enriched = enrich(doc, shelves)
    assert enriched.startswith(doc) and "## Observed behaviour" in enriched
    added = [line for line in enriched.splitlines() if line.startswith("- `")]
    assert len(added) == sum(f.observed for f in shelves), "one line per observed finding, none from the text alone"
    assert "- `GET /shelves/{shelf_id}` answers 404 for an item that does not exist (seen: GET /shelves/no-such-" \
        in enriched, "the behaviour as documentation states it, without 'its responses do not list it'"
    assert "do not list it" not in enriched and "undescribed" not in enriched
    assert enrich(doc, [f for f in shelves if not f.observed]) == doc, "nothing observed: the same text"


def test_a_server_s_planted_gaps_are_found_by_the_command(tmp_path, isolated_registry):
    from builder.__main__ import main

    assert main(["readiness", "--mcp", str(write_fake(tmp_path)), "--out", str(tmp_path / "r")]) == 0
    plain = json.loads((tmp_path / "r" / "tasks.readiness.json").read_text())
    by = {(f["operation"], f["kind"]): Finding(**{k: v for k, v in f.items() if k != "observed"})
          for f in plain["findings"]}
    assert (tmp_path / "r" / "tasks.readiness.md").read_text().startswith("# Agent readiness: tasks")
    error = by[("complete_task", "undocumented error")]
    assert "task id that does not exist" in error.finding and "error: " in error.evidence
    assert ("create_task", "made-up fields") in by and ("list_tasks", "untyped answer") in by
    assert "`title`" in by[("create_task", "undescribed parameter")].finding
    assert ("list_tasks", "undocumented error") not in by, "a reader takes no key"


def test_readiness_needs_a_file_and_names_the_kind_it_was_given(capsys):
    from builder.__main__ import main

    with pytest.raises(SystemExit) as caught:
        main(["readiness"])
    assert caught.value.code == 2
    with pytest.raises(SystemExit) as caught:
        main(["readiness", "--mcp", "no-such-server"])
    error = capsys.readouterr().err
    assert caught.value.code == 2 and "give the path of a server file" in error and "memory" in error

