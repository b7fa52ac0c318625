"""Conversations with a model over several turns: `--mode tools` and `--mode explore`.

* **tools**: every test case is its own conversation. The model is shown the instruction, the documentation's
  tools (JSON schemas, `scenarios.calling`) and the test case's setup values (tensors and speeches as handles with
  a summary), and calls tools; each turn's calls run in the sandbox on the test case's world and their results (or
  errors) go back to it, until it calls `submit_result`, answers without a tool call, or has used `--max-turns`
  turns. Its answer is the episode: the calls that ran and the items it submitted, scored like a program's RESULT
  and final world state by replaying them (`evaluate.scoring.score`).
* **explore**: one conversation per task and sample. The model is shown the default prompt and may call
  `run_code` up to `--max-turns` times; each snippet runs in the sandbox on a scratch world (the first test case's
  setup with freshly drawn stored values, never a test case's) and the output, error and RESULT come back. Its
  final reply is a program, scored as in the default mode.
* **tests** with `--max-turns`: as explore, but the model writes a test of the task's requirement and may call
  `run_test` on a live world, the first test case's own (or, with `--refine-on mutated`, that world with one of the
  task's mutants); its final reply is a test, scored by `evaluate.mutation_score`.

Every model turn is cached like a one-shot reply (`core.backends.cache`), keyed by everything the model saw up
to that turn. The tool results are recomputed by replaying the calls (the worlds are deterministic), so a killed
run resumes without asking the model again for a turn it already answered, and the leaderboard re-scores a
submission by running the same conversations with the submitted turns as the only replies (`Replayed`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
from dataclasses import dataclass, field

from core.backends import Backend, BackendError, Request, Sampling, Usage
from core.backends.cache import GenerationCache, prompt_key
from core.progress import progress
from core.records import TaskRecord
from core.sandbox.harness import Executor, Job, Outcome
from core.statuses import CRASH, INFRA_ERROR, SETUP_ERROR, TIMEOUT
from evaluate.mutation_score import VERDICT_LINE, passes
from evaluate.prompts import INSTRUCTION_FIELDS, build_messages, build_test_messages, extract_code
from scenarios import get_scenario
from scenarios.base import PAPER
from scenarios.calling import SUBMIT, SUBMIT_SPEC, ToolSpec
from scenarios.mutants import Mutant

CODE, TOOLS, EXPLORE, TESTS = "code", "tools", "explore", "tests"
MODES = (CODE, TOOLS, EXPLORE, TESTS)
DEFAULT_MAX_TURNS = 20
RUN_CODE, RUN_TEST = "run_code", "run_test"
CORRECT, MUTATED = "correct", "mutated"  # the world a test is refined on (`--refine-on`)
REFINE_ON = (CORRECT, MUTATED)
RESULT_PREVIEW_CHARS = 4000  # of a snippet's RESULT shown to the model in explore mode

TOOLS_SYSTEM = (
    "You are an expert at using APIs. You solve the task by calling the tools, one step at a time or several in "
    "parallel, reading each result before you go on. Values that cannot travel as JSON (tensors, speeches) are "
    "handles: the setup's variables by their names, the k-th tool result as r<k>. When you are done, call "
    f"{SUBMIT} with the values the task asks for; that ends the conversation."
)
TOOLS_USER = """\
## API documentation

{api_doc}

## Setup values (already defined; handles you can pass to the tools)

{setup}

## Task

{instruction}

Use the tools to do the task on this world. What the task calls `RESULT` is what you submit with {submit}."""

EXPLORE_NOTE = (
    "\n\nBefore answering you may call the tool `run_code` with Python code, up to {turns} times. It runs after "
    "the same setup block in a scratch world: the same API and variable names, different stored data (never the "
    "data your answer is checked on). You see what it printed, the error, and RESULT. When you are ready, reply "
    "with the final program in one ```python code block, without a tool call."
)
TESTS_NOTE = (
    "\n\nBefore answering you may call the tool `run_test` with a test, up to {turns} times. It runs after the same "
    "setup block on a live instance of the API, with the requirement's own data. You see whether it passed, what it "
    "printed and the error. When you are ready, reply with the final test in one ```python code block, without a "
    "tool call."
)
RUN_TEST_SPEC = ToolSpec(
    RUN_TEST, "Run a Python test after the setup block on a live instance of the API and see whether it passed, "
              "its output and its error.",
    {"type": "object", "properties": {"code": {"type": "string", "description": "Python code"}}, "required": ["code"]},
)
RUN_CODE_SPEC = ToolSpec(
    RUN_CODE, "Run Python code after the setup block in a scratch world (different stored data) and see its "
                "output, its error and RESULT.",
    {"type": "object", "properties": {"code": {"type": "string", "description": "Python code"}}, "required": ["code"]},
)


@dataclass
class Conversation:
    """One conversation: a test case of a task (tools) or a task (explore, tests), for one sample."""

    task: TaskRecord
    sample: int
    case: int | None  # the test case (tools mode); None in explore mode
    messages: list[dict] = field(default_factory=list)
    calls: list[dict] = field(default_factory=list)  # the tool calls that ran, in order: the episode
    submit: list | None = None  # submit_result's items, once accepted
    answer: str | None = None  # explore: the final reply
    turns: int = 0
    code_runs: int = 0  # explore, tests: run_code / run_test calls let through, at most --max-turns
    world: str | None = None  # tests: the world its runs go to, the correct one or a mutant's name
    keys: list[str] = field(default_factory=list)  # the cache key of each turn
    usage: list[Usage | None] = field(default_factory=list)
    ended: str = ""  # why it ended; empty while it goes on
    # Why it has no verdict: the sandbox lost the world its calls ran on, after its retries (INFRA_ERROR). It ends
    # there, and its sample is an infra_error; running the command again replays its cached turns and goes on.
    lost: str = ""

    @property
    def case_name(self) -> str | None:
        return None if self.case is None else self.task.test_cases[self.case].name

    @functools.cached_property
    def tier(self) -> str:
        """The task's tier, read once from its stored values (`Scenario.task_tier`), not at every turn."""
        return get_scenario(self.task.scenario).task_tier(self.task)

    @property
    def label(self) -> str:
        case = "" if self.case is None else f"/{self.case_name}"
        return f"{self.task.task_id}{case}#{self.sample}"

    def transcript(self) -> dict:
        """What conversations.jsonl keeps: every message, tool call and result, and each turn's cache key."""
        row = {"task_id": self.task.task_id, "sample": self.sample, "case": self.case_name, "turns": self.turns,
               "ended": self.ended, "keys": self.keys, "messages": self.messages,
               "episode": {"calls": self.calls, "submit": self.submit} if self.case is not None else None}
        if self.world is not None:
            row["world"] = self.world
        if self.lost:
            row["lost"] = self.lost
        return row

    def lose(self, outcome: Outcome) -> None:
        """End it without a verdict: its world was lost (`INFRA_ERROR`), which is no answer of the model's."""
        self.lost = outcome.error
        self.ended = f"no verdict: {outcome.error}"


@functools.lru_cache(maxsize=None)
def tool_specs(scenario: str, mode: str, tier: str = PAPER) -> tuple[ToolSpec, ...]:
    """The tools a conversation offers: the scenario's APIs on the task's tier and submit_result (tools), or
    run_code (explore)."""
    if mode == TOOLS:
        return (*get_scenario(scenario).tool_specs(tier), SUBMIT_SPEC)
    return (RUN_TEST_SPEC,) if mode == TESTS else (RUN_CODE_SPEC,)


def turn_key(c: Conversation, tools: list[dict], sampling: Sampling, model: str) -> str:
    """The cache key of the conversation's next turn: the messages so far, the tools, the test case, the sample."""
    return prompt_key(c.messages, sampling, model, c.sample, extra={"tools": tools, "case": c.case_name})


def parse_reply(raw: str) -> dict:
    """A cached or replayed turn: an assistant message {"role", "content", "tool_calls"?}."""
    try:
        message = json.loads(raw)
        if isinstance(message, dict) and message.get("role") == "assistant":
            return message
    except (TypeError, ValueError):
        pass
    return {"role": "assistant", "content": raw}


def _arguments(call: dict) -> tuple[dict | None, str]:
    """A tool call's arguments, or None and why they cannot be used."""
    text = (call.get("function") or {}).get("arguments")
    if isinstance(text, dict):
        return text, ""
    try:
        args = json.loads(text or "{}")
    except (TypeError, ValueError) as exc:
        return None, f"the arguments are not valid JSON ({exc}); send a JSON object"
    if not isinstance(args, dict):
        return None, "the arguments must be a JSON object"
    return args, ""


def _tool_message(call_id: str, payload: dict) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(payload, ensure_ascii=False)}


class Driver:
    """Runs every conversation of a run turn by turn: all conversations that wait for the model are asked in one
    batch (the backend's concurrency applies), then all their tool calls run in the sandbox in one batch."""

    def __init__(self, mode: str, backend: Backend | None, cache: GenerationCache, sampling: Sampling, model: str,
                 sandbox: Executor, max_turns: int = DEFAULT_MAX_TURNS, variant: str = "natural",
                 refine_on: str = CORRECT):
        if mode not in (TOOLS, EXPLORE, TESTS):
            raise ValueError(f"unknown conversation mode {mode!r}")
        self.mode, self.backend, self.cache, self.sampling, self.model = mode, backend, cache, sampling, model
        self.sandbox, self.max_turns, self.variant, self.refine_on = sandbox, max_turns, variant, refine_on
        self.prepared = False
        self.resumed = 0

    # ---- the loop

    def run(self, tasks: list[TaskRecord], n_samples: int) -> list[Conversation]:
        if self.mode == TOOLS:
            conversations = [Conversation(t, s, c) for t in tasks for s in range(n_samples)
                             for c in range(len(t.test_cases))]
        else:
            conversations = [Conversation(t, s, None) for t in tasks for s in range(n_samples)]
        self._start(conversations)
        bar = progress(len(conversations), f"converse ({self.mode})", unit="conversation")
        try:
            while True:
                active = [c for c in conversations if not c.ended]
                if not active:
                    break
                replies = self._ask(active)
                self._act([(c, replies[id(c)]) for c in active])
                bar.update(sum(1 for c in active if c.ended))
        finally:
            bar.close()
        return conversations

    def _start(self, conversations: list[Conversation]) -> None:
        if self.mode in (EXPLORE, TESTS):  # the prompt, and the tool to run code on a world before the answer
            build, note = (build_test_messages, TESTS_NOTE) if self.mode == TESTS else (build_messages, EXPLORE_NOTE)
            for c in conversations:
                messages = build(c.task, self.variant)
                messages[-1] = {**messages[-1], "content": messages[-1]["content"] + note.format(turns=self.max_turns)}
                c.messages = messages
                if self.mode == TESTS:
                    mutant = refine_world(c.task, c.sample, self.refine_on)
                    c.world = CORRECT if mutant is None else mutant.name
            return
        outcomes = self._episodes([(c, []) for c in conversations])
        for c, o in zip(conversations, outcomes):
            if o.status == INFRA_ERROR:
                c.lose(o)
                continue
            if o.status in (SETUP_ERROR, CRASH, TIMEOUT) or "setup" not in o.extra:
                c.ended = f"the world could not be set up: {o.status}: {o.error}"
                continue
            setup = "\n".join(f"- `{k}`: {json.dumps(v, ensure_ascii=False)}" for k, v in o.extra["setup"].items())
            instruction = getattr(c.task, INSTRUCTION_FIELDS[self.variant])
            c.messages = [{"role": "system", "content": TOOLS_SYSTEM},
                          {"role": "user", "content": TOOLS_USER.format(
                              api_doc=c.task.api_doc.strip(), setup=setup or "(none)",
                              instruction=instruction.strip(), submit=SUBMIT)}]

    def _tools(self, c: Conversation) -> list[dict]:
        return [s.to_openai() for s in tool_specs(c.task.scenario, self.mode, c.tier)]

    def _ask(self, active: list[Conversation]) -> dict[int, dict]:
        """Each conversation's next assistant message: from the cache where it holds the turn, else the backend."""
        replies, todo, of = {}, [], {}  # of: request -> its conversation (a request never carries the task)
        for c in active:
            tools = self._tools(c)
            key = turn_key(c, tools, self.sampling, self.model)
            c.keys.append(key)
            if key in self.cache.replies:
                replies[id(c)] = parse_reply(self.cache.replies[key])
                c.usage.append(self.cache.usage.get(key))
                self.resumed += 1
            else:
                todo.append(Request(c.task.task_id, c.sample, list(c.messages), tools=tools, case=c.case_name))
                of[id(todo[-1])] = c
        if todo:
            if self.backend is None:
                first = of[id(todo[0])]
                raise BackendError(f"{first.label}: turn {first.turns + 1} is not in the recorded generations (the "
                                   "conversation went another way)")
            if not self.prepared:
                self.backend.prepare()
                self.prepared = True

            def on_reply(r: Request, message: dict) -> None:
                c = of[id(r)]
                message = {"role": "assistant", "content": message.get("content"),
                           **({"tool_calls": message["tool_calls"]} if message.get("tool_calls") else {})}
                self.cache.add(c.keys[-1], c.task.task_id, c.sample, json.dumps(message), r.usage)
                replies[id(c)] = message
                c.usage.append(r.usage)

            self.backend.chat(todo, self.sampling, on_reply)
        return replies

    def _act(self, answered: list[tuple[Conversation, dict]]) -> None:
        """Append each reply, run its tool calls, append their results; end what is finished."""
        pending = []  # (conversation, the calls to run in the world, the submission)
        for c, message in answered:
            c.turns += 1
            c.messages.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                c.ended = "answered without a tool call"
                c.answer = message.get("content")
                continue
            known = {s.name for s in tool_specs(c.task.scenario, self.mode, c.tier)}
            new, submit = [], None
            for call in calls:
                name = (call.get("function") or {}).get("name")
                args, problem = _arguments(call)
                if submit is not None:
                    problem = f"not run: it came after {SUBMIT}, which ends the conversation"
                elif name not in known:
                    problem = f"unknown tool {name!r}; the tools are {', '.join(sorted(known))}"
                elif problem:
                    pass
                elif name == SUBMIT and not isinstance(args.get("result"), list):
                    problem = f'{SUBMIT} takes {{"result": [...]}}: a list of handles or values'
                elif self.mode != TOOLS and c.code_runs >= self.max_turns:  # parallel calls count one by one
                    problem = "no code runs are left: reply with the final program, without a tool call"
                if problem:
                    c.messages.append(_tool_message(call.get("id", ""), {"error": problem}))
                elif name == SUBMIT:
                    submit = (call.get("id", ""), args["result"])
                else:
                    new.append((call.get("id", ""), name, args))
                    c.code_runs += self.mode != TOOLS
            pending.append((c, new, submit))
        if self.mode == TOOLS:
            self._run_tools(pending)
        else:
            self._run_snippets(pending)
        limit = self.max_turns + (0 if self.mode == TOOLS else 1)  # explore, tests: the runs, then the answer
        for c, _, _ in pending:
            if not c.ended and c.turns >= limit:
                c.ended = "turn limit"
                last = [m for m in c.messages if m["role"] == "assistant"][-1]
                c.answer = last.get("content")

    # ---- tools mode

    def _episodes(self, items: list[tuple[Conversation, list[dict]]], submits: list | None = None) -> list[Outcome]:
        """Each conversation's calls (and submission, if any) replayed on its test case's world, in one batch."""
        submits = submits or [None] * len(items)
        jobs = [Job(i, c.task.scenario, "", c.task.test_cases[c.case], calls=calls, submit=submit)
                for i, ((c, calls), submit) in enumerate(zip(items, submits))]
        return self.sandbox.run_untrusted(jobs)

    def _run_tools(self, pending: list) -> None:
        batch = [(c, c.calls + [{"name": n, "arguments": a} for _, n, a in new]) for c, new, _ in pending]
        submits = [None if s is None else s[1] for _, _, s in pending]
        outcomes = self._episodes(batch, submits)
        for (c, new, submit), (_, calls), o in zip(pending, batch, outcomes):
            if o.status == INFRA_ERROR:  # the model is never shown a failure of the machine
                c.lose(o)
                continue
            reports = o.extra.get("calls")
            if reports is None:  # the world did not answer: the episode ends with what ran before
                c.ended = f"the world stopped: {o.status}: {o.error}"
                for call_id, _, _ in new:
                    c.messages.append(_tool_message(call_id, {"error": f"not run: {o.error}"}))
                continue
            for (call_id, _, _), report in zip(new, reports[len(c.calls):]):
                c.messages.append(_tool_message(call_id, report))
            c.calls = calls
            if submit is not None:
                if o.status == "ok":
                    c.submit = submit[1]
                    c.messages.append(_tool_message(submit[0], {"submitted": True}))
                    c.ended = "submitted"
                else:
                    c.messages.append(_tool_message(submit[0], {"error": o.error}))

    # ---- explore mode

    def _run_snippets(self, pending: list) -> None:
        jobs, where = [], []
        for c, new, _ in pending:
            for call_id, _, args in new:
                code = args.get("code")
                if not isinstance(code, str) or not code.strip():
                    c.messages.append(_tool_message(call_id, {"error": "run_code needs {\"code\": \"...\"}"}))
                    continue
                if self.mode == TESTS:
                    mutant = refine_world(c.task, c.sample, self.refine_on)
                    jobs.append(Job(len(jobs), c.task.scenario, code + VERDICT_LINE, c.task.test_cases[0],
                                    mutant=mutant, test=True))
                else:
                    jobs.append(Job(len(jobs), c.task.scenario, code, scratch_case(c.task, c.sample)))
                where.append((c, call_id))
        for (c, call_id), o in zip(where, self.sandbox.run_untrusted(jobs)):
            if o.status == INFRA_ERROR:  # the model is never shown a failure of the machine
                c.lose(o)
            elif not c.lost:
                c.messages.append(_tool_message(call_id, run_report(c.task, o) if self.mode == TESTS
                                                else snippet_report(o)))


def scratch_case(task: TaskRecord, sample: int) -> dict:
    """The scratch world of explore mode: the first test case's setup block with stored values drawn afresh from a
    seed of the task and sample (so a resumed run explores the same world)."""
    case = task.test_cases[0]
    seed = int(hashlib.sha256(f"scratch:{task.task_id}:{sample}".encode()).hexdigest()[:16], 16)
    assets = get_scenario(task.scenario).scratch_assets([dict(a) for a in case.assets], random.Random(seed))
    return {"setup_code": case.setup_code, "assets": assets}


def refine_world(task: TaskRecord, sample: int, refine_on: str):
    """The world a tests-mode conversation runs its tests on: the correct one (None), or with `--refine-on mutated`
    one of the task's stored mutants, the sample's by turn (sample k takes mutant k modulo their number)."""
    if refine_on != MUTATED or not task.world_mutants:
        return None
    return Mutant.from_json(task.world_mutants[sample % len(task.world_mutants)])


def run_report(task: TaskRecord, o: Outcome) -> dict:
    """What a model sees of its test's run: passed or failed as scoring judges it (`mutation_score.passes`), its
    output, and why it failed."""
    passed, why = passes(task, o)
    report = {"status": "passed" if passed else "failed", "output": o.output}
    if why:
        report["error"] = why
    return report


def snippet_report(o: Outcome) -> dict:
    """What a model sees of a snippet's run: its status, output, error and a preview of RESULT."""
    report = {"status": "ran" if o.status == "ok" else o.status, "output": o.output}
    if o.error:
        report["error"] = o.error
    if o.status == "ok":
        preview = json.dumps(_summarise(o.result), ensure_ascii=False)
        report["RESULT"] = preview if len(preview) <= RESULT_PREVIEW_CHARS else preview[:RESULT_PREVIEW_CHARS] + "..."
    return report


def _summarise(value):
    """Canonical RESULT with tensors as their shape and dtype (their bytes mean nothing to a reader)."""
    if isinstance(value, dict):
        if set(value) == {"__tensor__"}:
            return {"tensor": {"shape": value["__tensor__"]["shape"], "dtype": value["__tensor__"]["dtype"]}}
        return {k: _summarise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_summarise(v) for v in value]
    return value


# ---- what scoring and the report take from the conversations


def answers(tasks: list[TaskRecord], conversations: list[Conversation], mode: str, n_samples: int) -> dict[str, list]:
    """Per task, one answer per sample: a program (explore; None without code) or one episode per test case
    (tools; None when no test case's conversation called anything or submitted anything)."""
    by = {(c.task.task_id, c.sample, c.case): c for c in conversations}
    out: dict[str, list] = {}
    for t in tasks:
        for s in range(n_samples):
            if mode in (EXPLORE, TESTS):
                out.setdefault(t.task_id, []).append(extract_code(by[(t.task_id, s, None)].answer))
                continue
            episodes = [{"calls": by[(t.task_id, s, c)].calls, "submit": by[(t.task_id, s, c)].submit}
                        for c in range(len(t.test_cases))]
            empty = all(not e["calls"] and e["submit"] is None for e in episodes)
            out.setdefault(t.task_id, []).append(None if empty else episodes)
    return out


def lost_samples(conversations: list[Conversation]) -> dict[tuple[str, int], str]:
    """(task, sample) -> why it has no verdict, for each sample one of whose conversations lost its world."""
    return {(c.task.task_id, c.sample): f"{c.label}: {c.lost}" for c in conversations if c.lost}


def turns_used(conversations: list[Conversation]) -> dict[tuple[str, int], list[int]]:
    """(task, sample) -> the turns of each of its conversations."""
    out: dict[tuple[str, int], list[int]] = {}
    for c in conversations:
        out.setdefault((c.task.task_id, c.sample), []).append(c.turns)
    return out


def conversation_usage(conversations: list[Conversation]) -> dict[tuple[str, int], Usage | None]:
    """(task, sample) -> the tokens of all its turns; None when any turn's count is unknown."""
    sums: dict[tuple[str, int], list] = {}
    unknown = set()
    for c in conversations:
        key = (c.task.task_id, c.sample)
        for u in c.usage:
            if u is None:
                unknown.add(key)
                continue
            prompt, completion, by = sums.get(key, (0, 0, u.counted_by))
            sums[key] = (prompt + u.prompt_tokens, completion + u.completion_tokens, by)
    return {key: None if key in unknown else Usage(*value) for key, value in sums.items()}


def score_reported(task: TaskRecord, case, reported: dict) -> tuple[str, str]:
    """Status and message for an episode an outside agent ran on a served world (the voice MCP server's
    `voice://result`: the submitted RESULT and the lab's side effects), judged like any test case."""
    from core.statuses import OK, RESULT_ERROR
    from evaluate.scoring import judge_case

    if not reported.get("submitted"):
        return RESULT_ERROR, "no result was submitted (submit_result was not called)"
    outcome = Outcome(None, OK, result=reported.get("result"), state=reported.get("state"))
    return judge_case(get_scenario(task.scenario), case, outcome)
