"""Hostile and broken programs against the sandbox: each gets the right verdict, the run completes, and the clean
samples run beside them get exactly the verdicts they get alone.

One table (`HOSTILE`) names every program, the scenario it attacks and the verdict it must get. All of them run in
ONE mixed run on two workers, each followed by a clean reference sample (`mixed`); the clean verdicts must equal
those of a clean-only run. The programs that attack state a worker keeps between jobs (torch, the interpreter,
the worker itself, the session service) run again on a single worker (`sequential`), where the job after each of
them is known to be a clean one on the same worker and the same world.

What a program can reach depends on the containment the worker reports (`Outcome.extra["containment"]`):
``jail`` (root with namespaces), ``uid`` (root without), ``none`` (not root; docs/trust.md, "Execution and trust").
A row lists the modes that contain it; in the others the documented gap is asserted instead (the program gets
its uncontained verdict and its damage is visible), and the row runs in a sandbox of its own, after the mixed
run, since by definition it may change its neighbours' verdicts there.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from builder.config import BuildConfig
from builder.pipeline import build
from core.records import TaskRecord
from core.sandbox.harness import Job, Limits, Outcome, Sandbox
from evaluate.scoring import judge_case
from scenarios import get_scenario
from scenarios.session.server import MEMORY_LIMIT_MB as SERVICE_MEMORY_LIMIT_MB
from scenarios.session.store import SESSION_TYPES
from scenarios.session.words import SOURCES

ROOT = Path(__file__).resolve().parents[2]
# Short limits keep the file fast: the timeouts below are what the slow rows cost. The address-space limit leaves
# room for the warm worker's own mappings (torch: about 600 MB) plus a reference program.
# A 1 MB cap on RESULT: an oversized RESULT is refused after a few milliseconds of work, whatever the load (at the
# default 64 MB, serialising it twice could take longer than the 3 s limit on a busy machine).
LIMITS = Limits(timeout_s=3, cpu_s=2, memory_mb=1536, result_mb=1)
# (any session tasks will do: no mutation analysis, no world mutants)
SESSION_BUILD = dict(scenarios=["session"], n=4, seed=0, created_at="2026-01-01", workers=2, mutants=0,
                     world_mutants=False)
ALL_MODES = frozenset({"jail", "uid", "none"})
PRIVILEGED = frozenset({"jail", "uid"})  # the job runs as its own unprivileged uid
WORLD_WRITABLE = ("/tmp", "/dev/shm")  # where any uid may write when there is no jail
# Secrets the harness holds while the sandbox starts; no job may see a name or a value of them.
CANARIES = {
    "OPENAI_API_KEY": "sk-stateeval-canary-openai",
    "HF_TOKEN": "hf_stateeval_canary",
    "ANTHROPIC_API_KEY": "sk-ant-stateeval-canary",
    "GITHUB_TOKEN": "ghp_stateeval_canary",
    "AWS_SECRET_ACCESS_KEY": "stateeval-canary-aws",
}
HOME_CANARY = "stateeval-canary-home-secret\n"  # written to a file in the harness's home while the module runs
# Where credentials usually sit in a home directory; the probe tries these besides what it finds by walking it.
HOME_SECRETS = (".netrc", ".cache/huggingface/token", ".aws/credentials", ".config/gh/hosts.yml", ".ssh/id_rsa",
                ".ssh/id_ed25519", ".git-credentials", ".pypirc")
SECRET_NAME = re.compile(r"API_KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.I)
HOME_FILES_READ = 200  # the secrets probe stops reading a home directory after this many files
TRUNCATED = "\n[output truncated]"  # what the worker appends to capped output
WORKER_CLOSE_WAIT_S = 5  # how long `Sandbox.close` waits for a worker to finish before it kills it
TRAVERSABLE = 0o711
DEATH_WAIT_S = 5  # how long a process killed along with its worker may take to disappear


# ------------------------------------------------------------------------------------------------ the table


@dataclass(frozen=True)
class Hostile:
    """One hostile or broken program.

    `code` may use placeholders that `Context.program` fills in: @REF@ (the reference program of the attacked
    task, so a program whose attack fails still gets a deterministic verdict), @DATASET_FILE@, @DELETE_FILES@,
    @DELETE_DIRS@, @MARKERS@, @HOME@, @HOME_SECRETS@, @HOME_FILES_READ@, @SKIP@, @SOURCES@, @TYPES@,
    @TORCH_PROBES@, @HUGE_BODY_MB@.
    """

    name: str
    scenario: str
    covers: str  # the item of the requirement it stands for
    code: str
    status: str  # the judged verdict where it is contained
    contained_in: frozenset = ALL_MODES
    uncontained: frozenset = frozenset()  # the verdicts the documented gap allows elsewhere
    stateful: bool = False  # attacks what a worker keeps between jobs: rerun in `sequential`
    check: Callable | None = None  # check(ctx, outcome, contained): host-side facts after the run


def _leftovers_killed(ctx: "Context", outcome: Outcome, contained: bool) -> None:
    assert outcome.extra.get("leftovers", 0) >= 1, outcome.extra


def _grandchild_gone(ctx: "Context", outcome: Outcome, contained: bool) -> None:
    _leftovers_killed(ctx, outcome, contained)
    (pid,) = re.findall(r"grandchild (\d+)", outcome.output)
    assert not _alive_sleeper(int(pid)), f"the grandchild {pid} outlived its job"


def _output_capped(ctx: "Context", outcome: Outcome, contained: bool) -> None:
    assert outcome.output.startswith("y")
    assert outcome.output.endswith(TRUNCATED)
    assert len(outcome.output) <= LIMITS.output_bytes + len(TRUNCATED)


def _nothing_escaped(ctx: "Context", outcome: Outcome, contained: bool) -> None:
    escaped = [m for m in ctx.markers if os.path.exists(m)]
    if ctx.mode == "jail":
        assert escaped == []
    elif ctx.mode == "uid":  # documented: no private /tmp without namespaces; still nothing the harness owns
        assert all(m.startswith(WORLD_WRITABLE) for m in escaped), escaped
    else:  # documented: the program writes wherever the harness's user may
        assert escaped


def _files_intact(ctx: "Context", outcome: Outcome, contained: bool) -> None:
    now = _hashes(ctx.protected)
    if contained:
        assert now == ctx.protected_hashes
    else:  # documented: a job running as the harness's user deletes what that user may
        assert now != ctx.protected_hashes


def _no_secrets(ctx: "Context", outcome: Outcome, contained: bool) -> None:
    seen = outcome.result
    assert isinstance(seen, dict) and seen["env"], "the probe did not run"
    text = json.dumps(seen) + outcome.output
    for value in CANARIES.values():
        assert value not in text
    assert not [k for k in seen["env"] if SECRET_NAME.search(k)]
    assert seen["env"].get("HOME") != ctx.home
    if contained:
        assert seen["home"] == [], [path for path, _ in seen["home"]]
    else:  # documented: the harness's home is readable by its own user
        assert [ctx.home_canary, HOME_CANARY] in seen["home"]


def _dataset_unreadable(ctx: "Context", outcome: Outcome, contained: bool) -> None:
    if contained:
        assert re.search(r"FileNotFoundError|PermissionError", outcome.error), outcome.error
    else:  # documented: the dataset is readable by the harness's user
        assert outcome.status == "ok"


def _oracle_unreachable(ctx: "Context", outcome: Outcome, contained: bool) -> None:
    found = outcome.result
    assert found["oracles"] == []  # the worker never receives an expected value
    if contained:
        assert found["memory"] == []  # no other process's memory is readable


def _torch_untouched(ctx: "Context", outcome: Outcome, contained: bool) -> None:
    assert _hashes([ctx.torch_init]) == ctx.torch_hash
    if contained:
        assert outcome.result == []
        assert not [p for p in ctx.torch_probes if os.path.exists(p)]


def _service_memory_bounded(ctx: "Context", outcome: Outcome, contained: bool) -> None:
    services = ctx.services()
    assert services
    for pid in services:
        with open(f"/proc/{pid}/status") as f:
            peak_kb = next(int(line.split()[1]) for line in f if line.startswith("VmPeak:"))
        assert peak_kb <= SERVICE_MEMORY_LIMIT_MB * 1024


def _service_survived(ctx: "Context", outcome: Outcome, contained: bool) -> None:
    if contained:
        assert outcome.status == "ok"


TIMEOUT, EXEC, RESULT_ERR, SYNTAX, PASS = "timeout", "execution_error", "result_error", "syntax_error", "pass"
INFRA = "infra_error"  # no verdict: the program brought down what runs it, on every retry

HOSTILE = [
    # -------------------------------------------------------------------------------------- runaway programs
    Hostile("infinite_loop", "tensor", "infinite loop", "while True:\n    pass\n", TIMEOUT),
    Hostile("sleep", "tensor", "sleep", "import time\ntime.sleep(3600)\n", TIMEOUT),
    Hostile("cpu_in_threads", "tensor", "infinite loop",
            "import threading\n"
            "def spin():\n    while True:\n        pass\n"
            "for _ in range(4):\n    threading.Thread(target=spin, daemon=True).start()\n"
            "spin()\n", TIMEOUT),
    # Address space grows 64 MiB at a time until the limit refuses it. The pages are mapped, not written: a bomb
    # that fills 1.5 GB byte by byte would meet the wall clock first on a loaded machine, a verdict set by speed.
    Hostile("memory_bomb", "tensor", "memory bomb",
            "import mmap\nblocks = []\nwhile True:\n    blocks.append(mmap.mmap(-1, 2 ** 26))\n"
            "    blocks[-1][0] = 1\n", EXEC),
    Hostile("fork_bomb", "tensor", "fork bomb",
            "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
            TIMEOUT, check=_leftovers_killed),
    Hostile("deep_recursion", "tensor", "deep recursion",  # through C frames: overflows the C stack
            "import sys\nsys.setrecursionlimit(10 ** 8)\n"
            "class Deep:\n    def __repr__(self):\n        return repr(self)\n"
            "repr(Deep())\n", EXEC),
    Hostile("runaway_recursion", "tensor", "deep recursion",
            "def f(n):\n    return f(n + 1)\nRESULT = f(0)\n", EXEC),
    Hostile("huge_output", "tensor", "huge output",
            "import sys\nfor _ in range(1000):\n    sys.stdout.write('y' * 10000)\n"
            "print('z' * 100000, file=sys.stderr)\n@REF@", PASS, check=_output_capped),
    Hostile("output_past_file_limit", "tensor", "huge output",
            "import sys\nchunk = 'y' * 2 ** 20\nwhile True:\n    sys.stdout.write(chunk)\n", EXEC,
            check=_output_capped),
    # ------------------------------------------------------------------------------ ending things, signals
    Hostile("os_exit", "tensor", "os._exit", "import os\nos._exit(0)\n", EXEC),
    # uncontained, the worker dies on every retry: no verdict, and a submission with one is refused
    Hostile("kill_parent", "tensor", "killing the parent",
            "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n@REF@", EXEC, contained_in=PRIVILEGED,
            uncontained=frozenset({INFRA}), stateful=True),
    Hostile("signal_parent", "tensor", "signals",
            "import os, signal\n"
            "for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGTERM):\n"
            "    os.kill(os.getppid(), sig)\n@REF@", EXEC, stateful=True),
    Hostile("stop_itself", "tensor", "signals", "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)\n",
            TIMEOUT),
    Hostile("ignore_signals", "tensor", "signals",
            "import signal, time\n"
            "for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU, signal.SIGALRM):\n"
            "    signal.signal(sig, signal.SIG_IGN)\n"
            "while True:\n    time.sleep(0.01)\n", TIMEOUT),
    Hostile("segfault", "tensor", "signals", "import ctypes\nctypes.string_at(0)\n", EXEC),
    # ---------------------------------------------------------------------------- files, secrets, oracles
    Hostile("write_outside", "tensor", "writing outside the sandbox",
            "for path in @MARKERS@:\n"
            "    try:\n        with open(path, 'w') as f:\n            f.write('escaped')\n"
            "    except OSError:\n        pass\n@REF@", PASS, contained_in=frozenset({"jail"}),
            uncontained=frozenset({PASS}), check=_nothing_escaped),
    Hostile("delete_dataset_and_cache", "tensor", "deleting dataset or cache files",
            "import os, shutil\n"
            "for path in @DELETE_FILES@:\n"
            "    try:\n        os.remove(path)\n    except OSError:\n        pass\n"
            "for path in @DELETE_DIRS@:\n    shutil.rmtree(path, ignore_errors=True)\n@REF@", PASS,
            contained_in=PRIVILEGED, uncontained=frozenset({PASS}), check=_files_intact),
    Hostile("read_secrets", "tensor", "reading environment secrets",
            "import glob, os\n"
            "seen = {'env': dict(os.environ), 'proc': {}, 'home': []}\n"
            "for path in glob.glob('/proc/[0-9]*/environ'):\n"
            "    try:\n        seen['proc'][path] = open(path, 'rb').read().decode('utf-8', 'replace')\n"
            "    except OSError:\n        pass\n"
            "wanted = [os.path.join(@HOME@, name) for name in @HOME_SECRETS@]\n"
            "for top, dirs, files in os.walk(@HOME@):\n"
            "    dirs[:] = [d for d in dirs if os.path.join(top, d) not in @SKIP@]\n"
            "    wanted += [os.path.join(top, name) for name in files]\n"
            "    if len(wanted) > @HOME_FILES_READ@:\n        break\n"
            "for path in wanted:\n"
            "    try:\n"
            "        seen['home'].append([path, open(path, 'rb').read(256).decode('utf-8', 'replace')])\n"
            "    except OSError:\n        pass\n"
            "RESULT = seen\n", RESULT_ERR, contained_in=PRIVILEGED, uncontained=frozenset({RESULT_ERR}),
            check=_no_secrets),
    Hostile("read_dataset", "tensor", "reading the dataset or the oracle",
            "data = open(@DATASET_FILE@, 'rb').read()\nRESULT = [len(data)]\n", EXEC,
            contained_in=PRIVILEGED, uncontained=frozenset({RESULT_ERR}), check=_dataset_unreadable),
    Hostile("read_oracle", "tensor", "reading the dataset or the oracle",
            "import gc, glob, json, os\n"
            "found = {'oracles': [], 'memory': []}\n"
            "for obj in gc.get_objects():\n"
            "    if isinstance(obj, dict) and 'expected_result' in obj:\n"
            "        found['oracles'].append(obj['expected_result'])\n"
            "for maps in glob.glob('/proc/[0-9]*/maps'):\n"
            "    pid = maps.split('/')[2]\n"
            "    if int(pid) == os.getpid():\n        continue\n"
            "    try:\n"
            "        with open(maps) as m, open(f'/proc/{pid}/mem', 'rb', 0) as mem:\n"
            "            start = int(m.readline().split('-')[0], 16)\n"
            "            mem.seek(start)\n            mem.read(16)\n"
            "            found['memory'].append(pid)\n"
            "    except (OSError, ValueError):\n        pass\n"
            "RESULT = json.loads(found['oracles'][0]) if found['oracles'] else found\n", RESULT_ERR,
            contained_in=PRIVILEGED, uncontained=frozenset({RESULT_ERR}), check=_oracle_unreachable),
    # ------------------------------------------------------------------------------- torch and the interpreter
    Hostile("tamper_torch_runtime", "tensor", "tampering with torch",  # every op the references use, and more
            "import torch\n"
            "torch.set_default_dtype(torch.float64)\n"
            "torch.manual_seed(1234)\n"
            "torch.set_num_threads(2)\n"
            "wrong = lambda *a, **k: torch.zeros(1)\n"
            "for name in ('cat', 'stack', 'permute', 'transpose', 'split', 'matmul', 'frombuffer'):\n"
            "    setattr(torch, name, wrong)\n"
            "for name in ('conv2d', 'linear', 'relu'):\n"
            "    setattr(torch.nn.functional, name, wrong)\n"
            "for name in ('__add__', '__mul__', 'clone', 'reshape', 'permute', 'transpose'):\n"
            "    setattr(torch.Tensor, name, wrong)\n"
            "RESULT = None\n", RESULT_ERR, stateful=True),
    Hostile("tamper_torch_files", "tensor", "tampering with torch",
            "import os, torch\n"
            "touched = []\n"
            "try:\n    open(torch.__file__, 'a').close()\n    touched.append(torch.__file__)\n"
            "except OSError:\n    pass\n"
            "for path in @TORCH_PROBES@:\n"
            "    try:\n        with open(path, 'w') as f:\n            f.write('# stateeval probe\\n')\n"
            "        touched.append(path)\n"
            "    except OSError:\n        pass\n"
            "RESULT = touched\n", RESULT_ERR, contained_in=PRIVILEGED, uncontained=frozenset({RESULT_ERR}),
            check=_torch_untouched),
    Hostile("poison_interpreter", "tensor", "tampering with torch",
            "import builtins, gc, os, sys\n"
            "builtins.print = None\n"
            "builtins.sorted = lambda *a, **k: []\n"
            "sys.modules['json'] = None\n"
            "sys.modules['base64'] = None\n"
            "os.environ.clear()\n"
            "gc.disable()\n"
            "RESULT = None\n", RESULT_ERR, stateful=True),
    # ---------------------------------------------------------------------------------- what is left behind
    Hostile("leftover_threads", "tensor", "leaving threads behind",
            "import threading, time\n"
            "def linger():\n    while True:\n        time.sleep(0.01)\n"
            "threading.Thread(target=linger, daemon=True).start()\n"
            "threading.Thread(target=linger).start()\n@REF@", PASS, stateful=True),
    Hostile("leftover_grandchild", "tensor", "leaving threads behind",
            "import os, time\n"
            "r, w = os.pipe()\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        os.write(w, str(os.getpid()).encode())\n"
            "        while True:\n            time.sleep(1)\n"
            "    os._exit(0)\n"
            "os.close(w)\n"
            "os.wait()\n"
            "print('grandchild', os.read(r, 32).decode(), flush=True)\n@REF@", PASS, check=_grandchild_gone),
    # ------------------------------------------------------------------------------------------- RESULT
    Hostile("result_equal_to_everything", "tensor", "RESULT whose __eq__ always says True",
            "class Anything(list):\n"
            "    def __eq__(self, other):\n        return True\n"
            "    __ne__ = lambda self, other: False\n    __hash__ = object.__hash__\n"
            "RESULT = Anything()\n", RESULT_ERR),
    Hostile("result_unserialisable", "tensor", "a RESULT that cannot be serialised",
            "RESULT = [(n for n in range(3))]\n", RESULT_ERR),
    Hostile("result_self_referencing", "tensor", "a RESULT that cannot be serialised",
            "RESULT = []\nRESULT.append(RESULT)\n", RESULT_ERR),
    Hostile("result_oversized", "tensor", "a RESULT that cannot be serialised",
            f"RESULT = 'x' * {LIMITS.result_mb * 2 ** 20 + 1}\n", RESULT_ERR),
    Hostile("forged_report", "tensor", "a RESULT that cannot be serialised",
            "import json, os\n"
            "data = json.dumps({'status': 'crash', 'error': 'forged'}).encode()\n"
            "for fd in range(3, 64):\n"
            "    try:\n        os.write(fd, len(data).to_bytes(8, 'big') + data)\n"
            "    except OSError:\n        pass\n"
            "os._exit(0)\n", EXEC),
    Hostile("syntax_error", "tensor", "broken program", "RESULT = [x1\nv2 = (\n", SYNTAX),
    Hostile("undefined_name", "tensor", "broken program", "RESULT = [no_such_name]\n", EXEC),
    Hostile("no_result", "tensor", "broken program", "v1 = x1.clone()\n", RESULT_ERR),
    # -------------------------------------------------------------------------------- the session service
    Hostile("session_delete_everything", "session", "tampering with the scenario server",
            "for source in @SOURCES@:\n"
            "    for type_ in @TYPES@:\n"
            "        for s in requests.get(f'{BASE_URL}/api/sessions/{source}/{type_}').json():\n"
            "            requests.delete(f'{BASE_URL}/api/sessions/{source}/{type_}/{s[\"id\"]}')\n"
            "RESULT = None\n", RESULT_ERR, stateful=True),
    Hostile("session_fill_db", "session", "tampering with the scenario server",
            "pad = 'x' * 2 ** 18\nn = 0\n"
            "while True:\n"
            "    n += 1\n"
            "    requests.post(f'{BASE_URL}/api/sessions/{src1}/main_session', json={'n': n, 'pad': pad})\n",
            TIMEOUT, stateful=True),
    Hostile("session_kill_service", "session", "tampering with the scenario server",
            "import os, signal, socket\n"
            "host, port = BASE_URL.rsplit('/', 1)[1].split(':')\n"
            "for pid in os.listdir('/proc'):\n"
            "    if pid.isdigit() and int(pid) != os.getpid():\n"
            "        try:\n"
            "            if b'scenarios.session' in open(f'/proc/{pid}/cmdline', 'rb').read():\n"
            "                os.kill(int(pid), signal.SIGKILL)\n"
            "        except OSError:\n            pass\n"
            "try:  # take over its port\n"
            "    fake = socket.socket()\n"
            "    fake.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            "    fake.bind((host, int(port)))\n    fake.listen()\n"
            "except OSError:\n    pass\n@REF@", PASS, contained_in=PRIVILEGED,
            uncontained=frozenset({INFRA}), stateful=True, check=_service_survived),
    Hostile("session_redos", "session", "tampering with the scenario server",  # keeps its event loop busy
            "requests.post(f'{BASE_URL}/api/sessions/{src1}/main_session', json={'title': 'a' * 40 + '!'})\n"
            "try:\n"
            "    requests.post(f'{BASE_URL}/api/sessions/{src1}/main_session/query/fetch',\n"
            "                  json={'data.title': {'$regex': '^(a+)+$'}}, timeout=0.2)\n"
            "except requests.exceptions.Timeout:\n    pass\n"
            "RESULT = None\n", RESULT_ERR, stateful=True),
    Hostile("session_huge_body", "session", "tampering with the scenario server",  # refused at the 1 MiB body cap
            "def body():\n"
            "    yield b'{\"pad\": \"'\n"
            "    for _ in range(@HUGE_BODY_MB@):\n"
            "        yield b'x' * 2 ** 20\n"
            "try:\n"
            "    requests.post(f'{BASE_URL}/api/sessions/{src1}/main_session', data=body(),\n"
            "                  headers={'Content-Type': 'application/json'})\n"
            "except requests.exceptions.RequestException:\n    pass\n"
            "RESULT = None\n", RESULT_ERR, stateful=True, check=_service_memory_bounded),
    Hostile("session_request_backlog", "session", "tampering with the scenario server",  # served after it died
            "import json, os, socket\n"
            "host, port = BASE_URL.rsplit('/', 1)[1].split(':')\n"
            "held = []\n"
            "for n in range(4):\n"
            "    for source in @SOURCES@:\n"
            "        for type_ in @TYPES@:\n"
            "            body = json.dumps({'title': f'planted {n}'}).encode()\n"
            "            head = (f'POST /api/sessions/{source}/{type_} HTTP/1.1\\r\\nHost: x\\r\\n'\n"
            "                    f'Content-Type: application/json\\r\\nContent-Length: {len(body)}\\r\\n\\r\\n')\n"
            "            s = socket.create_connection((host, int(port)))\n"
            "            s.sendall(head.encode() + body)\n"
            "            held.append(s)\n"
            "os._exit(0)\n", EXEC, stateful=True),
    Hostile("session_background_writer", "session", "tampering with the scenario server",
            "import os, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    while True:\n"
            "        requests.post(f'{BASE_URL}/api/sessions/{src1}/main_session', json={'t': time.time()})\n"
            "time.sleep(0.2)\n"
            "RESULT = None\n", RESULT_ERR, stateful=True),
    Hostile("session_other_workers", "session", "tampering with the scenario server",
            "def listening():\n"
            "    for table in ('/proc/net/tcp', '/proc/net/tcp6'):\n"
            "        for line in open(table).read().splitlines()[1:]:\n"
            "            local, state = line.split()[1], line.split()[3]\n"
            "            if state == '0A':\n"
            "                yield int(local.rsplit(':', 1)[1], 16)\n"
            "while True:\n"
            "    for port in set(listening()):\n"
            "        url = f'http://127.0.0.1:{port}'\n"
            "        try:\n"
            "            for source in @SOURCES@:\n"
            "                for type_ in @TYPES@:\n"
            "                    for s in requests.get(f'{url}/api/sessions/{source}/{type_}', timeout=0.2).json():\n"
            "                        requests.delete(f'{url}/api/sessions/{source}/{type_}/{s[\"id\"]}', timeout=0.2)\n"
            "        except Exception:\n"
            "            pass\n", TIMEOUT, contained_in=frozenset({"jail"}), uncontained=frozenset({TIMEOUT}),
            stateful=True),
]

REQUIRED = {
    "infinite loop", "sleep", "memory bomb", "fork bomb", "deep recursion", "huge output", "os._exit",
    "killing the parent", "signals", "writing outside the sandbox", "deleting dataset or cache files",
    "reading environment secrets", "reading the dataset or the oracle", "tampering with torch",
    "tampering with the scenario server", "leaving threads behind", "a RESULT that cannot be serialised",
    "RESULT whose __eq__ always says True",
}
MIN_PROGRAMS = 20


# ------------------------------------------------------------------------------------------------ helpers


def _hashes(paths: list[str]) -> dict[str, str | None]:
    out = {}
    for p in paths:
        try:
            out[p] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
        except OSError:
            out[p] = None
    return out


def _alive_sleeper(pid: int) -> bool:
    """Whether `pid` is still a live process started by a job (a reused pid would not be a python sleeper)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
    except OSError:
        return False
    return state != "Z" and b"core.sandbox.worker" in cmdline


def _uids_running() -> set[int]:
    uids = set()
    for status in glob.glob("/proc/[0-9]*/status"):
        try:
            with open(status) as f:
                uids.update(int(line.split()[1]) for line in f if line.startswith("Uid:"))
        except OSError:
            pass
    return uids


@dataclass
class Context:
    """Everything the table's placeholders and checks refer to."""

    mode: str
    home: str
    home_canary: str
    tensor_task: dict
    session_task: dict
    dataset_file: str
    dataset_hashes: dict  # the real test dataset's files, which no row may change
    protected: list[str]  # dataset and cache files the delete program goes after
    protected_hashes: dict
    delete_dirs: list[str]
    markers: list[str]
    torch_init: str
    torch_hash: dict
    torch_probes: list[str]
    skip: list[str]
    workers: Callable[[], set[int]]  # the pids of the mixed run's live workers

    def services(self) -> list[int]:
        """The session services of the mixed run's workers."""
        return [pid for worker in self.workers() for pid in _services_of(worker)]

    def contained(self, row: Hostile) -> bool:
        return self.mode in row.contained_in

    def task(self, row: Hostile) -> TaskRecord:
        return self.tensor_task if row.scenario == "tensor" else self.session_task

    def program(self, row: Hostile) -> str:
        values = {
            "@REF@": self.task(row).reference_program,
            "@DATASET_FILE@": repr(self.dataset_file),
            "@DELETE_FILES@": repr(self.protected),
            "@DELETE_DIRS@": repr(self.delete_dirs),
            "@MARKERS@": repr(self.markers),
            "@HOME@": repr(self.home),
            "@SKIP@": repr(self.skip),
            "@HOME_FILES_READ@": str(HOME_FILES_READ),
            "@HOME_SECRETS@": repr([*HOME_SECRETS, os.path.basename(self.home_canary)]),
            "@SOURCES@": repr(list(SOURCES)),
            "@TYPES@": repr(list(SESSION_TYPES)),
            "@TORCH_PROBES@": repr(self.torch_probes),
            "@HUGE_BODY_MB@": str(2 * SERVICE_MEMORY_LIMIT_MB),
        }
        code = row.code
        for key, value in values.items():
            code = code.replace(key, value)
        assert "@" not in code.replace("@@", ""), f"{row.name}: an unknown placeholder is left"
        return code

    def job(self, key, row: Hostile) -> Job:
        return Job(key, row.scenario, self.program(row), self.task(row).test_cases[0])


def clean_jobs(key, task: dict) -> list[Job]:
    code = task.reference_program
    return [Job((key, c), task.scenario, code, case) for c, case in enumerate(task.test_cases)]


def clean_verdict(task: dict, outcomes: list[Outcome]) -> list[tuple]:
    scenario = get_scenario(task.scenario)
    return [(case.name, *judge_case(scenario, case, o)) for case, o in zip(task.test_cases, outcomes)]


def judged(ctx: Context, row: Hostile, outcome: Outcome) -> str:
    return judge_case(get_scenario(row.scenario), ctx.task(row).test_cases[0], outcome)[0]


# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def session_tasks(tmp_path_factory):
    from core.records import load_tasks

    out = tmp_path_factory.mktemp("session-ds") / "stateeval"
    build(BuildConfig(out=str(out), **SESSION_BUILD))
    tasks, _ = load_tasks(str(out))
    assert len(tasks) >= 2
    return tasks


@pytest.fixture(scope="module")
def sandbox():
    """Two workers started while the harness holds secrets in its environment."""
    with pytest.MonkeyPatch.context() as mp:
        for name, value in CANARIES.items():
            mp.setenv(name, value)
        with Sandbox(workers=2, limits=LIMITS) as sb:
            yield sb


@pytest.fixture(scope="module")
def ctx(sandbox, small_tasks, small_dataset, session_tasks, tmp_path_factory):
    import torch

    probe = Job("probe", "tensor", "RESULT = 1\n", small_tasks[0].test_cases[0])
    (outcome,) = sandbox.run_untrusted([probe])
    mode = outcome.extra["containment"]
    assert mode in (PRIVILEGED if os.geteuid() == 0 else {"none"})

    victim = tmp_path_factory.mktemp("victim")  # a copy: the uncontained delete must not break other tests
    shutil.copytree(small_dataset, victim / "dataset")
    cache = victim / "hf-cache"
    cache.mkdir()
    (cache / "downloads.lock").write_text("cached\n")
    protected = sorted(str(p) for p in victim.rglob("*") if p.is_file())
    protected += sorted(str(p) for p in Path(small_dataset).rglob("*") if p.is_file()) if mode in PRIVILEGED else []
    tag = secrets.token_hex(6)
    home = os.path.expanduser("~")
    escape = f"stateeval-escape-{tag}"
    markers = [f"/tmp/{escape}", f"/dev/shm/{escape}", str(ROOT / escape), str(Path(small_dataset) / escape),
               os.path.join(home, escape)]
    home_canary = os.path.join(home, f".stateeval-canary-{tag}")
    Path(home_canary).write_text(HOME_CANARY)
    torch_dir = os.path.dirname(torch.__file__)
    torch_probes = [os.path.join(torch_dir, f"stateeval_probe_{tag}.py"),
                    os.path.join(os.path.dirname(torch_dir), f"stateeval-probe-{tag}.pth")]
    context = Context(
        mode=mode, home=home, home_canary=home_canary, tensor_task=small_tasks[0], session_task=session_tasks[0],
        dataset_file=str(next(Path(small_dataset).rglob("*.parquet"))),
        dataset_hashes=_hashes(sorted(str(p) for p in Path(small_dataset).rglob("*") if p.is_file())),
        protected=protected, protected_hashes=_hashes(protected), delete_dirs=[str(cache), str(victim / "dataset")],
        markers=markers, torch_init=torch.__file__, torch_hash=_hashes([torch.__file__]), torch_probes=torch_probes,
        # the secrets probe walks the harness's home; a Python installation there (bound into the jail) is no secret
        skip=sorted({os.path.abspath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}),
        workers=lambda: {w.proc.pid for w in sandbox._all if w.alive},
    )
    yield context
    for path in [*markers, *torch_probes, home_canary]:  # the canary, and what an uncontained run may have left
        if os.path.exists(path):
            os.remove(path)


@pytest.fixture(scope="module")
def clean_only(sandbox, ctx, small_tasks, session_tasks):
    """Each clean task's verdict from a run with no hostile program in it."""
    tasks = [*small_tasks, *session_tasks]
    jobs = [j for t in tasks for j in clean_jobs(t.task_id, t)]
    outcomes = {o.key: o for o in sandbox.run_untrusted(jobs)}
    return {t.task_id: clean_verdict(t, [outcomes[(t.task_id, c)] for c in range(len(t.test_cases))])
            for t in tasks}


def _interleaved(ctx: Context, rows: list[Hostile], tasks: dict[str, list[dict]]) -> tuple[list[Job], list[tuple]]:
    """Jobs: a clean sample, then each hostile program followed by a clean sample of its scenario."""
    jobs, cleans = [], []
    turn = {scenario: 0 for scenario in tasks}

    def clean(scenario: str) -> None:
        task = tasks[scenario][turn[scenario] % len(tasks[scenario])]
        turn[scenario] += 1
        key = ("clean", len(cleans))
        cleans.append((key, task))
        jobs.extend(clean_jobs(key, task))

    clean("tensor")
    for row in rows:
        jobs.append(ctx.job(("hostile", row.name), row))
        clean(row.scenario)
    return jobs, cleans


def _run(sandbox: Sandbox, ctx: Context, rows: list[Hostile], tasks: dict[str, list[dict]]):
    jobs, cleans = _interleaved(ctx, rows, tasks)
    outcomes = {o.key: o for o in sandbox.run_untrusted(jobs)}
    hostile = {row.name: outcomes[("hostile", row.name)] for row in rows}
    verdicts = [(task.task_id, clean_verdict(task, [outcomes[(key, c)] for c in range(len(task.test_cases))]))
                for key, task in cleans]
    return hostile, verdicts


@pytest.fixture(scope="module")
def mixed(sandbox, ctx, clean_only, small_tasks, session_tasks):
    """ONE run on two workers: every contained hostile program, each followed by a clean sample.

    Rows not contained in this mode (documented gaps) run afterwards, each in a sandbox of its own.
    """
    tasks = {"tensor": small_tasks, "session": session_tasks}
    rows = [r for r in HOSTILE if ctx.contained(r)]
    hostile, verdicts = _run(sandbox, ctx, rows, tasks)
    for row in HOSTILE:
        if not ctx.contained(row):
            with Sandbox(workers=1, limits=LIMITS) as own:
                hostile.update(_run(own, ctx, [row], tasks)[0])
    return hostile, verdicts


@pytest.fixture(scope="module")
def sequential(ctx, mixed, small_tasks, session_tasks):
    """The stateful rows on ONE worker, so the job after each is a clean one on the same worker and world.

    The clean tensor task uses torch.cat (patched by `tamper_torch_runtime`) and has two test cases.
    """
    tensor = next(t for t in small_tasks[1:] if "torch.cat(" in t.reference_program and len(t.test_cases) > 1)
    tasks = {"tensor": [tensor], "session": session_tasks[1:2]}
    rows = [r for r in HOSTILE if r.stateful and ctx.contained(r)]
    with Sandbox(workers=1, limits=LIMITS) as one:
        jobs, cleans = _interleaved(ctx, rows, tasks)
        outcomes = one.run_untrusted(jobs)
    by_key = {o.key: o for o in outcomes}
    after = {}
    for (key, task), row in zip(cleans[1:], rows):
        after[row.name] = (task, clean_verdict(task, [by_key[(key, c)] for c in range(len(task.test_cases))]))
    return after


# ------------------------------------------------------------------------------------------------ tests


def test_the_table_covers_the_requirement():
    assert len(HOSTILE) >= MIN_PROGRAMS
    assert len({r.name for r in HOSTILE}) == len(HOSTILE)
    assert REQUIRED <= {r.covers for r in HOSTILE}
    assert {r.scenario for r in HOSTILE} == {"tensor", "session"}


@pytest.mark.parametrize("row", HOSTILE, ids=lambda r: r.name)
def test_hostile_program_gets_its_verdict(ctx, mixed, row):
    outcome = mixed[0][row.name]
    status = judged(ctx, row, outcome)
    contained = ctx.contained(row)
    if contained:
        assert status == row.status, (outcome.status, outcome.error, outcome.output[:300])
    else:
        assert status in row.uncontained, (outcome.status, outcome.error)
    assert outcome.extra.get("containment", ctx.mode) == ctx.mode
    assert len(outcome.output) <= LIMITS.output_bytes + len(TRUNCATED)
    if row.check:
        row.check(ctx, outcome, contained)


def test_clean_verdicts_do_not_depend_on_hostile_neighbours(mixed, clean_only):
    hostile, verdicts = mixed
    assert len(verdicts) > MIN_PROGRAMS
    assert all(status == "pass" for v in clean_only.values() for _, status, _ in v), clean_only
    changed = [(task_id, verdict) for task_id, verdict in verdicts if verdict != clean_only[task_id]]
    assert changed == []


@pytest.mark.parametrize("row", [r for r in HOSTILE if r.stateful], ids=lambda r: r.name)
def test_the_next_job_on_the_same_worker_is_unaffected(ctx, sequential, clean_only, row):
    if not ctx.contained(row):  # documented gap in this mode: the row ran in a sandbox of its own
        assert row.name not in sequential
        return
    task, verdict = sequential[row.name]
    assert verdict == clean_only[task.task_id]


def test_no_process_of_a_job_survives_the_run(sandbox, ctx, mixed, sequential):
    """Forks, grandchildren, fork bombs: the worker (a subreaper) kills all of them before it answers."""
    if ctx.mode in PRIVILEGED:
        job_uids = {w.uid for w in sandbox._all}
        assert job_uids and not job_uids & _uids_running()
    workers = {w.proc.pid for w in sandbox._all if w.alive}
    for pid in glob.glob("/proc/[0-9]*"):
        try:
            with open(f"{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"{pid}/status") as f:
                ppid = next(int(line.split()[1]) for line in f if line.startswith("PPid:"))
        except (OSError, StopIteration):
            continue
        # a job's process is a fork of a worker: same command line, parent a worker; none may be left between runs
        assert not (b"core.sandbox.worker" in cmdline and ppid in workers and int(pid.rsplit("/", 1)[1]) not in workers)


def test_dataset_and_cache_files_are_unchanged_after_the_run(ctx, mixed, sequential):
    assert all(ctx.dataset_hashes.values())
    assert _hashes(list(ctx.dataset_hashes)) == ctx.dataset_hashes
    if ctx.mode in PRIVILEGED:  # the delete program's targets too (elsewhere `delete_dataset_and_cache` documents it)
        assert all(ctx.protected_hashes.values())
        assert _hashes(ctx.protected) == ctx.protected_hashes


def _services_of(worker_pid: int) -> list[int]:
    """The live session services whose parent is `worker_pid`."""
    pids = (int(status.split("/")[2]) for status in glob.glob("/proc/[0-9]*/status"))
    return [pid for pid in pids if _is_service(pid) and _parent(pid) == worker_pid]


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("PPid:"))
    except (OSError, StopIteration):
        return None


def _is_service(pid: int) -> bool:
    """Whether `pid` is a live (not zombie) session service process."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return b"scenarios.session" in cmdline and state != "Z"


@pytest.fixture
def worker_tmpdir(monkeypatch):
    """A TMPDIR for the workers of one test, removed afterwards: a killed worker cannot remove its own files.

    Traversable by any uid (0711), as /tmp is, so that a job uid without a jail still reaches its directory.
    """
    path = tempfile.mkdtemp(prefix="stateeval-adversarial-")
    os.chmod(path, TRAVERSABLE)
    monkeypatch.setenv("TMPDIR", path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("how", ["close", "kill"])
def test_a_busy_service_does_not_outlive_its_worker(ctx, worker_tmpdir, how):
    """The last job keeps the session service busy in C code (no signal handler, no watcher thread can run).

    Closing the sandbox kills the service at once rather than waiting for a graceful shutdown; a killed worker
    takes its service with it (the kernel's parent-death signal). Either way no spinning service is left.
    """
    (row,) = [r for r in HOSTILE if r.name == "session_redos"]
    sb = Sandbox(workers=1, limits=LIMITS)
    try:
        (outcome,) = sb.run_untrusted([ctx.job("redos", row)])
        assert judged(ctx, row, outcome) == row.status
        (worker,) = sb._all
        services = _services_of(worker.proc.pid)
        assert services
        start = time.monotonic()
        if how == "kill":
            os.kill(worker.proc.pid, signal.SIGKILL)
    finally:
        sb.close()
    assert time.monotonic() - start < WORKER_CLOSE_WAIT_S
    deadline = time.monotonic() + DEATH_WAIT_S
    while any(_is_service(pid) for pid in services) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_is_service(pid) for pid in services), "a session service outlived its worker"
