"""How deep the fuzzed data flow is, per scenario, with and without the sampler's recency preference.

For every scenario, at each --calls setting, with the preference off (recency 0) and at --recency: the mean
bindings (variables that carry one call's output into another call's input, `Program.binding_count`), the mean
path depth (the longest chain of data-dependent calls, `Program.path_depth`) and the pair coverage after the
first --n programs (distinct API -> API pair transitions / |APIs|^2, Algorithm 1's measure) together with its
mean over programs 1..n (the area under the coverage curve: how fast coverage comes). Programs are fuzzed exactly
as `python -m builder` fuzzes them (same seeds, branch probability and --branches), without translation, oracles
or the sandbox; every number is a mean over --seeds builds.

  python scripts/difficulty.py                      # --calls 5,7, seeds 0-2, 60 programs each
  python scripts/difficulty.py --calls 5,7,9 --branches 2 --recency 2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from builder.config import BuildConfig, rng_for  # noqa: E402
from builder.fuzz import CoverageRecorder, NoValidCall  # noqa: E402
from builder.program import generate_program  # noqa: E402
from scenarios import get_scenario, scenario_names  # noqa: E402


def measure(scenario_name: str, config: BuildConfig) -> dict:
    """Bindings, path depth and coverage of one build's fuzzing (no sandbox)."""
    scenario = get_scenario(scenario_name)
    names = [a.name for a in scenario.apis]
    recorder = CoverageRecorder()
    bindings, depths, curve = [], [], []
    for i in range(config.n):
        try:
            program = generate_program(scenario, rng_for(config, scenario_name, i, "fuzz"), recorder,
                                       config.calls_per_path, config.branch_probability, config.coverage,
                                       config.branches, config.recency)
        except NoValidCall:
            continue
        finally:
            curve.append(recorder.coverage(names))
        bindings.append(program.binding_count())
        depths.append(program.path_depth())
    return {"bindings": mean(bindings), "depth": mean(depths), "coverage": curve[-1], "auc": mean(curve)}


def table(scenarios: list[str], calls: list[int], recency: float, seeds: list[int], n: int,
          branches: int) -> list[dict]:
    rows = []
    for scenario in scenarios:
        for c in calls:
            for r in (0.0, recency):
                runs = [measure(scenario, BuildConfig(scenarios=[scenario], n=n, seed=s, calls_per_path=c,
                                                      branches=branches, recency=r, created_at="2026-01-01"))
                        for s in seeds]
                rows.append({"scenario": scenario, "calls": c, "recency": r,
                             **{k: mean(run[k] for run in runs) for k in runs[0]}})
    return rows


def main(argv: list[str] | None = None) -> int:
    d = BuildConfig(created_at="2026-01-01")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenarios", default=",".join(scenario_names()))
    p.add_argument("--calls", default="5,7", help="comma-separated --calls settings (default 5,7)")
    p.add_argument("--recency", type=float, default=d.recency,
                   help=f"the preference's strength to compare with 0 (default: the builder's, {d.recency})")
    p.add_argument("--branches", type=int, default=d.branches, help=f"as the builder's --branches (default "
                   f"{d.branches})")
    p.add_argument("--n", type=int, default=d.n, help=f"programs per build (default {d.n})")
    p.add_argument("--seeds", default="0,1,2", help="comma-separated build seeds (default 0,1,2)")
    a = p.parse_args(argv)
    calls = [int(c) for c in a.calls.split(",")]
    seeds = [int(s) for s in a.seeds.split(",")]
    rows = table([s.strip() for s in a.scenarios.split(",")], calls, a.recency, seeds, a.n, a.branches)
    print(f"{a.n} programs per build, mean over seeds {','.join(map(str, seeds))}; --branches {a.branches}\n")
    print("| scenario | calls | recency | bindings mean | path depth mean | pair coverage | coverage AUC |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['scenario']} | {r['calls']} | {r['recency']:g} | {r['bindings']:.2f} | {r['depth']:.2f} | "
              f"{r['coverage']:.3f} | {r['auc']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
