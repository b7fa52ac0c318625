"""The model derived from a server's tool listing and confirmed live: readers, keys (sent by the client or made by
the server), references, and the writes dropped because they change nothing a reader shows."""

from __future__ import annotations

import random

import pytest

from scenarios.mcp.client import Answer, Server, ServerError, private
from scenarios.mcp.model import ITEM, Listing, Model, draw, leaves, probe, put, singular, tool_noun, words
from scenarios.mcp.serverfile import load
from tests.scenarios.mcp.conftest import FAKE_FILE, needs_memory, write_fake


def test_names_split_into_words():
    assert words("entityNames") == ["entity", "name"] and words("task_id") == ["task", "id"]
    assert singular("entities") == "entity" and singular("boxes") == "box" and singular("class") == "class"
    assert tool_noun("create_task") == "task" and tool_noun("add_observations") == "observation"


def test_leaves_and_draws_follow_the_schema():
    schema = {"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}}},
        "size": {"type": "integer", "minimum": 3, "maximum": 3}, "kind": {"enum": ["a"]}}, "required": ["items",
                                                                                                          "size"]}
    assert [p for p, _ in leaves(schema)] == [("items", ITEM, "name"), ("items", ITEM, "tags"), ("size",),
                                              ("kind",)]
    drawn = draw(schema, random.Random(0))
    assert set(drawn) == {"items", "size"} and drawn["size"] == 3 and len(drawn["items"]) == 1
    assert draw(schema, random.Random(0)) == drawn, "the same seed draws the same arguments"
    put(drawn, ("items", ITEM, "name"), "x")
    put(drawn, ("parent", "links", ITEM, "id"), "p")  # an optional argument the draw left out
    assert drawn["items"][0]["name"] == "x" and drawn["parent"] == {"links": [{"id": "p"}]}


@pytest.fixture(scope="module")
def fake_model(tmp_path_factory) -> Model:
    file = load(write_fake(tmp_path_factory.mktemp("fake")))
    with Server(file) as server:
        return probe(file, server)


def test_an_unannotated_server_is_derived_by_probing(fake_model):
    model = fake_model
    assert model.readers == ["list_tasks"], "a tool that takes nothing and changes nothing is a reader"
    assert [t["name"] for t in model.tools] == ["create_task", "complete_task", "delete_task", "list_tasks"]
    (key,) = model.keys
    assert (key.name, key.tool, key.sent, key.answer) == ("task id", "create_task", None, ("id",))
    assert {(e.tool, e.path, e.reason) for e in model.edges} == {("complete_task", ("task_id",), "name"),
                                                                 ("delete_task", ("task_id",), "name")}
    assert model.removes == ["delete_task"] and model.dropped == {}
    assert model.listings == [Listing("list_tasks", "task id", ("tasks",), ("id",), 1)], \
        "the reader lists the ids in the order made, after the population's one"
    assert Model.from_plain(model.file, model.to_plain()).to_plain() == model.to_plain()


def test_the_server_file_may_name_the_readers_and_the_arguments_they_are_called_with(tmp_path):
    """A server whose state no argument-free tool shows (a file system's tree of a folder) names its readers."""
    file = load(write_fake(tmp_path, FAKE_FILE + '\n[[readers]]\ntool = "list_tasks"\narguments = {}\n'))
    with Server(file) as server:
        model = probe(file, server)
    assert model.readers == ["list_tasks"] and model.reader_arguments == {"list_tasks": {}}

    class Seen:
        def __init__(self):
            self.calls = []

        def call(self, name, arguments):
            self.calls.append((name, arguments))
            return Answer({"tree": []})

    seen = Seen()
    shown = Model(file, model.tools, readers=["list_tasks"], reader_arguments={"list_tasks": {"path": "."}})
    assert shown.read(seen) == [{"error": False, "value": {"tree": []}}] and seen.calls == [("list_tasks",
                                                                                            {"path": "."})]
    assert Model.from_plain(file, shown.to_plain()).reader_arguments == {"list_tasks": {"path": "."}}
    wrong = load(write_fake(tmp_path, FAKE_FILE + '\n[[readers]]\ntool = "show_everything"\n'))
    with Server(wrong) as server, pytest.raises(ServerError, match="names the reader 'show_everything', which the "
                                                                  "server tasks does not list"):
        probe(wrong, server)


def test_state_shown_as_a_resource_is_read_by_naming_it(tmp_path):
    """A server whose state is an MCP resource rather than a tool (the voice lab's voice://speeches) names it as a
    reader: its contents are the final state, and the keys and references are confirmed through it."""
    file = load(write_fake(tmp_path, FAKE_FILE + '\n[[readers]]\nresource = "tasks://all"\n'))
    assert file.resources == ("tasks://all",) and file.readers == ()
    with Server(file) as server:
        model = probe(file, server)
        shown = model.read(server)
        assert server.read_resource("tasks://nothing").error
    assert shown == [{"error": False, "value": [{"id": "t-1", "title": shown[0]["value"][0]["title"],
                                                 "done": False}]}], "the population's task, read as JSON"
    assert model.readers == [] and [(k.name, k.answer) for k in model.keys] == [("task id", ("id",))]
    assert {(e.tool, e.path) for e in model.edges} == {("complete_task", ("task_id",)), ("delete_task", ("task_id",))}
    assert model.removes == ["delete_task"] and "list_tasks" in model.dropped, \
        "with the state declared, a tool found alone is no reader: it changes nothing the resource shows"
    wrong = load(write_fake(tmp_path, FAKE_FILE + '\n[[readers]]\nresource = "tasks://none"\n'))
    with Server(wrong) as server, pytest.raises(ServerError, match="names the resource 'tasks://none', which the "
                                                                  "server tasks does not read"):
        probe(wrong, server)


def test_the_instance_s_private_folder_is_written_the_same_in_every_answer(tmp_path):
    folder = tmp_path / "stateeval-x-1"
    answer = private(Answer({"dirs": [str(folder)]}, False, f"Allowed: {folder}"), folder)
    assert answer == Answer({"dirs": ["{dir}"]}, False, "Allowed: {dir}")
    assert private(Answer({"a": 1}), folder) == Answer({"a": 1})


def test_a_server_that_does_not_start_says_so_in_one_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('name = "bad"\ncommand = ["{python}", "-c", "import sys; print(\'broken\', file=sys.stderr)"]\n'
                    'ready_timeout_s = 20\n')
    with pytest.raises(ServerError) as caught:
        Server(load(path)).start()
    assert "did not start" in str(caught.value) and "broken" in str(caught.value) and "\n" not in str(caught.value)


@needs_memory
@pytest.mark.e2e  # the fake server's derivation runs by default; the memory server's takes 15 s of probing
def test_the_memory_server_is_derived_from_its_file_alone():
    file = load("memory")
    with Server(file) as server:
        model = probe(file, server)
    assert model.readers == ["read_graph"] and model.queries == ["search_nodes", "open_nodes"]
    (key,) = model.keys
    assert (key.name, key.sent, key.answer) == ("entity name", ("entities", ITEM, "name"), ("entities", 0, "name"))
    edges = {(e.tool, e.path): e.reason for e in model.edges}
    assert edges[("add_observations", ("observations", ITEM, "entityName"))] == "name"
    assert edges[("create_relations", ("relations", ITEM, "from"))] == "description"
    assert edges[("open_nodes", ("names",))] == "name" and edges[("search_nodes", ("query",))] == "effect"
    assert ("create_entities", ("entities", ITEM, "entityType")) not in edges, "no reference by coincidence"
    assert set(model.dropped) == {"delete_observations", "delete_relations"}, \
        "deletes of values no program can know change nothing: no APIs"
    assert model.removes == ["delete_entities"]
    assert model.listings == [Listing("read_graph", "entity name", ("entities",), ("name",), None)]
    assert model.listings[0].where == "['entities'][0]['name']"


def test_a_listing_names_what_the_population_made(fake_model):
    from scenarios.mcp.machine import McpScenario

    scenario = McpScenario(fake_model.file)
    scenario.__dict__["model"] = fake_model
    apis = {a.name: a for a in scenario.apis}
    state = scenario.initial_state(random.Random(0))
    assert scenario.describe_init(state) == ("The setup block defines nothing. The server already holds a task that "
                                             "the setup block does not name.")
    assert apis["take_task_id"].bindings(state) == [], "nothing listed yet"
    read = apis["list_tasks"].apply(state, (), random.Random(0))
    assert scenario.preference(state, apis["take_task_id"], (read.outputs[0],), 3) > 1, "a fresh answer is used"
    (binding,) = apis["take_task_id"].bindings(state)
    take = apis["take_task_id"].apply(state, binding, random.Random(0))
    assert take.code == f"{take.outputs[0]} = {read.outputs[0]}['tasks'][0]['id']"
    assert apis["complete_task"].bindings(state) == [(take.outputs[0],)], "the taken id is a task's"
    apis["list_tasks"].apply(state, (), random.Random(0))
    assert apis["take_task_id"].bindings(state) == [], "the first task listed has a name now: no second take"
