"""PNG figures for a run, like the paper's: pass@1 per scenario, the distribution of error types, the causes of
failure per scenario (the paper's Figure 5, extended with `evaluate.diagnosis`) and a histogram of partial credit;
and, for `python -m evaluate.report`, pass@1 per scenario for several runs side by side (the paper's Figure 4)."""

from __future__ import annotations

from pathlib import Path

from core.backends import missing_extra
from core.statuses import EXECUTION_ERROR, NO_CODE, PASS, RESULT_ERROR, STATUSES, SYNTAX_ERROR, TIMEOUT
from evaluate.diagnosis import CAUSES, METRICS

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

    for name, figure in (("causes.png", causes_figure), ("partial_credit.png", partial_credit_figure)):
        fig = figure(plt, report)
        paths.append(out / name)
        fig.savefig(paths[-1], dpi=120)
        plt.close(fig)
    return paths


CAUSE_COLORS = ("#6c757d", "#e9c46a", "#8d99ae", "#f4a261", "#e76f51", "#9b5de5", "#264653", "#2a9d8f",
                "#00bbf9", "#f15bb5", "#d62828", "#fee440", "#003049", "#adb5bd")


def causes_figure(plt, report: dict):
    """Stacked bars per scenario: the share of its failed samples each cause explains (with the count failed)."""
    summary, model = report["summary"], report["model"]
    scenarios = list(summary["scenarios"])
    counts = {s: (summary["scenarios"][s].get("diagnosis") or {}).get("causes") or {} for s in scenarios}
    fig, ax = plt.subplots(figsize=(4.6 + 1.2 * len(scenarios), 3.6))
    bottom = [0.0] * len(scenarios)
    totals = [max(1, sum(counts[s].values())) for s in scenarios]
    for cause, color in zip(CAUSES, CAUSE_COLORS):
        shares = [100 * counts[s].get(cause, 0) / t for s, t in zip(scenarios, totals)]
        if any(shares):
            ax.bar(scenarios, shares, bottom=bottom, color=color, label=cause)
            bottom = [b + v for b, v in zip(bottom, shares)]
    ax.set_xticks(range(len(scenarios)),
                  [f"{s}\n({sum(counts[s].values())} failed)" for s in scenarios])
    ax.set_ylim(0, 100)
    ax.set_ylabel("share of failed samples (%)")
    ax.set_title(f"{model}: causes of failure")
    if any(bottom):
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1, 0.5))
    fig.tight_layout()
    return fig


def partial_credit_figure(plt, report: dict):
    """One histogram per partial-credit metric over the run's samples (bins of 0.1; samples without a diagnosis,
    their reference traces in another format, are left out)."""
    model = report["model"]
    fig, axes = plt.subplots(1, len(METRICS), figsize=(2.3 * len(METRICS), 2.6), sharey=True)
    bins = [i / 10 for i in range(11)]
    for ax, metric in zip(axes, METRICS):
        values = [s["diagnosis"][metric] for s in report.get("samples", [])
                  if (s.get("diagnosis") or {}).get(metric) is not None]
        ax.hist(values, bins=bins, color=COLORS[PASS])
        ax.set_title(metric, fontsize=9)
        ax.set_xlim(0, 1)
    axes[0].set_ylabel("samples")
    fig.suptitle(f"{model}: partial credit per sample", fontsize=10)
    fig.tight_layout()
    return fig
