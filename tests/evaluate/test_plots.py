"""`--plot`'s figures: every label inside the frame it belongs to, and a finished run drawn from its results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluate.plots import plot_report
from evaluate.scoring import STATUSES

matplotlib = pytest.importorskip("matplotlib")  # the dev extra installs it; users without `plot` get one line


def test_the_label_of_a_full_bar_stays_inside_the_frame(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)  # keep the figures plot_report would discard
    scenarios = {}
    for name, share in {"tensor": 1.0, "session": 0.5, "voice": 0.0}.items():
        statuses = dict.fromkeys(STATUSES, 0) | {"pass": int(10 * share), "result_error": 10 - int(10 * share)}
        scenarios[name] = {"pass@1": share, "statuses": statuses}
    plot_report({"model": "m", "summary": {"overall": {}, "scenarios": scenarios}}, tmp_path)
    monkeypatch.undo()
    fig = figures[0]
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    labels = {t.get_text(): t.get_window_extent(renderer) for t in ax.texts}
    assert set(labels) == {"100.0", "50.0", "0.0"}
    for text, box in labels.items():
        assert frame.y0 <= box.y0 and box.y1 <= frame.y1, f"{text} crosses the frame"
    for f in figures:
        plt.close(f)


def test_causes_and_partial_credit_figures(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from evaluate.diagnosis import CAUSES, METRICS

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    causes = {"tensor": {"crash": 3, "wrong_argument": 1}, "session": {}}
    scenarios = {name: {"pass@1": 0.5, "statuses": dict.fromkeys(STATUSES, 1),
                        "diagnosis": {"causes": dict.fromkeys(CAUSES, 0) | counts}}
                 for name, counts in causes.items()}
    samples = [{"diagnosis": dict.fromkeys(METRICS, v)} for v in (0.0, 0.55, 1.0, 1.0)] + [{"diagnosis": None}]
    paths = plot_report({"model": "m", "summary": {"overall": {}, "scenarios": scenarios}, "samples": samples},
                        tmp_path)
    monkeypatch.undo()
    assert [p.name for p in paths] == ["pass_at_1.png", "error_types.png", "causes.png", "partial_credit.png"]
    assert all(p.is_file() for p in paths)
    cause_ax = figures[2].axes[0]
    heights = {}
    for bars in cause_ax.containers:
        heights[bars.get_label()] = [b.get_height() for b in bars]
    assert heights == {"crash": [75.0, 0.0], "wrong_argument": [25.0, 0.0]}  # shares of the failed samples
    for ax in figures[3].axes:
        counts = [p.get_height() for p in ax.patches]
        assert sum(counts) == 4 and counts[0] == 1 and counts[5] == 1 and counts[-1] == 2
    for f in figures:
        plt.close(f)


@pytest.fixture
def counted(monkeypatch):
    """Counts what a run asks for: answers generated, sandboxes started and samples scored."""
    import evaluate.run as run_module

    calls = {"generate": 0, "sandbox": 0, "scored": 0}

    def counting(name, real, size=lambda result: 1):
        def wrapper(*args, **kwargs):
            result = real(*args, **kwargs)
            calls[name] += size(result)
            return result
        return wrapper

    monkeypatch.setattr(run_module, "generate", counting("generate", run_module.generate))
    monkeypatch.setattr(run_module, "make_executor", counting("sandbox", run_module.make_executor))
    monkeypatch.setattr(run_module, "score", counting("scored", run_module.score, len))
    return calls


@pytest.mark.e2e  # test_cli.py's --plot test draws from a finished run by default
def test_plot_on_a_finished_run_draws_from_its_results(small_dataset, tmp_path, counted):
    """A run scored once; the same command with --plot draws the figures from its results.json and starts no
    sandbox, while a changed setting (another time limit) is a new run and is scored."""
    from evaluate.run import EvalConfig, run

    config = dict(model="reference", dataset=str(small_dataset), out=str(tmp_path), limit=3, workers=2)
    first = run(EvalConfig(**config))
    assert counted == {"generate": 1, "sandbox": 1, "scored": 3}
    stored = Path(first["path"]).read_text()

    again = run(EvalConfig(**config, plot=True))
    assert counted == {"generate": 1, "sandbox": 1, "scored": 3}  # nothing more
    assert again["reused"] and again["summary"] == first["summary"] and again["run"] == first["run"]
    assert [Path(p).name for p in again["figures"]] == ["pass_at_1.png", "error_types.png", "causes.png",
                                                        "partial_credit.png"]
    assert all(Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in again["figures"])
    assert Path(first["path"]).read_text() == stored and len(list((tmp_path / "reference" / "local" / "runs")
                                                               .iterdir())) == 1

    other = run(EvalConfig(**config, plot=True, timeout_s=20.0))
    assert counted == {"generate": 2, "sandbox": 2, "scored": 6} and "reused" not in other


def test_plot_scores_samples_that_changed_or_lack_a_verdict(small_dataset, small_tasks, tmp_path, counted):
    """--samples: the stored run is drawn from only while the file holds the programs it scored, and only when
    every sample has a verdict."""
    from evaluate.run import EvalConfig, run

    samples = tmp_path / "answers.jsonl"
    rows = [{"task_id": t.task_id, "code": t.reference_program} for t in small_tasks[:2]]
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = EvalConfig(samples=str(samples), dataset=str(small_dataset), out=str(tmp_path), limit=2, workers=2,
                        plot=True)
    first = run(config)
    assert counted["scored"] == 2 and "reused" not in first
    assert run(config)["reused"] and counted["scored"] == 2

    rows[1]["code"] = "RESULT = None\n"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    changed = run(config)
    assert counted["scored"] == 4 and "reused" not in changed and changed["summary"]["overall"]["pass@1"] == 0.5

    report = json.loads(Path(changed["path"]).read_text())
    report["samples"][1]["status"] = "infra_error"  # as a worker lost on every retry leaves it
    Path(changed["path"]).write_text(json.dumps(report))
    assert "reused" not in run(config) and counted["scored"] == 6
