"""The bank world: runs inside sandbox workers only. Its state (every balance) lives in the child's namespace, so
what a program leaves behind is read from there (`recorded`)."""

from __future__ import annotations

import inspect
import json

from scenarios.base import World

APIS = ("deposit", "withdraw", "transfer")  # what a program's calls are recorded as, for the diagnosis


class Account:
    def __init__(self, name: str):
        self.name = name


class Bank:
    def __init__(self, balances: dict[str, int]):
        self.balances = dict(balances)

    def account(self, name: str) -> Account:
        if name not in self.balances:
            raise KeyError(f"no account named {name!r}")
        return Account(name)

    def deposit(self, account: Account, amount: int) -> int:
        self.balances[account.name] += amount
        return self.balances[account.name]

    def withdraw(self, account: Account, amount: int) -> int:
        if self.balances[account.name] < amount:
            raise ValueError(f"{account.name} holds less than {amount}")
        self.balances[account.name] -= amount
        return self.balances[account.name]

    def transfer(self, source: Account, target: Account, amount: int) -> int:
        self.withdraw(source, amount)
        self.deposit(target, amount)
        return self.balances[source.name]


class BankWorld(World):
    def namespace(self, case: dict) -> dict:
        bank = Bank({a["name"]: json.loads(a["data"])["balance"] for a in case["assets"]})
        return {"bank": bank, "load_account": bank.account}

    def canonical_leaf(self, obj):
        if isinstance(obj, Account):
            return {"__account__": obj.name}
        return super().canonical_leaf(obj)

    def record_calls(self, namespace: dict, recorder) -> None:
        """Each API call of the program reaches `recorder` (`scenarios.trace.Recorder`), with its arguments by
        name, so that a failing sample is compared call by call with the reference."""
        bank = namespace["bank"]
        for name in APIS:
            method = getattr(bank, name)

            def traced(*args, _name=name, _method=method, **kwargs):
                arguments = lambda: dict(inspect.signature(_method).bind(*args, **kwargs).arguments)  # noqa: E731
                return recorder.run(_name, arguments, lambda: _method(*args, **kwargs))

            setattr(bank, name, traced)

    def recorded(self, namespace: dict):
        return dict(namespace["bank"].balances)  # the side effects: every balance after the program
