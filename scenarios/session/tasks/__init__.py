"""The session scenario's frontier programs: steps of the frontier grammar (`scenarios/grammar.py`) over the
frontier tier of the session service (paged listings, versioned writes, members, bulk delete).

A program is three to five steps drawn from:

* a lookup: the session of a collection titled `title1`, the newest one owned by an address, the one with the
  most (or fewest) members with a stated tie-break; or an *ensure* (lookup or create: the session titled `title1`
  gets a member, or is added when there is none);
* a loop over every page of a collection, a predicate on the owner or the members, and a body of one to three
  calls (remove or add a member, hand the session over, delete it, remove a member and retitle it), or a branch
  on what each session holds (*offboard*: hand a session its owner leaves to its first other member, or delete it
  when it has none), or a decision on counts its own writes move (*spread*: hand a session its owner leaves to
  whichever of its other members owns the fewest of the collection at that moment);
* in three programs of four, a second loop of the same kind over a collection no other step reads (its list is
  `changed2`);
* a closing step: rename the session found first, retrying once on 412 with what a fresh read answers (recovery:
  the loop before it changes that session in some profiles and leaves it alone in `none`, so that some test case
  takes each branch), an aggregate read after the writes (a count, a total, a maximum), or a bulk delete by owner.

The reference reads listings with a paging helper (`every_session`) and, like any careful program, acts on what
the service answers now: a session the loop changed has a newer version and other members than when it was found.

Every test input is a population drawn afresh for a profile (`original`, `none`, `single`, `page`, `page+1`,
`large`) that shapes the collections the program reads.

The modules, by job:

* `program.py`: `plan`, one program: which steps, in what order, and how their choices depend on each other;
* `steps.py`: each step's code, texts, facts, mutations and API calls;
* `populations.py`: the test inputs, and the shapers that make each show what a step must get right;
* `choices.py`: what steps and populations share: `Draw` (the choices of one program), the results a step hands
  later steps (`Found`, `Ensured`, `Looped`) and the order shapers run in (`Priority`).
"""

from scenarios.session.tasks.program import plan

__all__ = ["plan"]
