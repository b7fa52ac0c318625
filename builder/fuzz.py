"""Trace generation (Algorithm 1 of the StateGen paper): coverage-guided sampling over pair transitions.

A *pair transition* is (the API that produced one of a call's inputs, the call's API); inputs declared in the
setup block count as produced by `init`. One `CoverageRecorder` is shared by all programs of a build, so later
programs are pushed towards pairs earlier programs never exercised:

* a candidate call that would create a never-seen pair gets top priority (uniform among such candidates);
* otherwise a candidate is drawn with probability proportional to 1 / (frequency of its rarest pair + EPS).

`recency` > 0 adds a preference for consuming results no call has used yet, the newest most (`pull`): each
binding's weight is multiplied by its pull, so data flows deeper (more bindings, longer chains) while fresh pairs
still come first. `recency=0` is Algorithm 1 as the paper states it.

A scenario may weigh calls further (`Scenario.preference`, 1 by default): a service's scenario prefers calls on
what the program made, so that data flows from one call to the next as in a client's code.

`guided=False` is the paper's ablation: an API drawn uniformly among the callable ones, then a binding
uniformly among its valid bindings (no recency preference).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from scenarios.base import API, INIT, Call, Scenario, State

EPS = 0.01
DECAY = 0.5  # the recency preference's discount per result made after the one consumed


class NoValidCall(RuntimeError):
    """No API is callable in the current state (the scenario's state machine ran dry)."""


@dataclass
class CoverageRecorder:
    counts: Counter = field(default_factory=Counter)

    def record(self, pairs) -> None:
        self.counts.update(pairs)

    def api_pairs(self, api_names) -> set[tuple[str, str]]:
        """Distinct API -> API pairs seen (setup-block inputs excluded), the paper's RQ1 numerator."""
        names = set(api_names)
        return {p for p, c in self.counts.items() if c and p[0] in names and p[1] in names}

    def coverage(self, api_names) -> float:
        n = len(set(api_names))
        return len(self.api_pairs(api_names)) / (n * n)


def pairs_for(state: State, api: API, binding: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """The (producer, consumer) pairs a call exercises; a call with no inputs (an operation of a service's root,
    such as a listing) pairs with the setup block."""
    return tuple(sorted({(state.vars[v].producer, api.name) for v in binding})) or ((INIT, api.name),)


def unused_results(state: State) -> dict[str, int]:
    """Results of calls that no call has consumed yet, with their age: how many results were made after each."""
    made = [v for v in state.vars.values() if v.producer != INIT]
    return {v.name: len(made) - 1 - i for i, v in enumerate(made) if not v.consumers}


def pull(unused: dict[str, int], binding: tuple[str, ...], recency: float) -> float:
    """How strongly the recency preference draws the sampler to a binding: 1, plus `recency` for each input that is
    a result no call has consumed yet (`unused_results`), discounted by DECAY for every result made after it.
    Consuming an unused result adds a binding (one call's output carried into another's input); consuming the
    newest one deepens the chain."""
    return 1.0 + recency * sum(DECAY ** unused[v] for v in set(binding) if v in unused)


def step(scenario: Scenario, state: State, recorder: CoverageRecorder, rng: random.Random, guided: bool,
         recency: float = 0.0, left: int = 0) -> Call:
    """Choose and apply one call, `left` more to come on its path; updates `state` and `recorder`."""
    options = [(api, api.bindings(state)) for api in scenario.apis]
    options = [(api, bs) for api, bs in options if bs]
    if not options:
        raise NoValidCall(f"no {scenario.name} API is callable with variables {list(state.vars)}")

    if guided:
        # Bindings that exercise the same pairs are equivalent for the energy: group them, so an API with many
        # bindings (cat has one per ordered pair of tensors) is not favoured for that alone.
        groups: dict[tuple, list[tuple[str, ...]]] = {}
        for api, bs in options:
            for b in bs:
                groups.setdefault((api.name, pairs_for(state, api, b)), []).append(b)
        keys = list(groups)
        fresh = [k for k in keys if any(recorder.counts[p] == 0 for p in k[1])]
        if recency > 0:
            # The same choice with each group's weight shared among its bindings and each binding's share scaled by
            # its pull: never-seen pairs still come first, and the energy still decides between groups.
            pool, unused = fresh or keys, unused_results(state)
            cands = [(k, b) for k in pool for b in groups[k]]
            by_name = {a.name: a for a, _ in options}
            weights = [(1.0 if fresh else energy(recorder, k)) / len(groups[k]) * pull(unused, b, recency)
                       * scenario.preference(state, by_name[k[0]], b, left) for k, b in cands]
            key, binding = rng.choices(cands, weights=weights)[0]
        else:
            if fresh:
                key = rng.choice(fresh)
            else:
                key = rng.choices(keys, weights=[energy(recorder, k) for k in keys])[0]
            binding = rng.choice(groups[key])
        api = next(a for a, _ in options if a.name == key[0])
    else:
        api, bs = rng.choice(options)
        binding = rng.choice(bs)

    pairs = pairs_for(state, api, binding)
    call = api.apply(state, binding, rng)
    recorder.record(pairs)
    return call


def energy(recorder: CoverageRecorder, key: tuple) -> float:
    """A group's weight once every pair has been seen: 1 / (frequency of its rarest pair + EPS)."""
    return 1.0 / (min(recorder.counts[p] for p in key[1]) + EPS)
