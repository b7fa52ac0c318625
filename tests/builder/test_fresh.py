"""Fresh splits: overlap keys, the overlap build step, seeds and dates, --against a Hub release, evaluate --since."""

from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace

import pytest

from builder.config import BuildConfig
from builder.fresh import OverlapIndex, TaskView, call_sequence_keys, ngrams, parse_source, prepare, program_key
from builder.pipeline import build
from core.records import DatasetError, created_after, load_tasks
from tests.conftest import SMALL

STRAIGHT = """\
v1 = torch.permute(x1, (0, 2, 1, 3))
v2 = torch.cat([v1, x2], dim=1)
RESULT = [v2]
"""
RENAMED = """\
y7 = torch.permute( a9, (0,2,1,3) )

y8 = torch.cat([y7, b3], dim=1)
RESULT = [y8]
"""
SETUP = 'x1 = load_tensor("x1")\nx2 = load_tensor("x2")\n'
SETUP_RENAMED = 'a9 = load_tensor("a9")\nb3 = load_tensor("b3")\n'
BRANCHED = """\
w1 = torch.permute(x1, (0, 2, 1, 3))
if w1.shape[0] > COND:
    w2 = torch.cat([w1, x2], dim=1)
    RESULT = [w2, w1]
else:
    w3 = torch.transpose(w1, 0, 1)
    RESULT = [w3]
"""


def view(reference, setup, apis, *texts, task_id="t-0", scenario="tensor"):
    return TaskView(task_id, scenario, reference, setup, apis, list(texts))


# ---------------------------------------------------------------------------------------------- keys


def test_program_key_ignores_names_and_layout_but_not_arguments():
    assert program_key(STRAIGHT, SETUP) == program_key(RENAMED, SETUP_RENAMED)
    assert program_key(STRAIGHT, SETUP) != program_key(STRAIGHT.replace("(0, 2, 1, 3)", "(0, 1, 3, 2)"), SETUP)
    assert "torch.permute" in program_key(STRAIGHT, SETUP) and "RESULT" in program_key(STRAIGHT, SETUP)


def test_call_sequence_of_a_straight_program_matches_a_branch_of_another():
    straight = call_sequence_keys(STRAIGHT, ["permute", "cat"], SETUP)
    branched = call_sequence_keys(BRANCHED, ["permute", "cat", "transpose"], SETUP)
    assert len(branched) == 2  # one key per path
    assert straight & branched  # prefix + then-branch repeats the straight program, whatever RESULT holds
    assert not call_sequence_keys(STRAIGHT, ["permute", "cat"], SETUP) & call_sequence_keys(
        STRAIGHT.replace("dim=1", "dim=2"), ["permute", "cat"], SETUP)
    with pytest.raises(ValueError):
        call_sequence_keys(STRAIGHT, ["permute"], SETUP)


def test_ngrams_are_lowercased_words():
    text = "Permute `X1` so that its dimensions come in the order (0, 2, 1, 3), naming the result `v1`."
    grams = ngrams(text)
    assert ("permute", "x1", "so", "that", "its", "dimensions", "come", "in", "the", "order", "0", "2", "1") in grams
    assert len(grams) == 18 - 13 + 1  # 18 words
    assert ngrams("Too short.") == {("too", "short")}
    assert ngrams("") == set()


def test_instruction_share_counts_distinctive_13grams_only():
    boiler = "The setup block loads the input tensors and the parameters for this task, as always."
    previous = [
        view("a = f(x)\n", "", ["f"], f"{boiler} Then permute x1 into the order 0 2 1 3 and concatenate it "
             "with x2 along dimension one to get v2.", task_id="p-0"),
        view("b = g(x)\n", "", ["g"], f"{boiler} Split x2 into three equal parts along dimension three and "
             "transpose the middle part swapping axes zero and one.", task_id="p-1"),
    ]
    index = OverlapIndex(0.5)
    for t in previous:
        index.add(t)
    copied = previous[0].instructions[0]
    assert index.instruction_share(copied.upper() + "  ") == 1.0  # a copy, whatever its case and spacing
    # The shared opening is the translator's wording (two previous tasks hold it): it does not make a task old.
    fresh_text = f"{boiler} Run a convolution over x3 with filters w1 and bias b1 at stride two then flatten it."
    assert index.instruction_share(fresh_text) == 0.0
    assert OverlapIndex(0.0).instruction_share(fresh_text) == 0.0  # an empty index holds nothing
    strict = OverlapIndex(0.0)
    for t in previous:
        strict.add(t)
    assert strict.instruction_share(fresh_text) > 0  # the literal rule counts the wording too
    assert strict.reasons(view("c = h(x)\n", "", ["h"], fresh_text)) == ["instruction 13-grams"]
    assert index.reasons(view("c = h(x)\n", "", ["h"], fresh_text)) == []


def overlap_report(new_tasks: list, previous: list, ngram_share: float = 0.5) -> Counter:
    """Count finished rows that overlap `previous`, by reason (a row may count under several)."""
    index = OverlapIndex(ngram_share)
    for row in previous:
        index.add(TaskView.of_record(row))
    counts: Counter = Counter()
    for row in new_tasks:
        counts.update(index.reasons(TaskView.of_record(row)))
    return counts


def test_every_task_overlaps_itself(small_tasks):
    counts = overlap_report(small_tasks, small_tasks)
    assert counts == {"program": len(small_tasks), "call sequence": len(small_tasks),
                      "instruction 13-grams": len(small_tasks)}


def test_parse_source():
    assert parse_source("org/stateeval@v1.0.0") == ("org/stateeval", "v1.0.0")
    assert parse_source("org/stateeval") == ("org/stateeval", None)
    with pytest.raises(ValueError):
        parse_source("@v1.0.0")


# ----------------------------------------------------------------------------------------- the build


@pytest.fixture(scope="module")
def fresh_build(small_dataset, tmp_path_factory):
    out = tmp_path_factory.mktemp("fresh") / "stateeval"
    config = BuildConfig(out=str(out), **dict(SMALL, created_at="2026-02-01", fresh=True,
                                              against=[str(small_dataset)]))
    return out, build(config)


def test_fresh_build_keeps_no_overlapping_task(small_dataset, small_tasks, fresh_build):
    out, report = fresh_build
    new, manifest = load_tasks(str(out))
    assert overlap_report(new, small_tasks) == {}
    fresh = report["fresh"]
    assert manifest["seed"] == fresh["seed"] == 1 != SMALL["seed"]
    assert manifest["config"]["avoid_seeds"] == [SMALL["seed"]]
    assert fresh["against"][0]["content_hash"] == load_tasks(str(small_dataset))[1]["content_hash"]
    assert fresh["checked"] == fresh["dropped"] + len(new) + sum(
        n for r, n in report["rejections"].items() if "oracle" in r or "reference" in r or "stratum" in r)
    dropped = sum(n for r, n in report["rejections"].items() if "overlaps a previous release" in r)
    assert dropped == fresh["dropped"] == sum(fresh["dropped_by_reason"].values())
    assert {t.created_at for t in new} == {"2026-02-01"} and fresh["warning"] is None
    card = (out / "README.md").read_text()
    assert "fresh split" in card and f"{fresh['dropped']} of the {fresh['checked']}" in card


def test_a_fresh_split_is_matched_to_its_release_stratum_by_stratum(small_tasks, fresh_build):
    """From a pool of up to 3 x n programs, each stratum (tertiles of calls and bindings, branching) keeps at most
    the release's share of n, and the card and the report give the match feature by feature."""
    from builder.match import Strata, features

    out, report = fresh_build
    new, _ = load_tasks(str(out))
    match = report["fresh"]["match"]
    assert match["pool"] == 3 and match["against"] == report["fresh"]["against"][0]["source"]
    strata = Strata([features(t) for t in small_tasks], SMALL["n"])
    taken = Counter(strata.key(features(t)) for t in new)
    assert all(taken[k] <= strata.quota.get(k, 0) for k in taken), (taken, strata.quota)
    assert sum(strata.quota.values()) == SMALL["n"]
    assert report["attempts"]["tensor"] <= 3 * SMALL["n"]
    r = match["scenarios"]["tensor"]
    assert r["tasks"] == len(new) and r["release_tasks"] == len(small_tasks)
    assert set(r["ks"]) == {"num_api_calls", "binding_count", "path_depth"}
    card = (out / "README.md").read_text()
    assert "matched" in card and f"| tensor | {len(new)} ({len(small_tasks)}) | {r['ks']['num_api_calls']['d']:.3f} |" in card


def test_a_rebuild_of_the_previous_release_is_dropped_whole(small_dataset, small_tasks, tmp_path):
    """The same seed cannot slip through: prepare() moves it, and the overlap filter catches copies."""
    config = BuildConfig(out=str(tmp_path / "x"), **dict(SMALL, fresh=True, against=[str(small_dataset)]))
    split = prepare(config)
    assert config.seed == 1 and config.avoid_seeds == [0]

    from builder.pipeline import fuzz, translate

    config.seed = SMALL["seed"]  # force a repeat of the previous build's programs
    drafts, _ = fuzz(config, "tensor", Counter())
    rejections = Counter()
    kept = split.drop_overlaps(translate(config, drafts, rejections), rejections)
    kept_ids = {d.task_id for d in kept}
    assert not kept_ids & {t.task_id for t in small_tasks}
    assert split.dropped["program"] >= len(small_tasks)


def test_lineage_seeds_are_avoided(fresh_build, tmp_path):
    out, _ = fresh_build
    config = BuildConfig(out=str(tmp_path / "third"), **dict(SMALL, fresh=True, against=[str(out)]))
    prepare(config)
    assert config.seed == 2 and config.avoid_seeds == [0, 1]


def test_fresh_needs_a_previous_release_and_another_out(small_dataset):
    with pytest.raises(ValueError, match="--fresh and --against go together"):
        BuildConfig(**dict(SMALL, fresh=True))
    with pytest.raises(ValueError, match="--fresh and --against go together"):
        BuildConfig(**dict(SMALL, against=[str(small_dataset)]))
    with pytest.raises(DatasetError, match="--against"):
        prepare(BuildConfig(out=str(small_dataset), **dict(SMALL, fresh=True, against=[str(small_dataset)])))


def test_cli_parses_fresh_flags(small_dataset):
    from builder.__main__ import parse_args

    config = parse_args(["--fresh", "--against", str(small_dataset), "--against", "org/x@v1.0.0",
                         "--ngram-share", "0"])
    assert config.fresh and config.against == [str(small_dataset), "org/x@v1.0.0"] and config.ngram_share == 0
    with pytest.raises(SystemExit):
        parse_args(["--fresh"])
    assert parse_args(["--fresh", "--against", str(small_dataset)]).match_pool == 3
    assert parse_args(["--fresh", "--against", str(small_dataset), "--match-pool", "0"]).match_pool == 0
    with pytest.raises(SystemExit):  # matching is a fresh split's step
        parse_args(["--match-pool", "2"])


def test_against_a_hub_release_downloads_that_tag(small_dataset, tmp_path, monkeypatch):
    import huggingface_hub

    calls = []

    def fake_snapshot_download(repo_id, **kwargs):
        calls.append((repo_id, kwargs))
        return str(small_dataset)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    config = BuildConfig(out=str(tmp_path / "out"), **dict(SMALL, fresh=True, against=["org/stateeval@v1.0.0"]))
    split = prepare(config)
    assert calls == [("org/stateeval", {"repo_type": "dataset", "revision": "v1.0.0"})]
    assert split.summary()["against"][0]["source"] == "org/stateeval@v1.0.0"
    assert config.seed == 1

    def offline(repo_id, **kwargs):
        raise OSError("no route to the Hub")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(DatasetError, match="could not download org/stateeval at v9.9.9"):
        prepare(BuildConfig(out=str(tmp_path / "o2"), **dict(SMALL, fresh=True, against=["org/stateeval@v9.9.9"])))


# ------------------------------------------------------------------------------------- evaluate --since


def test_created_after_keeps_tasks_strictly_after_the_date():
    tasks = [SimpleNamespace(task_id="a", created_at="2026-01-01"), SimpleNamespace(task_id="b", created_at="2026-02-01")]
    assert [t.task_id for t in created_after(tasks, "2026-01-01")] == ["b"]
    assert [t.task_id for t in created_after(tasks, "2025-12-31")] == ["a", "b"]
    with pytest.raises(DatasetError, match="no task was created after 2026-02-01"):
        created_after(tasks, "2026-02-01")
    with pytest.raises(DatasetError, match="not a date"):
        created_after(tasks, "last week")


def test_evaluate_since_scores_only_the_window(small_dataset, fresh_build, tmp_path):
    from evaluate.__main__ import parse_args
    from evaluate.run import run

    config = parse_args(["--model", "reference", "--dataset", str(fresh_build[0]), "--since", "2026-01-01",
                         "--out", str(tmp_path), "--workers", "2"])
    assert config.since == "2026-01-01"
    report = run(config)
    new, _ = load_tasks(str(fresh_build[0]))
    assert report["dataset"]["tasks"] == len(new) and report["dataset"]["since"] == "2026-01-01"
    assert report["summary"]["overall"]["pass@1"] == 1.0
    saved = json.loads((tmp_path / "reference" / "local" / "results.json").read_text())
    assert saved["dataset"]["since"] == "2026-01-01"

    old = parse_args(["--model", "reference", "--dataset", str(small_dataset), "--since", SMALL["created_at"],
                      "--out", str(tmp_path)])
    with pytest.raises(DatasetError, match=f"no task was created after {SMALL['created_at']}"):
        run(old)


@pytest.mark.e2e  # matching is tested on paper-tier releases in the default run
def test_a_fresh_split_of_a_frontier_release_is_matched_on_its_levers(tmp_path):
    """Frontier records store their calls unrolled (a loop is one statement, many calls), so the overlap filter keys
    their call sequences on the statements alone; the match reports each lever's share beside the release's."""
    common = dict(scenarios=["session"], tier="frontier", n=6, mutants=0, world_mutants=False)
    release = tmp_path / "release"
    build(BuildConfig(out=str(release), seed=11, created_at="2026-02-01", **common))
    report = build(BuildConfig(out=str(tmp_path / "fresh"), seed=12, created_at="2026-03-01", fresh=True,
                               against=[str(release)], **common))
    new, _ = load_tasks(str(tmp_path / "fresh"))
    old, _ = load_tasks(str(release))
    assert new and all(t.levers and {"loops", "pagination"} <= set(t.levers) for t in new + old)
    assert overlap_report(new, old) == {}
    assert overlap_report(old, old)["call sequence"] == len(old)  # each frontier task's statements are its key
    shares = report["fresh"]["match"]["scenarios"]["session"]["lever_shares"]
    assert shares["loops"] == {"split": 1.0, "release": 1.0}
    assert "frontier lever" in (tmp_path / "fresh" / "README.md").read_text()
