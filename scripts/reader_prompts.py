"""Prompt files for judging tasks as a model would: a blind reader answers them, `python -m evaluate --samples` scores.

  python scripts/reader_prompts.py --dataset fresh --out judge                  # 12 tasks a scenario, natural
  python scripts/reader_prompts.py --dataset fresh --out judge --variants natural,vague,steps --one-per-file
  python scripts/reader_prompts.py --dataset fresh --out judge-tests --mode tests   # the prompts of --mode tests

The only honest way to know whether an instruction is determined, and how hard a task is, is to read it as the
model does (docs/tasks.md). This writes, for each scenario and variant, the first --n tasks' prompts exactly as
`evaluate.prompts.build_messages` gives them to a model, into a folder of their own: the reader must never see the
dataset folder, which holds the reference programs. With --one-per-file each prompt is a file of its own, for a
reader that must meet every task as the only one it has seen (as a model does in its own conversation); without it,
one `prompts.txt` per variant holds them all, each after a line `################ TASK <task_id>`.

It also writes `READER.md` beside them: the instruction a reader is given (answer from the prompt alone, run
nothing, open nothing else, write `answers.jsonl` lines `{"task_id", "code"}`, then say per task whether the text
pins down one correct result), and the command that scores each answers file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.records import DatasetError, load_tasks  # noqa: E402
from evaluate.episodes import CODE, TESTS  # noqa: E402
from evaluate.tests_mode import messages_in, scored_tasks  # noqa: E402
from scenarios.base import VARIANTS  # noqa: E402

HEADER = "################ TASK {task_id}"
READER = """\
# Reading tasks as a model would

For each folder below, give one reader (who has seen no reference program) only that folder's prompt file(s), with
this instruction:

> You are acting as a careful, strong language model answering coding tasks. Read ONLY {what}. Do not open, list
> or read any other file or folder, and do not run any code or command other than writing your answers file.
> Answer each task exactly as its system message asks (one Python code block continuing after the setup block),
> from the prompt alone. Write your answers to `{answers}`: one JSON object per line,
> `{{"task_id": "<task_id>", "code": "<your python code, without the fences>"}}`. Then say, for each task, whether
> the text pins down exactly one correct result (yes / mostly / no; if not, what is missing, and whether it could
> change what a correct program must do on some input), and how hard it was (1-5).

Score each answers file with the command beside its folder; its `cause` column says why each failure failed.

{folders}
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n", 1)[1])
    ap.add_argument("--dataset", required=True, help="the dataset folder the prompts come from (a fresh seed's build)")
    ap.add_argument("--out", required=True, help="a new folder for the prompt files; never inside the dataset folder")
    ap.add_argument("--n", type=int, default=12, help="tasks per scenario and variant, the first n (default 12)")
    ap.add_argument("--variants", default="natural", help=f"comma-separated, of {', '.join(VARIANTS)} (default natural)")
    ap.add_argument("--scenario", action="append", help="only this scenario (repeatable; default every one built)")
    ap.add_argument("--one-per-file", action="store_true", help="each prompt in a file of its own (TASK_ID.txt)")
    ap.add_argument("--mode", choices=(CODE, TESTS), default=CODE,
                    help="whose prompts: a program's (code, default) or a test's (tests: the tasks that store world "
                         "mutants, scored with --mode tests)")
    args = ap.parse_args(argv)

    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        ap.error(f"--variants: unknown variant(s) {unknown}; use some of {', '.join(VARIANTS)}")
    if args.n < 1:
        ap.error("--n must be at least 1")
    dataset, out = Path(args.dataset).resolve(), Path(args.out).resolve()
    if out == dataset or dataset in out.parents:
        ap.error(f"--out {args.out} is inside the dataset folder, which holds the reference programs: a reader given "
                 f"it could read them; choose a folder outside {args.dataset}")
    if out.exists() and any(out.iterdir()):
        ap.error(f"--out {args.out} already holds files: choose a new folder, so no reader sees an earlier round's")
    try:
        tasks, manifest = load_tasks(args.dataset, scenarios=args.scenario)
        tasks = scored_tasks(tasks) if args.mode == TESTS else tasks
    except DatasetError as e:
        print(f"reader_prompts: {e}", file=sys.stderr)
        return 2

    folders = []
    for scenario in dict.fromkeys(t.scenario for t in tasks):
        chosen = [t for t in tasks if t.scenario == scenario][:args.n]
        for variant in variants:
            folder = out / scenario / variant
            folder.mkdir(parents=True)
            prompts = {t.task_id: "\n".join(f"===== {m['role']}\n{m['content']}" for m in messages_in(args.mode, t, variant))
                       for t in chosen}
            if args.one_per_file:
                for task_id, text in prompts.items():
                    (folder / f"{task_id}.txt").write_text(text + "\n")
                what = f"the one prompt file you are given from `{folder}` (one task)"
            else:
                (folder / "prompts.txt").write_text("\n\n".join(HEADER.format(task_id=k) + "\n" + v
                                                                for k, v in prompts.items()) + "\n")
                what = f"`{folder / 'prompts.txt'}` ({len(prompts)} tasks, each after a line `{HEADER}`)"
            answers = folder / "answers.jsonl"
            score = (f"python -m evaluate --dataset {args.dataset} --scenario {scenario} --variant {variant} "
                     f"--samples {answers} --mode {args.mode} --out {folder / 'scores'}")
            folders.append(f"## {scenario}, {variant}: {len(prompts)} tasks\n\nReader: read only {what}; answers to "
                           f"`{answers}`.\n\n```\n{score}\n```\n")
            print(f"{scenario} {variant}: {len(prompts)} prompts in {folder}")
    (out / "READER.md").write_text(READER.format(what="the prompt file(s) named below", answers="answers.jsonl",
                                                 folders="\n".join(folders)))
    (out / "SOURCE.json").write_text(json.dumps({"dataset": args.dataset, "content_hash": manifest.get("content_hash"),
                                                 "seed": manifest.get("seed"), "n": args.n, "mode": args.mode,
                                                 "variants": variants}, indent=2) + "\n")
    print(f"wrote {out / 'READER.md'}: the reader's instruction and the command that scores each answers file")
    return 0


if __name__ == "__main__":
    sys.exit(main())
