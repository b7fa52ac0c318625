"""The prompt every backend sends, and how code is taken out of a model's reply."""

from __future__ import annotations

import dataclasses
import json

import pytest

from evaluate.prompts import build_messages, extract_code

# Fields of a task record that define the truth: a prompt must be the same with or without them.
ORACLE_FIELDS = {"reference_program": "", "test_cases": [], "api_calls": [], "facts": [], "mutation": {}}


def _user(messages: list[dict]) -> str:
    users = [m["content"] for m in messages if m["role"] == "user"]
    assert len(users) == 1
    return users[0]


def _text(messages: list[dict]) -> str:
    return "\n".join(m["content"] for m in messages)


@pytest.fixture(scope="module")
def task(small_tasks):
    branching = [t for t in small_tasks if t.has_branch]
    assert branching, "the small dataset should contain a branching task"
    return branching[0]


def test_messages_are_a_system_and_a_user_turn(task):
    messages = build_messages(task)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert all(isinstance(m["content"], str) and m["content"].strip() for m in messages)


def test_prompt_shows_api_doc_setup_and_instruction(task):
    user = _user(build_messages(task))
    assert task.api_doc.strip() in user
    assert task.setup_code in user
    assert task.instruction.strip() in user
    # the setup block is shown as code, and the model is told where the answer goes
    assert f"```python\n{task.setup_code}```" in user
    assert "RESULT" in user


@pytest.mark.parametrize("index", range(4))
def test_prompt_never_contains_the_reference_program(small_tasks, index):
    task = small_tasks[index]
    text = _text(build_messages(task))
    assert task.reference_program.strip() not in text
    # No single statement of the reference leaks either (RESULT's final assignment is named by the instruction
    # itself, and `else:` is not code worth hiding).
    for line in task.reference_program.splitlines():
        line = line.strip()
        if not line or line.startswith("RESULT") or line == "else:":
            continue
        assert line not in text, f"reference line leaked into the prompt: {line}"


def test_prompt_never_contains_expected_results(small_tasks):
    for task in small_tasks:
        text = _text(build_messages(task))
        assert "__tensor__" not in text
        for case in task.test_cases:
            assert case.expected_result not in text
            for item in json.loads(case.expected_result):
                assert item["__tensor__"]["data"] not in text


def test_prompt_does_not_depend_on_oracle_fields(small_tasks):
    for task in small_tasks:
        public = dataclasses.replace(task, **ORACLE_FIELDS)
        assert build_messages(public) == build_messages(task)


def test_the_enriched_documentation_is_shown_in_place_of_the_spec_and_refused_where_there_is_none(small_tasks):
    from core.records import DatasetError, with_doc

    task = dataclasses.replace(small_tasks[0], api_doc_enriched=small_tasks[0].api_doc + "\n## Observed behaviour\n")
    (shown,) = with_doc([task], "enriched")
    assert "## Observed behaviour" in build_messages(shown)[1]["content"]
    assert with_doc(small_tasks, "spec") == small_tasks
    assert all(t.api_doc_enriched == "" for t in small_tasks), "a world written by hand observes nothing"
    with pytest.raises(DatasetError, match=r"--doc enriched: the tensor tasks have no enriched documentation"):
        with_doc(small_tasks, "enriched")


def test_prompt_differs_between_tasks(small_tasks):
    prompts = {_user(build_messages(t)) for t in small_tasks}
    assert len(prompts) == len(small_tasks)


# ------------------------------------------------------------------------------------------- extract_code


def test_single_python_fence():
    reply = "Here is the code:\n```python\nv1 = torch.cat([x1, x2], dim=0)\nRESULT = [v1]\n```\nDone."
    assert extract_code(reply) == "v1 = torch.cat([x1, x2], dim=0)\nRESULT = [v1]\n"


def test_two_python_fences_are_joined_in_order():
    reply = (
        "First the concatenation:\n```python\nv1 = torch.cat([x1, x2], dim=0)\n```\n"
        "then the result:\n```python\nRESULT = [v1]\n```\n"
    )
    assert extract_code(reply) == "v1 = torch.cat([x1, x2], dim=0)\nRESULT = [v1]\n"


def test_python_fences_win_over_other_languages():
    reply = "```bash\npip install torch\n```\n```py\nRESULT = [x1]\n```\n```text\nsome output\n```"
    assert extract_code(reply) == "RESULT = [x1]\n"


def test_fence_without_language():
    assert extract_code("```\nRESULT = [x1]\n```") == "RESULT = [x1]\n"


def test_no_fence_is_the_whole_reply():
    assert extract_code("v1 = x1.clone()\nRESULT = [v1]") == "v1 = x1.clone()\nRESULT = [v1]\n"


def test_thinking_section_is_removed_before_extraction():
    reply = (
        "<think>Maybe ```python\nRESULT = 'wrong'\n``` would do? No.</think>\n"
        "```python\nRESULT = [x1]\n```"
    )
    assert extract_code(reply) == "RESULT = [x1]\n"


def test_thinking_section_before_unfenced_code():
    assert extract_code("<think>\nplan: return x1\n</think>\nRESULT = [x1]\n") == "RESULT = [x1]\n"


@pytest.mark.parametrize("reply", [
    "<think>I should concatenate first ```python\nRESULT = [x1]\n```",
    "```python\nRESULT = [x1]\n```\n<think>let me reconsider",
])
def test_unclosed_thinking_means_no_answer(reply):
    assert extract_code(reply) is None


@pytest.mark.parametrize("reply", [None, "", "   \n\n", "```python\n```", "<think>all thought, no code</think>"])
def test_nothing_to_run(reply):
    assert extract_code(reply) is None


def test_unterminated_fence_keeps_its_code():
    # a reply cut off by max_new_tokens still carries the code written so far
    assert extract_code("```python\nv1 = x1.clone()\nRESULT = [v1]\n") == "v1 = x1.clone()\nRESULT = [v1]\n"


@pytest.mark.parametrize("reply, answer", [
    ("<think>a ```python\nx\n```</think>OK", "OK"),
    ("<THINKING>\nplan\n</THINKING>\nOK", "\nOK"),
    ("<reasoning>r</reasoning>A<think>t</think>B", "AB"),
    ("<think>never closed", "<think>never closed"),  # extract_code treats that as no answer
    (None, ""),
])
def test_one_helper_strips_thinking_for_every_reader_of_replies(reply, answer):
    from evaluate.prompts import strip_thinking

    assert strip_thinking(reply) == answer
