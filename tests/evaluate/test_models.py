"""Model backends: alias resolution, the openai backend against a real local HTTP server, resume after a kill,
vLLM up to its import boundary, and the offline SmolLM2 path end to end (slow)."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest

from core.backends import ALIASES, BackendError, Request, Sampling, UnknownModel, Usage, get_backend, resolve
from core.backends.hf_local import locate
from core.backends.openai_api import OpenAIBackend
from evaluate.prompts import build_messages
from tests.conftest import interruptible
from tests.evaluate.scripted_server import ScriptedServer, kill_after_lines

ROOT = Path(__file__).resolve().parents[2]
FENCED = "```python\nRESULT = []\n```"


def _requests(n: int) -> list[Request]:
    return [Request(f"t-{i}", 0, [{"role": "user", "content": f"task {i}"}]) for i in range(n)]


def _collect(backend, requests, sampling=Sampling()):
    got = {}
    backend.generate(requests, sampling, lambda r, reply: got.__setitem__(r.task_id, reply))
    return got


# ----------------------------------------------------------------------------------------------- aliases


def test_alias_table_names_the_documented_models():
    assert resolve("qwen", None) == ("Qwen/Qwen2.5-Coder-32B-Instruct", "vllm", ALIASES["qwen"])
    assert resolve("gpt-4.1-nano", None)[1] == "openai"
    assert resolve("smollm2", None)[1] == "hf"
    for name in ("llama4-scout", "gpt-4.1", "gemini-2.5-flash", "reference"):
        assert name in ALIASES


def test_the_reference_backend_replays_the_references_it_was_built_with_and_requests_carry_no_task(small_tasks):
    import dataclasses

    assert [f.name for f in dataclasses.fields(Request)] == ["task_id", "sample", "messages", "usage", "tools", "case"]
    references = {t.task_id: t.reference_program for t in small_tasks[:2]}
    backend = get_backend("reference", references=references)
    requests = [Request(t.task_id, 0, build_messages(t)) for t in small_tasks[:2]]
    assert _collect(backend, requests) == {k: f"```python\n{v}```" for k, v in references.items()}
    with pytest.raises(BackendError, match="no reference program for 't-0'"):
        _collect(backend, _requests(1))


def test_unknown_alias_without_backend_lists_the_known_ones():
    with pytest.raises(UnknownModel) as err:
        resolve("my-model", None)
    assert "qwen" in str(err.value) and "--backend" in str(err.value)


def test_any_other_name_is_a_model_id_for_the_chosen_backend():
    assert resolve("org/my-model", "openai")[:2] == ("org/my-model", "openai")
    with pytest.raises(UnknownModel):
        resolve("x", "tgi")


def test_openai_backend_without_key_or_url_says_what_to_set(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(BackendError, match="OPENAI_API_KEY"):
        get_backend("gpt-4.1")


# ------------------------------------------------------------------------------------------ openai backend


def test_openai_backend_sends_the_shared_prompt_and_returns_every_reply(small_tasks):
    task = small_tasks[0]
    with ScriptedServer(lambda body: f"reply to {body['messages'][-1]['content'][-20:]}") as server:
        backend = OpenAIBackend("scripted-model", base_url=server.base_url)
        request = Request(task.task_id, 0, build_messages(task))
        got = _collect(backend, [request], Sampling(temperature=0.5, max_new_tokens=77, seed=3))
    body = server.requests[0]
    assert body["messages"] == build_messages(task)
    assert body["model"] == "scripted-model"
    assert body["temperature"] == 0.5 and body["max_tokens"] == 77 and body["seed"] == 3
    assert got[task.task_id].startswith("reply to")


def test_ctrl_c_that_reaches_another_thread_stops_an_openai_run(tmp_path):
    """The kernel may hand SIGINT to any thread (the resolver's, here a thread of the test's own): a run waiting on a
    model that never answers must still stop, rather than wait for the request's ten-minute timeout."""
    script = (
        "import signal, sys, threading\n"
        "from core.backends import Request, Sampling\n"
        "from core.backends.openai_api import OpenAIBackend\n"
        "def interrupt():\n"
        "    sys.stdin.readline()  # a line from the test: the request reached the server, the run waits for it\n"
        "    signal.pthread_kill(threading.get_ident(), signal.SIGINT)\n"
        "threading.Thread(target=interrupt, daemon=True).start()\n"
        "backend = OpenAIBackend('scripted', base_url=sys.argv[1], timeout_s=600)\n"
        "try:\n"
        "    backend.generate([Request('t', 0, [{'role': 'user', 'content': 'hi'}])], Sampling(), lambda r, x: None)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "    raise SystemExit(130)\n"
    )
    release = threading.Event()
    arrived, tell = os.pipe()  # the script's stdin

    def hold(body):
        os.write(tell, b"arrived\n")
        return release.wait(300) and "late"

    with ScriptedServer(hold) as server:
        try:
            proc = subprocess.run([sys.executable, "-c", script, server.base_url], stdin=arrived, capture_output=True,
                                  text=True, timeout=240, env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT,
                                  preexec_fn=interruptible)
        finally:
            release.set()
            os.close(arrived)
            os.close(tell)
    assert proc.returncode == 130 and proc.stdout.startswith("interrupted"), (proc.stdout, proc.stderr[-2000:])


def test_openai_backend_bounds_concurrency_and_answers_all():
    with ScriptedServer(lambda body: FENCED, delay_s=0.05) as server:
        got = _collect(OpenAIBackend("m", base_url=server.base_url, concurrency=4), _requests(20))
    assert len(got) == 20
    assert 1 < server.max_in_flight <= 4


def test_openai_backend_retries_429_and_5xx_then_succeeds():
    failures = {"t-0": [429, 503], "t-1": [500]}

    def reply(body):
        tid = body["messages"][0]["content"].replace("task ", "t-")
        queue = failures.get(tid)
        return queue.pop(0) if queue else FENCED

    with ScriptedServer(reply) as server:
        got = _collect(OpenAIBackend("m", base_url=server.base_url, backoff_s=0.01), _requests(3))
    assert got == {"t-0": FENCED, "t-1": FENCED, "t-2": FENCED}
    assert server.count() == 3 + 3  # two retries for t-0, one for t-1


def test_openai_backend_does_not_retry_a_client_error():
    with ScriptedServer(lambda body: 400) as server:
        with pytest.raises(BackendError, match="HTTP 400"):
            _collect(OpenAIBackend("m", base_url=server.base_url, backoff_s=0.01), _requests(1))
    assert server.count() == 1


def test_openai_backend_gives_up_after_max_attempts():
    with ScriptedServer(lambda body: 502) as server:
        with pytest.raises(BackendError, match="giving up after 3 attempts"):
            _collect(OpenAIBackend("m", base_url=server.base_url, backoff_s=0.01, max_attempts=3), _requests(1))
    assert server.count() == 3


def _closed_port() -> int:
    """A loopback port nothing listens on: bound to learn a free number, then closed."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_dead_endpoint_is_named_with_its_likely_cause_before_any_request():
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    backend = OpenAIBackend("m", base_url=url, backoff_s=0.01)
    with pytest.raises(BackendError) as err:
        backend.prepare()
    message = str(err.value)
    assert "\n" not in message and url in message
    assert "nothing is listening" in message and "giving up" not in message


def test_evaluate_against_a_dead_endpoint_fails_fast_in_one_line(small_dataset, tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENAI_API_KEY="sk-test")
    proc = subprocess.run([sys.executable, "-m", "evaluate", "--model", "m", "--backend", "openai", "--base-url", url,
                           "--dataset", str(small_dataset), "--out", str(tmp_path / "out")],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and url in proc.stderr and "nothing is listening" in proc.stderr
    assert not list((tmp_path / "out").rglob("results.json"))


# ------------------------------------------------------------------------------------- resume after a kill


def _evaluate(args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENAI_API_KEY="sk-test")
    return subprocess.Popen([sys.executable, "-m", "evaluate", *args], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def test_a_killed_run_resumes_and_loses_at_most_its_in_flight_requests(small_dataset, small_tasks, tmp_path):
    n_tasks = len(small_tasks)
    reference = {t.instruction: t.reference_program for t in small_tasks}

    def reply(body):  # answers with the reference, so the resumed run must score 100%
        user = body["messages"][-1]["content"]
        return next(f"```python\n{code}```" for instr, code in reference.items() if instr.strip() in user)

    args = ["--model", "scripted", "--backend", "openai", "--dataset", str(small_dataset), "--out", str(tmp_path),
            "--concurrency", "2"]
    cache = tmp_path / "scripted" / "local" / "generations.jsonl"
    # Three replies, then the requests in flight wait: the run is killed with exactly three cached, on any machine.
    with ScriptedServer(reply, hold_after=3) as first:
        done = kill_after_lines(_evaluate(args + ["--base-url", first.base_url]), cache, 3, timeout_s=120)
        assert done == 3 < n_tasks
    # The resumed run talks to a server of its own, so a request of the killed run that arrives late is not its.
    with ScriptedServer(reply) as second_server:
        second = _evaluate(args + ["--base-url", second_server.base_url])
        out, _ = second.communicate(timeout=300)
    assert second.returncode == 0, out
    assert f"resuming: {done} of {n_tasks}" in out
    # Only the requests without a cached reply were sent again; the kill lost at most the 2 in flight.
    assert second_server.count() == n_tasks - done
    assert first.count() <= done + 2
    results = json.loads((tmp_path / "scripted" / "local" / "results.json").read_text())
    assert results["summary"]["overall"]["pass@1"] == 1.0


def test_a_changed_prompt_is_not_served_from_the_cache(small_dataset, tmp_path):
    from core.records import load_tasks
    from evaluate.run import EvalConfig, generate

    tasks, _ = load_tasks(str(small_dataset))
    tasks = tasks[:2]
    with ScriptedServer(lambda body: FENCED) as server:
        config = EvalConfig(model="m", backend="openai", dataset=str(small_dataset), out=str(tmp_path),
                            backend_options={"base_url": server.base_url})
        generate(config, tasks)
        generate(config, tasks)
        assert server.count() == 2  # the second run was served from the cache
        tasks[0] = dataclasses.replace(tasks[0], instruction=tasks[0].instruction + " Please.")
        generate(config, tasks)
        assert server.count() == 3


# ------------------------------------------------------------------------------------------ tokens, cost


def test_token_counts_and_cost_reach_results_json_and_survive_a_resume(small_dataset, small_tasks, tmp_path):
    from evaluate.run import EvalConfig, run
    from evaluate.usage import Price
    from tests.evaluate.scripted_server import word_usage

    tasks = small_tasks[:3]
    reference = {t.instruction: t.reference_program for t in tasks}

    def reply(body):
        user = body["messages"][-1]["content"]
        return next(f"```python\n{code}```" for instr, code in reference.items() if instr.strip() in user)

    expected = [word_usage({"messages": build_messages(t)}, reply({"messages": build_messages(t)})) for t in tasks]
    prompt = sum(u["prompt_tokens"] for u in expected)
    completion = sum(u["completion_tokens"] for u in expected)
    with ScriptedServer(reply) as server:
        config = EvalConfig(model="m", backend="openai", dataset=str(small_dataset), out=str(tmp_path), limit=3,
                            workers=2, backend_options={"base_url": server.base_url}, price=Price(2.0, 8.0))
        first = run(config)
        sent = server.count()
        again = run(config)  # every reply comes from the cache
        assert server.count() == sent == 3

    for report in (first, again):
        written = json.loads(Path(report["path"]).read_text())
        usage = written["usage"]
        assert usage["counted_by"] == "api"
        assert usage["price_usd_per_million"] == {"prompt": 2.0, "completion": 8.0}
        overall = usage["overall"]
        assert (overall["samples"], overall["counted"]) == (3, 3)
        assert (overall["prompt_tokens"], overall["completion_tokens"]) == (prompt, completion)
        assert overall["total_tokens"] == prompt + completion
        assert overall["cost_usd"] == pytest.approx((2.0 * prompt + 8.0 * completion) / 1e6)
        assert usage["scenarios"]["tensor"] == overall
        assert [s["tokens"] for s in written["samples"]] == [
            {"prompt": u["prompt_tokens"], "completion": u["completion_tokens"]} for u in expected]
        assert written["summary"]["overall"]["pass@1"] == 1.0
    assert again["usage"] == first["usage"]


def test_an_endpoint_without_usage_leaves_the_counts_unknown(small_dataset, tmp_path):
    from evaluate.run import EvalConfig, run

    with ScriptedServer(lambda body: FENCED, usage=None) as server:
        report = run(EvalConfig(model="m", backend="openai", dataset=str(small_dataset), out=str(tmp_path), limit=2,
                                workers=2, backend_options={"base_url": server.base_url}))
    overall = report["usage"]["overall"]
    assert (overall["samples"], overall["counted"], overall["total_tokens"]) == (2, 0, 0)
    assert overall["cost_usd"] is None and report["usage"]["counted_by"] is None
    assert [s["tokens"] for s in report["samples"]] == [None, None]


def test_a_cache_line_keeps_its_usage_and_an_old_line_has_none(tmp_path):
    from core.backends.cache import GenerationCache

    path = tmp_path / "generations.jsonl"
    path.write_text(json.dumps({"key": "old", "task_id": "t", "sample": 0, "reply": "x"}) + "\n")
    cache = GenerationCache(path)
    cache.add("new", "t", 1, "y", Usage(10, 3, "api"))
    cache.close()
    again = GenerationCache(path)
    assert again.replies == {"old": "x", "new": "y"}
    assert again.usage == {"new": Usage(10, 3, "api")}


def _row(key: str) -> bytes:
    return (json.dumps({"key": key, "task_id": "t", "sample": 0, "reply": f"reply {key}"}) + "\n").encode()


@pytest.mark.parametrize("cut_back", [True, False], ids=["cut-back", "cut-back-fails-too"])
def test_a_disk_full_mid_line_stops_in_one_line_and_the_resume_reuses_every_whole_line(tmp_path, monkeypatch,
                                                                                       cut_back):
    """ENOSPC after half a line: the half line is never read, and never swallows the next reply's line."""
    from core.backends.cache import CacheWriteError, GenerationCache

    path = tmp_path / "generations.jsonl"
    cache = GenerationCache(path)
    cache.add("a", "t", 0, "reply a")
    cache.add("b", "t", 0, "reply b")
    before = path.read_bytes()
    real_write = cache._file.write

    def disk_full(data):
        real_write(bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def cannot_cut(*_args):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    cache._file.write = disk_full
    if not cut_back:  # the worst case: the half line stays, as a kill in mid-write leaves it
        monkeypatch.setattr(os, "ftruncate", cannot_cut)
    with pytest.raises(CacheWriteError) as failed:
        cache.add("c", "t", 0, "reply c")
    message = str(failed.value)
    assert "\n" not in message and str(path) in message and "no space left on device" in message
    assert "free some space" in message and "run the same command again" in message
    assert "c" not in cache.replies
    cache.close()
    monkeypatch.undo()
    half = _row("c")[: len(_row("c")) // 2]
    assert path.read_bytes() == (before if cut_back else before + half)

    resumed = GenerationCache(path)
    assert resumed.replies == {"a": "reply a", "b": "reply b"}  # the earlier replies are reused
    resumed.add("c", "t", 0, "reply c")
    resumed.close()
    assert GenerationCache(path).replies == {"a": "reply a", "b": "reply b", "c": "reply c"}
    assert path.read_bytes() == before + (b"" if cut_back else half + b"\n") + _row("c")


def test_a_cache_that_cannot_be_written_at_all_names_the_cause(tmp_path):
    from core.backends.cache import CacheWriteError, GenerationCache

    (tmp_path / "file").write_text("")
    cache = GenerationCache(tmp_path / "file" / "generations.jsonl")  # its folder is a file
    with pytest.raises(CacheWriteError, match="cannot write the generation cache .*generations.jsonl: .*; fix that"):
        cache.add("a", "t", 0, "reply a")


def test_hf_counts_generated_tokens_up_to_the_end_of_sequence():
    from core.backends.hf_local import generated_length

    same = types.SimpleNamespace(eos_token_id=2, pad_token_id=2)  # pad = eos, as the backend sets it when unset
    assert generated_length([5, 6, 2, 2, 2], same) == 3  # the stop token counts, the padding after it does not
    assert generated_length([5, 6, 7], same) == 3  # cut by max_new_tokens
    apart = types.SimpleNamespace(eos_token_id=2, pad_token_id=0)
    assert generated_length([5, 6, 0, 0], apart) == 2


# ------------------------------------------------------------------------------------------------- vLLM


def test_vllm_missing_extra_names_the_install_and_the_gpu_it_needs(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm -> ImportError
    with pytest.raises(BackendError, match=r"pip install 'stateeval\[vllm\]' on a machine with a CUDA GPU, which "
                                           "vLLM needs; without one, use --backend hf on the CPU, or --backend "
                                           "openai --base-url URL"):
        get_backend("qwen").prepare()


def test_vllm_without_a_gpu_says_so_in_one_line(monkeypatch):
    import torch

    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(BackendError) as err:
        get_backend("qwen").prepare()
    assert "needs a CUDA GPU" in str(err.value) and "\n" not in str(err.value)


def test_vllm_gets_every_prompt_in_one_batched_chat_call(monkeypatch, small_tasks):
    import torch

    calls = {}

    class FakeLLM:
        def __init__(self, **kwargs):
            calls["engine"] = kwargs

        def chat(self, messages, params, use_tqdm=True):
            calls.setdefault("chat", []).append((messages, params))
            out = types.SimpleNamespace(text=FENCED, token_ids=[7] * 12)
            return [types.SimpleNamespace(outputs=[out], prompt_token_ids=list(range(300))) for _ in messages]

    fake = types.ModuleType("vllm")
    fake.LLM = FakeLLM
    fake.SamplingParams = lambda **kw: kw
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    backend = get_backend("qwen", tensor_parallel_size=2, max_model_len=8192, gpu_memory_utilization=0.8)
    requests = [Request(t.task_id, 0, build_messages(t)) for t in small_tasks[:3]]
    got = _collect(backend, requests, Sampling(temperature=0.2, max_new_tokens=99, seed=5))
    assert calls["engine"] == {"model": "Qwen/Qwen2.5-Coder-32B-Instruct", "tensor_parallel_size": 2,
                               "gpu_memory_utilization": 0.8, "max_model_len": 8192}
    assert len(calls["chat"]) == 1
    messages, params = calls["chat"][0]
    assert messages == [build_messages(t) for t in small_tasks[:3]]  # the same prompt as every other backend
    assert params[0] == {"temperature": 0.2, "top_p": 1.0, "max_tokens": 99, "seed": 5}
    assert set(got) == {t.task_id for t in small_tasks[:3]}
    assert {r.usage for r in requests} == {Usage(300, 12, "tokenizer")}  # the engine's own token counts


# --------------------------------------------------------------------------------------------------- hf


def test_hf_locates_gguf_files_in_all_accepted_forms(tmp_path):
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF")
    assert locate(str(f)) == (str(tmp_path), "m.gguf")
    assert locate("org/model") == ("org/model", None)
    with pytest.raises(BackendError, match="not installed"):
        locate("no_such_pkg_xyz:model.gguf")
    with pytest.raises(BackendError, match="not found"):
        locate(str(tmp_path / "missing.gguf"))


@pytest.mark.slow
def test_smollm2_end_to_end_build_prompt_generate_sandbox_score(small_dataset, tmp_path):
    """The offline GGUF model through the real hf backend; it will not solve tasks, but every step must run."""
    pytest.importorskip("transformers", reason="the hf extra is not installed (pip install 'stateeval[hf]')")
    from evaluate.run import EvalConfig, run

    config = EvalConfig(model="smollm2", dataset=str(small_dataset), out=str(tmp_path), limit=2,
                        sampling=Sampling(max_new_tokens=48))
    report = run(config)
    assert report["backend"] == "hf"
    assert report["summary"]["overall"]["tasks"] == 2
    statuses = {s["status"] for s in report["samples"]}
    assert statuses <= {"pass", "syntax_error", "execution_error", "result_error", "timeout", "no_code"}
    lines = (tmp_path / "smollm2" / "local" / "generations.jsonl").read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(x)["reply"] is not None for x in lines)


def test_vllm_chat_sends_the_tools_to_the_template_and_reads_tool_calls_back(monkeypatch, small_tasks):
    import torch

    from evaluate.episodes import RUN_CODE_SPEC

    calls = []

    class FakeLLM:
        def __init__(self, **kwargs):
            pass

        def chat(self, messages, params, use_tqdm=True, tools=None):
            calls.append(tools)
            text = '<tool_call>\n{"name": "run_code", "arguments": {"code": "print(1)"}}\n</tool_call>'
            out = types.SimpleNamespace(text=text, token_ids=[7] * 3)
            return [types.SimpleNamespace(outputs=[out], prompt_token_ids=[1] * 5) for _ in messages]

    fake = types.ModuleType("vllm")
    fake.LLM = FakeLLM
    fake.SamplingParams = lambda **kw: kw
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    tools = [RUN_CODE_SPEC.to_openai()]
    requests = [Request(t.task_id, 0, build_messages(t), tools=tools) for t in small_tasks[:2]]
    got = []
    get_backend("qwen").chat(requests, Sampling(), lambda r, m: got.append(m))
    assert calls == [tools]  # one batched call for the requests sharing these tools
    assert [m["tool_calls"][0]["function"] for m in got] == [{"name": "run_code",
                                                               "arguments": '{"code": "print(1)"}'}] * 2
    assert all(m["content"] is None for m in got) and requests[0].usage == Usage(5, 3, "tokenizer")


def test_a_backend_without_tool_calling_says_which_do(small_tasks):
    from core.backends.hf_local import HFBackend

    with pytest.raises(BackendError, match="openai, vllm or reference"):
        HFBackend.__new__(HFBackend).chat([], Sampling(), lambda r, m: None)
