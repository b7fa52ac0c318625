"""Progress: tqdm's bar on a terminal; whole lines, a few of them, in a log."""

from __future__ import annotations

import io

from core.progress import PLAIN_EVERY_S, PlainProgress, progress


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_a_whole_line_every_few_seconds_and_one_at_the_end():
    log, clock = io.StringIO(), Clock()
    bar = progress(100, "score", unit="run", stream=log, clock=clock)
    for _ in range(100):
        clock.now += PLAIN_EVERY_S / 4  # 100 updates over 25 intervals
        bar.update(1)
    bar.close()
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    assert len(lines) == 25  # 24 along the way (the 100th update is the end), one at the end
    assert lines[0] == f"score: 4/100 runs (4%), {PLAIN_EVERY_S:.0f} s"
    assert lines[-1] == f"score: 100/100 runs in {25 * PLAIN_EVERY_S:.0f} s"


def test_unfinished_work_ends_without_a_done_line():
    log, clock = io.StringIO(), Clock()
    bar = progress(10, "score", unit="run", stream=log, clock=clock)
    bar.update(3)
    bar.close()  # an interrupted run: its own message says what happened
    assert log.getvalue() == ""


def test_a_terminal_gets_tqdms_bar_and_no_description_means_silence():
    from tqdm import tqdm

    bar = progress(3, "score", unit="run", stream=Terminal())
    assert isinstance(bar, tqdm)
    bar.close()
    quiet = progress(3, None, unit="run", stream=Terminal())
    assert isinstance(quiet, PlainProgress) and quiet.stream is None
