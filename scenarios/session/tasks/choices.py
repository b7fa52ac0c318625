"""What one frontier program chose, shared by its steps (`steps.py`) and its populations (`populations.py`).

`Draw` holds the choices as the steps make them: the collections, addresses and title the program reads, and the
shapers a population needs for them. A step hands later steps what they must know of it as a typed result
(`Found`, `Ensured`, `Looped`); a shaper runs at its `Priority`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import IntEnum
from typing import Callable

from scenarios.session import words


class Priority(IntEnum):
    """When a population shaper runs: in this order, each seeing what the ones before it made (shapers of one
    priority run in the order the steps added them)."""

    COLLECTIONS = 0  # who owns and is a member of a collection a step reads whole: a loop's matches, the session an
    #                  ensure looks for, the sessions a bulk delete names
    LOOKUPS = 1  # the session each lookup finds: titled, the newest of an owner, the most or fewest members
    FOUND = 2  # what ties the session found first to a loop: its owner, or the loop changing it or not
    TARGETS = 3  # around the session found first or ensured: members fields that go missing elsewhere, the member
    #              an ensure adds, a bulk delete sparing it
    OWNERS = 4  # owners settled after all that moves them: a handover's new owner owns none yet, a spread's counts
    SPELLINGS = 5  # addresses as people write them: in another case, and namesakes whose address holds another
    TWINS = 6  # copies of a session as a loop's write would leave it (the service refuses that write)
    VERSIONS = 7  # versions tied to another session's, set once every session has one


@dataclass(frozen=True)
class Shaper:
    """One change a population needs for a step: `shape(pop, rng, profile, *args)`, run at `priority`."""

    priority: Priority
    shape: Callable[..., None]
    args: tuple


@dataclass(frozen=True)
class Found:
    """What a lookup found (`found1`): in which collection, and by what rule (so where it stands in it)."""

    type: str  # the session type of the collection it reads
    url: str  # the variable that holds the collection's URL
    kind: str  # "title" (titled `title1`), "newest" (of an owner), "most" or "fewest" (members)
    email: str | None = None  # newest: the variable of the owner's address
    oldest: bool = False  # most or fewest: of several with as many, the one added first (else the one added last)


@dataclass(frozen=True)
class Ensured:
    """What an ensure made sure of: the session titled `title1` in this collection lists this address."""

    type: str
    email: str  # the variable of the address it adds


@dataclass(frozen=True)
class Looped:
    """What a loop does: over which collection, to which sessions (`kind` and `pe`), with which body."""

    type: str
    body: str  # a key of `steps.BODIES`
    same: bool  # it runs over the collection of the session found first
    kind: str  # its predicate: "owner" (the sessions `pe` owns) or "member" (those that list `pe`)
    pe: str  # the variable of the address its predicate names (`_chain`: the found session's owner)
    me: str | None  # the variable of the address its body writes (None where the body writes none)
    suffix: str | None  # retitle: what it appends to each title


class Draw:
    """The choices of one program: which collections, addresses and titles its steps use, and how a population
    must be shaped for them (`shapers`, run by `Priority`)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.types: list[str] = []  # collections of src1 the program reads, by type
        self.emails: list[str] = []  # setup e-mail variables
        self.hidden: list[str] = []  # addresses a population needs that no setup variable names
        self.title = False
        self.shapers: list[Shaper] = []
        self.urls: dict[str, str] = {}
        self.url_lines: list[str] = []

    def type(self, avoid: tuple[str, ...] = ()) -> str:
        t = self.rng.choice([t for t in words.CONTENT_TYPES if t not in avoid])
        if t not in self.types:
            self.types.append(t)
        return t

    def url(self, type_: str) -> str:
        """The variable holding the collection's URL, its line written once, before the first step."""
        if type_ not in self.urls:
            name = f"{type_}_url"
            self.urls[type_] = name
            self.url_lines.append(f'{name} = f"{{BASE_URL}}/api/sessions/{{src1}}/{type_}"\n')
        return self.urls[type_]

    def email(self, avoid: tuple[str, ...] = ()) -> str:
        for name in self.emails:
            if name not in avoid:
                if self.rng.random() < 0.5:
                    return name
        name = f"email{len(self.emails) + 1}"
        self.emails.append(name)
        return name

    def shape(self, priority: Priority, shape: Callable[..., None], *args) -> None:
        """Have every population shaped by `shape(pop, rng, profile, *args)`, at `priority`."""
        self.shapers.append(Shaper(priority, shape, args))
