"""PNG figures for a run, like the paper's: pass@1 per scenario, and the distribution of error types; and, for
`python -m evaluate.report`, pass@1 per scenario for several runs side by side (the paper's Figure 4)."""

from __future__ import annotations

from pathlib import Path

from evaluate.models import missing_extra
from evaluate.statuses import EXECUTION_ERROR, NO_CODE, PASS, RESULT_ERROR, STATUSES, SYNTAX_ERROR, TIMEOUT

COLORS = {PASS: "#2a9d8f", SYNTAX_ERROR: "#e9c46a", EXECUTION_ERROR: "#f4a261", RESULT_ERROR: "#e76f51",
          TIMEOUT: "#8d99ae", NO_CODE: "#6c757d"}


LABEL_ROOM = 12  # percentage points above 100 for the value written over a full bar


def pass_at_1_figure(plt, summary: dict, model: str):
    """pass@1 per scenario, each bar labelled with its value. The axis runs past 100 so that the label of a bar
    at 100% sits inside the frame rather than across its top edge."""
    scenarios = list(summary["scenarios"])
    fig, ax = plt.subplots(figsize=(2.8 + 1.2 * len(scenarios), 3.2))
    values = [100 * (summary["scenarios"][s]["pass@1"] or 0) for s in scenarios]
    bars = ax.bar(scenarios, values, color=COLORS[PASS])
    ax.bar_label(bars, fmt="%.1f", padding=2)
    ax.set_ylim(0, 100 + LABEL_ROOM)
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("pass@1 (%)")
    ax.set_title(f"{model}: pass@1 per scenario")
    fig.tight_layout()
    return fig


def pyplot():
    """matplotlib's pyplot on the file-only backend, or the one-line error naming the extra."""
    try:
        import matplotlib
    except ImportError as exc:
        raise missing_extra("matplotlib", "plot") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


RUN_COLORS = (COLORS[PASS], "#264653", "#e9c46a", "#f4a261", "#e76f51", "#8d99ae", "#6c757d", "#9b5de5")


def comparison_figure(plt, labels: list[str], scenarios: list[str], values: list[list[float | None]]):
    """Grouped bars: one group per scenario, one bar per run (`values[run][scenario]`, a share or None where the
    run did not score that scenario), each labelled with its value, on the same axis as `pass_at_1_figure`."""
    width = 0.8 / max(1, len(labels))
    fig, ax = plt.subplots(figsize=(2.8 + len(scenarios) * (0.6 + 0.45 * len(labels)), 3.6))
    for i, (label, row) in enumerate(zip(labels, values)):
        xs = [j + (i - (len(labels) - 1) / 2) * width for j in range(len(scenarios))]
        kept = [(x, 100 * v) for x, v in zip(xs, row) if v is not None]
        bars = ax.bar([x for x, _ in kept], [v for _, v in kept], width, label=label,
                      color=RUN_COLORS[i % len(RUN_COLORS)])
        ax.bar_label(bars, fmt="%.1f", padding=2, fontsize=7)
    ax.set_xticks(range(len(scenarios)), scenarios)
    ax.set_ylim(0, 100 + LABEL_ROOM)
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("pass@1 (%)")
    ax.set_title("pass@1 per scenario")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1, 0.5))
    fig.tight_layout()
    return fig


def plot_report(report: dict, out: Path) -> list[Path]:
    plt = pyplot()
    summary, model = report["summary"], report["model"]
    scenarios = list(summary["scenarios"])
    paths = []

    fig = pass_at_1_figure(plt, summary, model)
    paths.append(out / "pass_at_1.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(4.0 + 1.2 * len(scenarios), 3.2))
    bottom = [0.0] * len(scenarios)
    for status in STATUSES:
        counts = [summary["scenarios"][s]["statuses"][status] for s in scenarios]
        totals = [max(1, sum(summary["scenarios"][s]["statuses"].values())) for s in scenarios]
        shares = [100 * c / t for c, t in zip(counts, totals)]
        ax.bar(scenarios, shares, bottom=bottom, color=COLORS[status], label=status)
        bottom = [b + v for b, v in zip(bottom, shares)]
    ax.set_ylabel("share of samples (%)")
    ax.set_title(f"{model}: outcome of each sample")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1, 0.5))
    fig.tight_layout()
    paths.append(out / "error_types.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    return paths
