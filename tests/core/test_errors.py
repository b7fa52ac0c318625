"""The one-line errors the command lines share: an output that cannot be written, and a list cut to a few."""

from __future__ import annotations

import errno
import os
import re

import pytest

from core.errors import CannotWrite, cannot_write, check_writable, first_few, writing
from tests.conftest import read_only


def oserror(code: int, filename) -> OSError:
    return OSError(code, os.strerror(code), str(filename))


def test_each_reason_gets_its_fix(tmp_path):
    (tmp_path / "a-file").write_text("")
    out = tmp_path / "a-file" / "ds"
    assert cannot_write(out, oserror(errno.ENOTDIR, out / "x")) == (
        f"cannot write {out}: {tmp_path / 'a-file'} is a file, not a folder; pass another --out")
    assert cannot_write(out, oserror(errno.EEXIST, tmp_path / "a-file")) == (  # mkdir(parents=True) on the file
        f"cannot write {out}: {tmp_path / 'a-file'} is a file, not a folder; pass another --out")
    out = tmp_path / "missing" / "ds"
    assert cannot_write(out, oserror(errno.EACCES, out)) == (
        f"cannot write {out}: permission denied; make {tmp_path} writable or pass another --out")
    assert cannot_write(out, oserror(errno.EROFS, out), option="--root") == (
        f"cannot write {out}: read-only file system; pass another --root")
    assert cannot_write(out, oserror(errno.ENOSPC, out), resume=", then run it again") == (
        f"cannot write {out}: no space left on device; free some space there, then run it again")
    assert cannot_write(out, oserror(errno.EIO, out), option=None) == f"cannot write {out}: input/output error; fix that"


def test_an_existing_file_that_cannot_be_replaced_is_not_a_file_in_the_way(tmp_path):
    report = tmp_path / "r.md"
    report.write_text("")
    assert cannot_write(report, oserror(errno.EACCES, report)) == (
        f"cannot write {report}: permission denied; make {report} writable or pass another --out")


def test_writing_turns_an_oserror_into_one_line(under_a_file):
    with pytest.raises(CannotWrite) as caught:
        with writing(under_a_file, "--root"):
            under_a_file.mkdir(parents=True)
    assert str(caught.value).endswith("is a file, not a folder; pass another --root")
    with writing(under_a_file.parent.parent / "fine"):
        (under_a_file.parent.parent / "fine").mkdir()


def test_check_writable_asks_before_the_work_and_leaves_nothing(tmp_path, under_a_file):
    check_writable(tmp_path / "results" / "m" / "local")
    check_writable(tmp_path / "a-file")  # a file that is there already is replaced in its folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # the probe is gone, nothing was made
    with pytest.raises(CannotWrite, match="a-file is a file, not a folder"):
        check_writable(under_a_file / "m" / "local")
    locked = tmp_path / "locked"
    locked.mkdir()
    with read_only(locked), pytest.raises(CannotWrite) as caught:
        check_writable(locked / "m" / "local")
    assert re.fullmatch(f"cannot write {locked}/m/local: (permission denied|operation not permitted); make {locked} "
                        "writable or pass another --out", str(caught.value))
    assert list(locked.iterdir()) == []


def test_first_few_counts_the_rest():
    ids = [f"tensor-{i:04d}" for i in range(283)]
    assert first_few(ids) == "tensor-0000, tensor-0001, tensor-0002, tensor-0003, tensor-0004 and 278 more"
    assert first_few(ids[:5]) == ", ".join(ids[:5])
    assert first_few(["a"]) == "a" and first_few([]) == ""
    assert first_few(ids[:3], shown=2) == "tensor-0000, tensor-0001 and 1 more"
