"""The public leaderboard: package a run (`submit`), re-score it before trusting it (`validate`), render the board.

    python -m evaluate.leaderboard submit RUN_DIR --name NAME [--org ORG] [--params 7B] [--weights open|closed]
    python -m evaluate.leaderboard validate SUBMISSION_DIR [--dataset stateeval]
    python -m evaluate.leaderboard build --out DIR

The board shows only submissions whose `validation.json` matches their files, and never ranks results from
different dataset versions, modes (tests mode included) or instruction variants together. See `submission.py` for the folder format.
"""

from evaluate.leaderboard.board import BuildReport, build
from evaluate.leaderboard.submission import Submission, SubmissionError, load_submission, submit
from evaluate.leaderboard.validation import Report, validate

__all__ = ["BuildReport", "Report", "Submission", "SubmissionError", "build", "load_submission", "submit",
           "validate"]
