"""StateEval inside inspect_ai: `inspect eval stateeval/stateeval` (stateeval/inspect_task.py).

Its own top-level package because inspect_ai names a task after the package that defines it. Importing it needs
the `inspect` extra: pip install -e ".[inspect]".
"""
