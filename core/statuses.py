"""Status names, defined once: what a sandbox run answers, and what a scored sample gets.

The worker, the harness, scoring, the printed table, the plots and the leaderboard all speak these names, and
results.json stores them, so a name changed here is a format change.
"""

from __future__ import annotations

PASS = "pass"
SYNTAX_ERROR = "syntax_error"
EXECUTION_ERROR = "execution_error"
RESULT_ERROR = "result_error"
TIMEOUT = "timeout"
NO_CODE = "no_code"  # nothing that could be code in the reply
# A sample's status: the paper's taxonomy plus timeout and no_code, in the order tables and charts show them.
STATUSES = (PASS, SYNTAX_ERROR, EXECUTION_ERROR, RESULT_ERROR, TIMEOUT, NO_CODE)
# The test-case statuses of a program that ran to its end without raising and within its time limit, whether or
# not its RESULT was right: a sample all of whose test cases end in one of these counts towards success@k.
RAN = frozenset({PASS, RESULT_ERROR})

OK = "ok"  # the program ran and RESULT was read; scoring then compares it with the oracle
SETUP_ERROR = "setup_error"  # the dataset's setup block failed: the task is broken, not the answer
CRASH = "crash"  # the worker died or answered nonsense; it is replaced and the job runs again
# A job that still had no verdict after its retries (`core.sandbox.harness.RETRIES`): its workers kept dying. The
# harness's failure, never the program's: a sample with it is counted apart, has no verdict and no cause, and
# running the same command again scores it (see docs/trust.md, "When a worker dies").
INFRA_ERROR = "infra_error"
# What a sandbox child may report about itself, and what a worker may answer (timeouts and crashes are its own).
CHILD_STATUSES = frozenset({OK, SYNTAX_ERROR, EXECUTION_ERROR, RESULT_ERROR, SETUP_ERROR})
REPLY_STATUSES = CHILD_STATUSES | {TIMEOUT, CRASH}
