"""The session scenario end to end: the builder's simulated store agrees with the real service, tasks build,
references score 100%, a skipped update or delete fails on the stored state, and server-made ids compare equal
for every correct program.

Fuzzed reference programs are trusted code, so the agreement check runs them here against one `SessionWorld`
(a real service process); the build and the scoring go through the real pipeline and sandbox.
"""

from __future__ import annotations

import json
import random
import re

import pytest

from builder import facts
from builder.config import BuildConfig
from builder.fuzz import CoverageRecorder
from builder.pipeline import make_cases
from builder.program import generate_program
from builder.translate import TemplateTranslator
from evaluate.scoring import score
from scenarios import get_scenario, scenario_names
from scenarios.session import ASSET, DATA, EMAIL, SESSIONS, SID, STATUS
from scenarios.session.store import canonical
from scenarios.session.world import SessionWorld
from tests.scenarios.conftest import small_build_of

SEEDS = range(80)
SERVICE_APIS = {"list_sessions", "add_session", "query_sessions", "update_session", "delete_session"}
MUTATION = re.compile(r"^\s*(status\d+) = requests\.(put|delete)\(")


@pytest.fixture(scope="module")
def scenario():
    return get_scenario("session")


@pytest.fixture(scope="module")
def world():
    w = SessionWorld()
    yield w
    w.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return small_build_of(tmp_path_factory, "session")


def _run(world: SessionWorld, case: dict, code: str) -> tuple[dict, dict]:
    """Reset, run setup + code in the namespace the worker gives its child, snapshot: (namespace, state)."""
    world.reset(case)
    ns = {"__name__": "__main__"}
    ns.update(world.namespace(case))
    exec(case["setup_code"], ns)
    exec(code, ns)
    return ns, world.snapshot(None)


def test_registered(scenario):
    assert "session" in scenario_names() and scenario.name == "session"
    assert SERVICE_APIS <= {a.name for a in scenario.apis}


def test_fuzzing_reaches_every_service_api(scenario):
    recorder = CoverageRecorder()
    seen = set()
    for s in range(40):
        program = generate_program(scenario, random.Random(f"session-test/{s}"), recorder)
        seen |= {c.api for c in program.all_calls}
    assert SERVICE_APIS | {"take", "edit_data"} <= seen


def test_simulated_store_agrees_with_the_service(scenario, world):
    """Every path of many fuzzed programs: the stored sessions and each RESULT value are what the builder solved."""
    recorder = CoverageRecorder()
    checked = 0
    for s in SEEDS:
        program = generate_program(scenario, random.Random(f"session-test/{s}"), recorder)
        for case in _fixed_cases(program):
            path = program.orelse if case["branch"] == "else" else program.then
            case = {**case, "assets": [{**a, "meta": json.loads(a["meta"])} for a in case["assets"]]}
            ns, state = _run(world, case, program.reference_code())
            simulated = path.state.extra["store"]
            assert [(v["source"], v["type"], canonical(v["data"])) for v in state.values()] == [
                (r["source"], r["type"], canonical(r["data"])) for r in simulated], program.reference_code()
            ids = list(state)
            for r, id_ in zip(simulated, ids):
                assert r["id"] in (None, id_)  # pre-loaded sessions keep their stored ids
            for name in path.result_vars(scenario):
                var, got = path.state.vars[name], ns[name]
                if var.type == SESSIONS:
                    assert [x["data"] for x in got] == [x["data"] for x in var.value["items"]]
                    assert {(x["source"], x["type"]) for x in got} <= {(var.value["source"], var.value["type"])}
                elif var.type in (DATA, EMAIL):
                    assert got == var.value
                elif var.type == SID:
                    assert isinstance(got, str) and len(got) == 24
            checked += 1
    assert checked > len(SEEDS)


def _fixed_cases(program) -> list[dict]:
    """The original and flipped test cases as rows: the values the builder's simulation reasoned on."""
    return [c.to_row() for c in make_cases(program, BuildConfig(), 0) if c.name in ("original", "flipped")]


def test_status_codes_and_listings_reach_result(scenario):
    """An unused status goes into RESULT (the paper's sink); a listing does even when later calls use its ids."""
    statuses = listings = 0
    for s in SEEDS:
        program = generate_program(scenario, random.Random(f"session-test/status/{s}"), CoverageRecorder())
        for path in filter(None, (program.then, program.orelse)):
            result = set(path.result_vars(scenario))
            for v in path.state.vars.values():
                if v.type == STATUS and not v.consumers:
                    assert v.name in result
                    statuses += 1
                if v.type == SESSIONS:
                    assert v.name in result
                    listings += 1
    assert statuses and listings


def test_no_two_statuses_or_edits_can_be_told_apart_by_nothing(scenario):
    """Within a path, RESULT never holds two equal status codes (an update answers 200, a delete 204: two updates'
    statuses could be swapped and every test case would pass), and no edit of session data reads a value another
    variable in scope holds too (the title of an edited copy whose original holds the same title): a program that
    reads the other variable would build the same dict on every test case."""
    statuses = edits = 0
    for s in SEEDS:
        program = generate_program(scenario, random.Random(f"session-test/coincide/{s}"), CoverageRecorder())
        for leaf in program.leaves():
            variables = leaf.path.state.vars
            held = [v.value for v in variables.values() if v.type == STATUS and not v.consumers]
            assert len(held) == len(set(held)), program.reference_code()
            statuses += len(held)
            names = list(variables)
            for call in leaf.calls:
                if call.api != "edit_data":
                    continue
                edits += 1
                source, made = variables[call.inputs[0]].value, call.outputs[0]
                field = {"retitle": "title", "owner": "owner"}.get(call.args["kind"], "members")
                before = [variables[n] for n in names[:names.index(made)] if n not in call.inputs]
                for other in (v for v in before if v.type == DATA):
                    rest = {k: x for k, x in other.value.items() if k != field}
                    assert rest != {k: x for k, x in source.items() if k != field}, (call.code, other.name)
                    if field != "owner":
                        assert other.value.get(field) != source.get(field), (call.code, other.name)
                    assert other.value != variables[made].value, (call.code, other.name)  # e.g. added, then removed
    assert statuses and edits


def test_every_read_finds_something_new(scenario):
    """No list or query answers an empty list (a query of a misspelt field would answer the same), and none
    answers exactly what another listing on its path holds (the two would be interchangeable). Dead writes are
    checked where they would show: tests/builder/test_mutate.py."""
    for s in SEEDS:
        program = generate_program(scenario, random.Random(f"session-test/live/{s}"), CoverageRecorder())
        for path in filter(None, (program.then, program.orelse)):
            listings = [[(i["key"], canonical(i["data"])) for i in v.value["items"]]
                        for v in path.state.vars.values() if v.type == SESSIONS]
            assert all(listings), program.reference_code()
            assert len({json.dumps(x) for x in listings}) == len(listings), program.reference_code()


def test_world_reset_restores_the_stored_sessions(scenario, world):
    program = generate_program(scenario, random.Random("session-test/reset"), CoverageRecorder())
    case = _fixed_cases(program)[0]
    case = {**case, "assets": [{**a, "meta": json.loads(a["meta"])} for a in case["assets"]]}
    stored = json.loads(next(a["data"] for a in case["assets"] if a["name"] == ASSET))
    expected = {s["id"]: {"source": s["source"], "type": s["type"], "data": s["data"]} for s in stored}
    world.reset(case)
    assert world.snapshot(None) == expected
    _, after = _run(world, case, 'requests.post(f"{BASE_URL}/api/sessions/probe_portal/group", json={"p": 1})\n')
    assert len(after) == len(expected) + 1
    world.reset(case)
    assert world.snapshot(None) == expected
    # A program that kills the service does not break the next test case: reset starts a new one.
    world.service.proc.kill()
    world.service.proc.wait()
    world.reset(case)
    assert world.service.alive and world.snapshot(None) == expected
    ns, _ = _run(world, case, 'n = len(requests.get(f"{BASE_URL}/api/sessions/msk_portal/group").json())\n')
    assert ns["BASE_URL"] == world.service.url


def test_build_keeps_at_least_95_percent(built):
    report, tasks = built
    attempts, kept = report["attempts"]["session"], report["kept"]["session"]
    assert kept >= 0.95 * attempts and len(tasks) == kept
    assert sum(report["rejections"].values()) == attempts - kept
    assert all(reason.startswith("session: ") for reason in report["rejections"])


def test_instructions_never_quote_stored_values(built):
    _, tasks = built
    for t in tasks:
        case = t.test_cases[0]
        stored = json.loads(next(a["data"] for a in case.assets if a["name"] == ASSET))
        values = {s["id"] for s in stored}
        for s in stored:
            values |= {s["data"]["title"], s["data"]["description"], s["data"]["owner"], *s["data"]["members"]}
        values |= set(re.findall(r"'([^']*@[^']*)'", t.setup_code))  # e-mails declared in the setup block
        for variant in ("instruction", "instruction_steps", "instruction_vague"):
            leaked = [v for v in values if v in getattr(t, variant)]
            assert not leaked, (t.task_id, variant, leaked)
        assert "BASE_URL = service_url()" in t.setup_code


def test_reference_scores_100_percent(built, sandbox):
    _, tasks = built
    results = score(tasks, {t.task_id: [t.reference_program] for t in tasks}, sandbox)
    assert [(r.task_id, r.status, r.error) for r in results if r.status != "pass"] == []
    assert len(results) == len(tasks)


def _faked(code: str, index: int, status: str, method: str) -> str:
    """The program with line `index` (an update or delete) replaced by the status it would have answered."""
    lines = code.splitlines()
    indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
    answer = {"put": 200, "delete": 204}[method]
    return "\n".join(lines[:index] + [f"{indent}{status} = {answer}"] + lines[index + 1:]) + "\n"


def test_skipping_a_required_update_or_delete_fails_on_state(built, sandbox):
    """Skip an update or delete that is the last call before RESULT but keep its status: RESULT is unchanged,
    the stored state is not."""
    _, tasks = built
    variants = {}
    for t in tasks:
        lines = t.reference_program.splitlines()
        for i, line in enumerate(lines[:-1]):
            m = MUTATION.match(line)
            if m and lines[i + 1].strip().startswith("RESULT ="):
                variants[t.task_id] = [_faked(t.reference_program, i, m.group(1), m.group(2))]
                break
    assert variants, "the small build should hold a program ending in an update or a delete"
    results = score([t for t in tasks if t.task_id in variants], variants, sandbox)
    assert len(results) == len(variants)
    for r in results:
        assert r.status == "result_error", (r.task_id, r.status, r.error)
        assert "state" in r.error and "RESULT" not in r.error, r.error


def test_server_made_ids_compare_equal_for_correct_but_different_programs(built, sandbox):
    """Extra reads, a probe session added and deleted elsewhere, and data sent with its keys in another order
    change no id: every such program still passes, RESULT ids and stored state included."""
    _, tasks = built
    probe = (
        "_seen = requests.get(f\"{BASE_URL}/api/sessions/{src1}/group\").json()\n"
        "_probe = requests.post(f\"{BASE_URL}/api/sessions/probe_portal/group\", json={\"probe\": 1}).json()[\"id\"]\n"
        "requests.delete(f\"{BASE_URL}/api/sessions/probe_portal/group/{_probe}\")\n"
    )
    codes, new_ids = {}, 0
    for t in tasks:
        reordered = re.sub(r"json=(data\d+)\)", r"json=dict(reversed(list(\1.items()))))", t.reference_program)
        codes[t.task_id] = [probe + reordered]
        for case in t.test_cases:
            stored = {s["id"] for s in json.loads(next(a["data"] for a in case.assets if a["name"] == ASSET))}
            new_ids += len(set(json.loads(case.expected_state)) - stored)
    assert new_ids > 0, "the small build should create sessions, so that server-made ids are compared"
    results = score(tasks, codes, sandbox)
    assert [(r.task_id, r.status, r.error) for r in results if r.status != "pass"] == []


# ------------------------------------------------------------------------------ natural and vague instructions

PROSE = ("natural", "vague")
TEXT_SEEDS = range(150)


def _texts(scenario):
    """(program, {variant: (text, refs)}) for programs with one or two splits, worded with their own seeds."""
    for s in TEXT_SEEDS:
        program = generate_program(scenario, random.Random(f"session-test/text/{s}"), CoverageRecorder(),
                                   branches=1 + s % 2, branch_probability=0.7)
        yield program, {v: TemplateTranslator().translate(program, random.Random(f"words/{s}/{v}"), v)
                        for v in ("steps", *PROSE)}


def _stated(text: str, form: str) -> list[re.Match]:
    """Where `text` states `form` standing alone (the rule `builder/facts.py` counts by)."""
    return list(re.finditer(r"(?<![\w`'\[])" + re.escape(form) + r"(?![\w`'])", text))


def test_natural_and_vague_texts_name_no_variable_api_or_path_and_state_every_fact(scenario):
    apis = [a.name for a in scenario.apis]
    for program, texts in _texts(scenario):
        made = {v for c in program.all_calls for v in c.outputs}
        required = facts.required(program)
        for variant, (text, refs) in texts.items():
            assert facts.missing(text, required, refs) == [], (variant, text)
            if variant == "steps":
                continue
            assert [n for n in made if re.search(rf"\b{n}\b", text)] == [], (variant, text)
            assert [a for a in apis if re.search(rf"\b{a}\b", text, re.I)] == [], (variant, text)
            if variant == "vague":
                assert not re.search(r"/api/|data\.(owner|members|title)|\b(GET|POST|PUT|DELETE)\b", text), text
        refs = texts["natural"].refs
        for leaf in program.leaves():  # two results one path can reach never read the same
            phrases = [refs[o] for c in leaf.calls for o in c.outputs]
            assert len(set(phrases)) == len(phrases), phrases


def test_dropping_a_value_from_a_natural_or_vague_text_is_caught(scenario):
    """Each value the oracle depends on is stated exactly as often as the program needs it, in words no other
    phrase uses: cutting any one statement out of the text leaves a fact missing."""
    kinds, cut = set(), 0
    for program, texts in _texts(scenario):
        required = facts.required(program)
        groups: dict[tuple[str, ...], list] = {}
        for f in required:
            if f.kind == "value":
                groups.setdefault(f.forms, []).append(f)
        for variant in PROSE:
            text, refs = texts[variant]
            for forms, group in groups.items():
                found = sorted((m for form in forms for m in _stated(text, form)), key=lambda m: m.start())
                assert len(found) == len(group), (variant, forms, text)
                m = found[0]
                dropped = text[:m.start()] + text[m.end():]
                lost = facts.missing(dropped, required, refs)
                assert any(f"{group[0].what}:" in line for line in lost), (variant, forms, lost)
                kinds.add(group[0].what)
                cut += 1
    assert cut >= 300
    assert {"list_sessions: type", "add_session: type", "query_sessions: type", "query_sessions: field",
            "update_session: position", "delete_session: position", "take: pick", "edit_data: suffix",
            "edit_data: change"} <= kinds


def test_a_text_without_the_type_position_or_picked_part_misses_it(scenario):
    """The session type, a target's position and which part of a session is picked are facts of their own."""
    checked = set()
    for program, texts in _texts(scenario):
        text, refs = texts["natural"]
        required = facts.required(program)
        for old, new, what in (("`group`", "`main_session`", "type"), ("last session in", "session in", "position"),
                               ("the id of the first session", "the data of the first session", "take: pick")):
            if old in text and text.count(old) == 1:
                assert any(what in line for line in facts.missing(text.replace(old, new), required, refs)), text
                checked.add(what)
    assert checked == {"type", "position", "take: pick"}
