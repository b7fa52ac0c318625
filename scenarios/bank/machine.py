"""The `bank` scenario's state machine: accounts with balances, deposits and transfers (docs/adding-a-scenario.md).

The solver's abstract value of an account is its balance, so that every emitted transfer is covered; a redrawn
test input adds to every stored balance, which keeps every transfer of the program covered while changing each
result.
"""

from __future__ import annotations

import json
import random

from scenarios.base import PAPER, API, Asset, Call, Scenario, State, Var, join_names, setup_block

ACCOUNT, BALANCE = "account", "balance"


def _balance(state: State, name: str) -> int:
    return state.vars[name].value


class Deposit(API):
    name = "deposit"
    phrases = ("deposit {amount} into {in0_} and name the new balance {out0_}",)
    natural = ("deposit {amount} into {in0_}",)
    vague = ("put {amount} more into {in0_}",)
    noun = "balance after the {nth}deposit"

    def values(self, call):
        return {"amount": (str(call.args["amount"]),)}

    def bindings(self, state):
        return [(v.name,) for v in state.of_type(ACCOUNT)]

    def apply(self, state, inputs, rng):
        (account,) = inputs
        amount = rng.randint(1, 50)
        state.vars[account].value += amount
        state.consume(inputs, self.name)
        out = state.produce("b", BALANCE, state.vars[account].value, self.name)
        return Call(self.name, [account], [out], f"{out} = bank.deposit({account}, {amount})", {"amount": amount})


class Transfer(API):
    name = "transfer"
    phrases = ("transfer {amount} from {in0_} to {in1_} and name the sender's new balance {out0_}",)
    natural = ("transfer {amount} from {in0_} to {in1_}",)
    vague = ("move {amount} out of {in0_} and into {in1_}",)
    noun = "sender's balance after the {nth}transfer"

    def values(self, call):
        return {"amount": (str(call.args["amount"]),)}

    def bindings(self, state):
        accounts = [v.name for v in state.of_type(ACCOUNT)]
        return [(a, b) for a in accounts for b in accounts if a != b and _balance(state, a) >= 2]

    def apply(self, state, inputs, rng):
        src, dst = inputs
        amount = rng.randint(1, _balance(state, src) // 2)  # half at most: a redrawn input keeps it covered
        state.vars[src].value -= amount
        state.vars[dst].value += amount
        state.consume(inputs, self.name)
        out = state.produce("b", BALANCE, state.vars[src].value, self.name)
        return Call(self.name, [src, dst], [out], f"{out} = bank.transfer({src}, {dst}, {amount})",
                    {"amount": amount})


class BankScenario(Scenario):
    name = "bank"
    example = True  # the worked example: built only when asked for (--scenarios bank)
    apis = (Deposit(), Transfer())
    world = "scenarios.bank.world:BankWorld"
    value_phrases = {BALANCE: "a balance"}
    confusions = {"bank.deposit": ("bank.withdraw",)}

    def initial_state(self, rng):
        state = State()
        for _ in range(rng.randint(2, 3)):
            name = state.fresh("acct")
            balance = rng.randint(20, 200)
            state.declare(Var(name, ACCOUNT, balance), _asset(name, balance))
        return state

    def condition(self, state, var, rng):
        return None  # no branches: every program is straight-line

    def redraw(self, state, rng):
        twin = state.branch_copy()
        for name, asset in state.assets.items():
            twin.assets[name] = _asset(name, asset.meta["balance"] + rng.randint(1, 100))
        return twin

    def setup_code(self, state, constants):
        lines = [f'{name} = load_account("{name}")' for name in state.inits]
        return setup_block(lines, constants)

    def describe_init(self, state):
        return f"The setup block opens the accounts {join_names(state.inits)}."

    def api_doc(self, tier=PAPER):
        return API_DOC


def _asset(name: str, balance: int) -> Asset:
    return Asset(name, "account", {"balance": balance}, json.dumps({"balance": balance}).encode())


API_DOC = """\
# The bank

`bank` is already defined. Balances are whole numbers.

- `load_account(name)`: the account named `name` (the setup block opens the task's accounts with it).
- `bank.deposit(account, amount) -> int`: adds `amount` to the account; returns its new balance.
- `bank.withdraw(account, amount) -> int`: takes `amount` from the account; returns its new balance.
- `bank.transfer(source, target, amount) -> int`: moves `amount` from `source` to `target`; returns the source's
  new balance. Raises `ValueError` when the source holds less than `amount`.
"""
