"""`--plot`'s figures: every label inside the frame it belongs to."""

from __future__ import annotations

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
