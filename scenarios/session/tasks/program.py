"""One session frontier program: which steps it draws, in what order, and how their choices depend on each other
(the package's docstring says what a program is). `plan` hands the builder the steps, the helper code before them,
the populations and the sentence that introduces the setup."""

from __future__ import annotations

import functools
import random

from scenarios.base import VARIANTS, join_names, join_words
from scenarios.grammar import Mutation, Plan, Result, Step
from scenarios.session import words
from scenarios.session.tasks import populations, steps
from scenarios.session.tasks.choices import Draw, Priority

SECOND_LOOP = 0.75  # how often a program has a second loop, over a collection no other step reads


def plan(scenario, rng: random.Random) -> Plan:
    """One frontier program of three to five steps (see the package's docstring)."""
    d = Draw(rng)
    drawn: list[Step] = []
    found, ensured = None, None
    if rng.random() < 0.7:
        step, found = steps.lookup(d)
    else:
        step, ensured = steps.ensure(d)
    drawn.append(step)
    # The loop may run over the found session's own collection, and act on it: only when acting on it cannot make
    # another session the one the lookup finds (the most or fewest members change as the loop adds or removes).
    same = found is not None and found.kind in ("title", "newest") and rng.random() < 0.85
    fix = same and rng.random() < 0.75  # rename the found session after the loop (recovery from a stale read)
    chain = found is not None and found.kind != "newest" and rng.random() < 0.7
    # When the loop may act on the found session, its change must keep that session the one the lookup finds: the
    # most members only grow, the fewest only shrink, and the newest of an owner keeps its owner.
    kinds = ("member",) if same and found.kind == "newest" else ("owner", "member")
    # A rename after a loop over the found session's owner's sessions: that loop always reaches the found session,
    # so its body must be one that may leave it alone (a member write), or the rename's first try could never
    # succeed and one branch of its recovery would go untested.
    bodies = ("remove", "add") if fix and chain else None
    step, looped = steps.loop(d, found, allow_delete=not fix, chain=chain, same=same, kinds=kinds, bodies=bodies)
    drawn.append(step)
    if fix:
        drawn.append(steps.rename(d, found, looped))
    owners = (looped.pe, looped.me)  # the addresses the loops name (`me` is None where a body writes none)
    if rng.random() < SECOND_LOOP:  # a second loop, over a collection of its own (its sessions are not the first's)
        # a second loop leans to handing over what an owner leaves (a branch on what each session holds)
        step, again = steps.loop(d, found, allow_delete=True, n=2,
                                 bodies=tuple(steps.BODIES) + ("offboard", "spread") * 3,
                                 kinds=("owner", "owner", "owner", "member"))
        drawn.append(step)
        owners += (again.pe, again.me)
    if rng.random() < 0.3:
        owners += (found.email,) if found and found.email else ()  # the owner a "newest owned by" lookup names
        # nor the address an ensure adds: the session it adds would go again, and what it holds with it
        owners += (ensured.email,) if ensured else ()
        drawn.append(steps.bulk(d, list(d.types), avoid=tuple(a for a in owners if a), found=found))
    else:
        # How many members the found session ends with, when the loop may have changed them.
        target = found if same and looped.body in ("remove", "add", "handover", "retitle") else None
        if target is not None and not fix:
            d.shape(Priority.FOUND, populations.shape_stale, found, looped)
        drawn.append(steps.aggregate(d, list(d.types), target))
    if found is not None:
        drawn[0].results.insert(0, Result('found1["id"]', {"natural": "the id of the session found first",
                                                          "steps": "the id of `found1`",
                                                          "vague": "the id of the session identified first"}))
    d.shape(Priority.TARGETS, populations.shape_missing, found)
    d.shape(Priority.SPELLINGS, populations.shape_spelling)
    preamble = steps.helpers("".join(step.code for step in drawn)) + "\n" + "".join(d.url_lines)
    other_collection = [Mutation("argument", line, line.replace(f'/{t}"', f'/{other}"'))
                        for t, line in zip(d.urls, d.url_lines) for other in words.CONTENT_TYPES if other != t]
    return Plan(scenario, preamble, list(steps.HELPER_MUTATIONS), drawn,
                functools.partial(populations.draw_population, d), populations.PROFILES, _intro(d),
                other_collection)


def _intro(d: Draw) -> dict[str, str]:
    """The sentence that says what the setup block defines, the same in every variant."""
    parts = ["the source `src1`"]
    if d.emails:
        parts.append(("the e-mail address " if len(d.emails) == 1 else "the e-mail addresses ")
                     + join_names(d.emails))
    if d.title:
        parts.append("the title `title1`")
    text = join_words(parts)
    line = (f"The setup block sets `BASE_URL` to the address of the session service (frontier tier: paged "
            f"listings and versioned writes), which already holds many sessions, and defines {text}.")
    return {v: line for v in VARIANTS}
