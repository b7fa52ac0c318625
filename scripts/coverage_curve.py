"""Adjacent-transition coverage with and without guidance (the paper's RQ1), printed as two curves.

Coverage after program i = distinct API -> API pair transitions exercised so far / (number of APIs)^2
(36 for tensor). Both modes use the same seeds; the area under the curve over the first --programs programs is
the figure to compare.

  python scripts/coverage_curve.py --scenario tensor --programs 40 --seeds 0,1,2,3,4
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from builder.fuzz import CoverageRecorder  # noqa: E402
from builder.program import generate_program  # noqa: E402
from scenarios import get_scenario  # noqa: E402


def curve(scenario_name: str, programs: int, seed: int, guided: bool) -> list[float]:
    scenario = get_scenario(scenario_name)
    names = [a.name for a in scenario.apis]
    recorder = CoverageRecorder()
    out = []
    for i in range(programs):
        rng = random.Random(f"stateeval/{seed}/{scenario_name}/{i}/fuzz")
        generate_program(scenario, rng, recorder, guided=guided)
        out.append(recorder.coverage(names))
    return out


def mean_curve(scenario: str, programs: int, seeds: list[int], guided: bool) -> list[float]:
    curves = [curve(scenario, programs, s, guided) for s in seeds]
    return [sum(c[i] for c in curves) / len(curves) for i in range(programs)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", default="tensor")
    p.add_argument("--programs", type=int, default=40)
    p.add_argument("--seeds", default="0,1,2,3,4")
    a = p.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    guided = mean_curve(a.scenario, a.programs, seeds, True)
    uniform = mean_curve(a.scenario, a.programs, seeds, False)
    print(f"{'program':>7}  {'guided':>7}  {'uniform':>7}")
    for i, (g, u) in enumerate(zip(guided, uniform), 1):
        print(f"{i:>7}  {g:>7.3f}  {u:>7.3f}")
    auc_g, auc_u = sum(guided) / a.programs, sum(uniform) / a.programs
    print(f"AUC over {a.programs} programs (mean over seeds {seeds}): guided {auc_g:.3f}, uniform {auc_u:.3f}, "
          f"ratio {auc_g / auc_u:.2f}")


if __name__ == "__main__":
    main()
