"""Writing the dataset folder: Parquet shards with an explicit schema, the card, and MANIFEST.json.

Shards are written one at a time, as the build finishes them, into a folder next to the destination
(`builder/checkpoint.py`); the finished folder is renamed into place, so a crash never leaves a half-written
dataset where a previous good one was. Shard bytes depend only on the records (no timestamps, no pandas
metadata), so the same seed, created_at and versions give byte-identical shards.
"""

from __future__ import annotations

import json
import os
import shutil
import string
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from builder import __version__
from cards import DATASET_CARD, template
from core.records import DATA_DIR, MANIFEST, SCHEMA, DatasetError, TaskRecord, content_hash, file_sha256
from evaluate.intervals import half_width
from core.provenance import library_versions
from scenarios.base import FRONTIER

def shard_name(scenario: str, k: int, digest: str, total: int | None = None) -> str:
    """A shard's path in the folder: while the build runs the number of shards is unknown (`total` None); the
    finished folder names it, as `datasets` expects (`tensor-00000-of-00002-<sha256[:12]>.parquet`).

    Each name ends with the start of the shard's own sha256, and the card lists the exact names: `datasets` keys
    its cache for a local folder on the card's YAML, so a rebuilt folder with the same names would be served the
    previous build's rows.
    """
    of = "" if total is None else f"-of-{total:05d}"
    return f"{DATA_DIR}/{scenario}-{k:05d}{of}-{digest[:12]}.parquet"


def write_shard(folder: Path, scenario: str, k: int, records: list[TaskRecord]) -> tuple[str, str]:
    """Write shard `k` of a scenario under its unfinished name; return (relative path, sha256). Its bytes depend
    only on the records, so the same records give the same shard whichever run of a resumed build wrote it."""
    tmp = folder / DATA_DIR / f".{scenario}-{k}.tmp"
    table = pa.Table.from_pylist([r.to_row() for r in records], schema=SCHEMA)
    pq.write_table(table, tmp, compression="zstd", write_statistics=True)
    digest = file_sha256(tmp)
    rel = shard_name(scenario, k, digest)
    tmp.rename(folder / rel)
    return rel, digest


def render_card(manifest: dict, table1: str, report: dict | None = None) -> str:
    def paths(scenario: str) -> str:
        mine = sorted(f for f in manifest["files"] if f.startswith(f"{DATA_DIR}/{scenario}-"))
        return "".join(f"\n    - {f}" for f in mine)

    splits = "\n".join(f"  - split: {s}\n    path:{paths(s)}" for s in manifest["counts"])
    counts = "\n".join(f"| {s} | {n} |" for s, n in manifest["counts"].items())
    config_name = FRONTIER if manifest["config"].get("tier") == FRONTIER else "default"  # the paper's: default
    values = {
        "configs": f"configs:\n- config_name: {config_name}\n  data_files:\n{splits}",
        "counts_table": counts,
        "total": sum(manifest["counts"].values()),
        "seed": manifest["seed"],
        "created_at": manifest["created_at"],
        "builder_version": manifest["builder_version"],
        "content_hash": manifest["content_hash"],
        "translator": manifest["config"]["translator"],
        "difficulty": difficulty_line(manifest["config"]),
        "stats_table": table1,
        "mutation_table": mutation_markdown((report or {}).get("mutation", {})),
        "fresh_note": fresh_note((report or {}).get("fresh")),
        "scenarios": ", ".join(manifest["counts"]),
        "precision": precision_line(manifest["counts"]),
    }
    return string.Template(template(DATASET_CARD)).substitute(values)


def precision_line(counts: dict[str, int]) -> str:
    """The card's sentence on how precisely this build measures: the worst-case 95% half-width of pass@1."""
    kept = {s: n for s, n in counts.items() if n}
    if not kept:
        return ""
    each = ", ".join(f"{s} ±{100 * half_width(n):.1f}" for s, n in kept.items())
    total = sum(kept.values())
    return (f"Precision: with one sample per task, a pass@1 measured on this build has a 95% interval of at most "
            f"these half-widths (the worst case, a rate of 50%; narrower away from it): {each} points per scenario, "
            f"±{100 * half_width(total):.1f} over all {total} tasks. Two models are told apart more finely by the "
            "paired comparison of `python -m evaluate.report`. Build with `--precision H` for another half-width.")


def difficulty_line(config: dict) -> str:
    """The card's difficulty sentence, from the build's config (MANIFEST.json)."""
    d = config["difficulty"]
    if d["tier"] == FRONTIER:
        return ("Difficulty: tier `frontier` (`--tier frontier`): programs that must read the world. Each looks a "
                "session up by a property, loops over every page of a collection with a predicate, and ends with "
                "a recovery from a stale write, an aggregate or a bulk delete, against a populated frontier-tier "
                "service (paged listings, versioned writes); the test cases are populations of different sizes "
                "(none, one, a page, a page + 1, more than the largest page). Scores on different tiers are not "
                "comparable.")
    splits = "no if/else split" if not config["branch_probability"] else \
        "at most one if/else split" if d["branches"] == 1 else \
        f"at most {d['branches']} if/else splits, nested (a branch may split again on a later value)"
    return (f"Difficulty: tier `{d['tier']}`: {d['calls']} API calls on every path through a program (`--calls "
            f"{d['calls']}`), {splits} (`--branches {d['branches']}`), sampler recency preference "
            f"{config['recency']:g} (`--recency`). Scores on different tiers are not comparable.")


def mutation_markdown(summary: dict) -> str:
    """The card's mutation table from the build report's per-scenario summary."""
    if not summary:
        return "(mutation analysis was not run for this build: `--mutants 0`)"
    rows = ["| scenario | mutants | killed | equivalent | mutation score | test cases per task |",
            "|---|---|---|---|---|---|"]
    for scenario, s in summary.items():
        rows.append(f"| {scenario} | {s['mutants']} | {s['killed']} | {s['equivalent']} | {s['score']:.3f} | "
                    f"{s['test_cases']:.2f} |")
    return "\n".join(rows)


def fresh_note(fresh: dict | None) -> str:
    """A paragraph for a fresh split's card: what it was checked against and what that cost."""
    if not fresh:
        return ""
    against = "; ".join(f"`{r['source']}` (seed {r['seed']}, created {r['created_at']}, content hash "
                        f"`{(r['content_hash'] or '')[:12]}`)" for r in fresh["against"])
    by = ", ".join(f"{n} by {k}" for k, n in fresh["dropped_by_reason"].items()) or "none"
    return (f"\n\nThis is a **fresh split**: seed {fresh['seed']} was used by no earlier release, and every task was "
            f"checked against {against}. {fresh['dropped']} of the {fresh['checked']} translated programs were "
            f"dropped because they overlapped those releases ({by}; overlap means the same normalised program, the "
            f"same call sequence with arguments on some path, or at least {fresh['ngram_share']:.0%} of an "
            "instruction's distinctive 13-grams, those no two earlier tasks share). Score only tasks created after "
            "a model's training cut-off with "
            "`python -m evaluate --since YYYY-MM-DD`." + match_note(fresh.get("match")))


def match_note(match: dict | None) -> str:
    """How closely a matched fresh split follows its release's structure, feature by feature (builder/match.py)."""
    if not match:
        return ""
    rows = ["| scenario | tasks (release) | API calls D | bindings D | path depth D | 5% critical D | branching "
            "(release) | largest stratum-share gap |", "|---|---|---|---|---|---|---|---|"]
    for s, r in match["scenarios"].items():
        ks, b, gap = r["ks"], r["branch_share"], r["largest_stratum_gap"]
        rows.append(f"| {s} | {r['tasks']} ({r['release_tasks']}) | {ks['num_api_calls']['d']:.3f} | "
                    f"{ks['binding_count']['d']:.3f} | {ks['path_depth']['d']:.3f} | "
                    f"{ks['num_api_calls']['critical']:.3f} | {b['split']:.0%} ({b['release']:.0%}) | "
                    f"{gap['gap']:.1%} (`{gap['stratum']}`) |")
    levers = [f"{s}: " + ", ".join(f"`{k}` {v['split']:.0%} ({v['release']:.0%})" for k, v in r["lever_shares"].items())
              for s, r in match["scenarios"].items() if r.get("lever_shares")]
    if levers:
        rows.append("\nThe share of tasks carrying each frontier lever, split (release): " + "; ".join(levers) + ".")
    return (f"\n\nIts structure is **matched** to `{match['against']}`: from a pool of up to {match['pool']} times the "
            "programs asked per scenario, a task was kept only while its stratum (the release's tertiles of API "
            "calls made and of bindings, and whether it branches, or carries the frontier lever that splits the release most evenly) had room for the release's share. The match, "
            "feature by feature (D: the two-sample Kolmogorov-Smirnov statistic against the release; below the "
            "critical value, the two samples are not told apart at 5%):\n\n" + "\n".join(rows))


def check_out(out: Path) -> None:
    """Refuse an --out that would destroy something that is not an earlier build (checked before any work)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise DatasetError(f"--out {out} is a file; choose a folder name")
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).exists():
        raise DatasetError(f"{out} exists and is not a StateEval dataset; choose another --out or remove it")


def save_services(folder: Path, scenarios: list[str]) -> None:
    """The service files (and documents) of the scenarios made from one, kept in the dataset (see
    `scenarios.rest.registration`)."""
    from scenarios.rest.registration import save

    save(folder, scenarios)


def finish_dataset(folder: Path, out: Path, shards: dict[str, list[str]], info: dict, report: dict,
                   table1: str) -> dict:
    """Turn a build's folder of finished shards (`shards`: each scenario's sha256s, in order, written by
    `write_shard`) into the dataset at `out`: final shard names, MANIFEST.json, the card (`table1`: its Table I)
    and build_report.json; then move it into place in one rename, so a crash never leaves a half-written dataset
    where a previous good one was. Return the manifest."""
    out = Path(out)
    check_out(out)
    files, counts = {}, info["counts"]
    for scenario, digests in shards.items():
        for k, digest in enumerate(digests):
            final = shard_name(scenario, k, digest, len(digests))
            unfinished = folder / shard_name(scenario, k, digest)
            if unfinished.exists():  # else an earlier, interrupted finish renamed it already
                unfinished.rename(folder / final)
            files[final] = digest
    manifest = {
        "name": "stateeval",
        "builder_version": __version__,
        "seed": info["seed"],
        "created_at": info["created_at"],
        "counts": counts,
        "files": files,
        "content_hash": content_hash(files),
        "config": info["config"],
        # this builder's own version, which the installed distribution's metadata may not be (a checkout)
        "versions": {**library_versions("torch", "pyarrow", "datasets", "numpy"), "stateeval": __version__},
    }
    save_services(folder, list(shards))
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    (folder / "README.md").write_text(render_card(manifest, table1, report))
    (folder / "build_report.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(old)
        try:
            folder.rename(out)
        except OSError:
            old.rename(out)  # put the previous build back rather than leave nothing at --out
            raise
        shutil.rmtree(old)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        folder.rename(out)
    return manifest
