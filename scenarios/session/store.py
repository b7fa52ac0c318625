"""The session service's storage: one SQLite database file per service instance (stdlib only).

The original service keeps one MongoDB collection per session type, with a unique index on
(source, type, checksum). Here one table holds every session with the same unique key; rows come back in
creation order (SQLite's rowid), which is the order MongoDB's natural order gives for these collections, and an
update keeps a session's row (and so its position).

Ids. The original mints MongoDB ObjectIds (time-based). A benchmark needs every correct program to see the same
ids, so here a new session's id is a salted hash of what makes it distinct: its source, type, data checksum and
how many sessions with that same content were created since the last reset. Listing first, adding a probe
session and deleting it again, or making two independent additions in the other order cannot change any id,
so RESULT and the stored state need no rewriting to compare equal. The salt lives in the database (set by
`reset`, random for a stand-alone service), so ids are not guessable from the documentation. Deleting a session
and adding the same data again gives a new id, as MongoDB would.

Versions (the service's frontier tier, `scenarios.session.frontier`). Every session carries a version: 1 when
added (or what a test case's stored session names), increased by 1 by every accepted update and every change of
its members, so a client can make a write conditional on not having missed one. The paper tier never shows it:
its answers and its `snapshot` are what they were before versions existed. Database files made before the
column existed get it when opened (every session at version 1).

The sandbox worker opens this same file to reset it before a test case and to read the snapshot after one; the
service opens it per instance. Both use WAL mode so the two connections never block each other for long.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
from typing import Any, Iterable

from scenarios.base import FRONTIER, PAPER, TIERS

SESSION_TYPES = (
    "main_session",
    "virtual_study",
    "group",
    "comparison_session",
    "settings",
    "custom_data",
    "genomic_chart",
    "custom_gene_list",
)
MIN_SOURCE_LENGTH = 3
# The frontier tier's page sizes: the service pages its listings by them (`frontier.py`), and the frontier programs'
# populations are sized around them (`tasks/populations.py`).
DEFAULT_PAGE = 5  # AppWorld's default page size
MAX_PAGE = 50
# The service's tiers (`app.create_app`), the build's: both store the same rows; the frontier's answers and snapshot
# show versions.
ID_LENGTH = 24  # hex digits, as a MongoDB ObjectId

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,  -- creation order, kept by updates
    id       TEXT NOT NULL UNIQUE,
    source   TEXT NOT NULL,
    type     TEXT NOT NULL,
    checksum TEXT NOT NULL,
    data     TEXT NOT NULL,                      -- the JSON object as received (key order kept)
    version  INTEGER NOT NULL DEFAULT 1,         -- 1 when added, +1 on every change (last: older files add it)
    UNIQUE (source, type, checksum)
);
CREATE TABLE IF NOT EXISTS minted (                -- ids handed out since the last reset
    source   TEXT NOT NULL,
    type     TEXT NOT NULL,
    checksum TEXT NOT NULL,
    n        INTEGER NOT NULL,
    PRIMARY KEY (source, type, checksum, n)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls (                 -- requests answered since the last reset, in order
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    call     TEXT NOT NULL                         -- JSON: method, route, params, query, body, status, answer
);
"""


class Conflict(Exception):
    """An update would give a session the same data as another one of its source and type."""


class Stale(Exception):
    """A conditional write named a version the session no longer has (someone else changed it first)."""


class NotAList(Exception):
    """A session's `data.members` holds something other than a list, so members cannot be added or removed."""


def canonical(data: Any) -> str:
    """JSON with sorted keys: JSON objects are unordered, so key order never changes a checksum."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def checksum(data: Any) -> str:
    """The data's MD5 in hex, as the original (which hashes MongoDB's rendering of the document)."""
    return hashlib.md5(canonical(data).encode()).hexdigest()


def connect(path: str) -> sqlite3.Connection:
    """Open (creating when needed) a session database; autocommit, explicit transactions for multi-step work."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")  # a test fixture, not a system of record: speed over durability
    conn.executescript(_SCHEMA)
    if "version" not in {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}:
        try:
            conn.execute("ALTER TABLE sessions ADD COLUMN version INTEGER NOT NULL DEFAULT 1")
        except sqlite3.OperationalError:  # the other connection to this file (service or worker) added it first
            pass
    if conn.execute("SELECT 1 FROM meta WHERE key='salt'").fetchone() is None:
        conn.execute("INSERT OR IGNORE INTO meta VALUES ('salt', ?)", (secrets.token_hex(16),))
    return conn


def _row(r: tuple, versions: bool = False) -> dict:
    """A stored session as the API shows it (the checksum stays internal, as in the original); with `versions`,
    as the frontier tier shows it, `version` last."""
    view = {"id": r[0], "data": json.loads(r[1]), "source": r[2], "type": r[3]}
    if versions:
        view["version"] = r[4]
    return view


def list_sessions(conn: sqlite3.Connection, source: str, type_: str) -> list[dict]:
    rows = conn.execute(
        "SELECT id, data, source, type FROM sessions WHERE source=? AND type=? ORDER BY seq", (source, type_)
    )
    return [_row(r) for r in rows]


def documents(conn: sqlite3.Connection, source: str, type_: str) -> list[tuple[dict, dict]]:
    """(stored document, API view) pairs for filtering: the document adds `_id` and `checksum`."""
    rows = conn.execute(
        "SELECT id, data, source, type, checksum FROM sessions WHERE source=? AND type=? ORDER BY seq",
        (source, type_),
    )
    out = []
    for r in rows:
        view = _row(r)
        out.append(({"_id": r[0], **view, "checksum": r[4]}, view))
    return out


def versioned_documents(conn: sqlite3.Connection, source: str, type_: str,
                        after: int = 0) -> list[tuple[int, dict, dict]]:
    """(creation sequence, stored document, API view with version) of the sessions created after sequence
    `after`, oldest first: what a page of a frontier listing is cut from. The document is `documents`' with the
    version, so a filter can test it too."""
    rows = conn.execute(
        "SELECT id, data, source, type, version, checksum, seq FROM sessions WHERE source=? AND type=? AND seq>? "
        "ORDER BY seq",
        (source, type_, after),
    )
    out = []
    for r in rows:
        view = _row(r, versions=True)
        out.append((r[6], {"_id": r[0], **view, "checksum": r[5]}, view))
    return out


def get_session(conn: sqlite3.Connection, source: str, type_: str, id_: str,
                versions: bool = False) -> dict | None:
    r = conn.execute(
        "SELECT id, data, source, type, version FROM sessions WHERE source=? AND type=? AND id=?",
        (source, type_, id_),
    ).fetchone()
    return _row(r, versions) if r else None


def salt(conn: sqlite3.Connection) -> str:
    """This database's secret (set by `reset`): what makes ids, and the frontier's cursors, unguessable."""
    return conn.execute("SELECT value FROM meta WHERE key='salt'").fetchone()[0]


def _mint(conn: sqlite3.Connection, source: str, type_: str, digest: str) -> str:
    salt_ = salt(conn)
    (n,) = conn.execute(
        "SELECT COUNT(*) FROM minted WHERE source=? AND type=? AND checksum=?", (source, type_, digest)
    ).fetchone()
    while True:
        id_ = hashlib.sha256(f"{salt_}\0{source}\0{type_}\0{digest}\0{n}".encode()).hexdigest()[:ID_LENGTH]
        conn.execute("INSERT INTO minted VALUES (?, ?, ?, ?)", (source, type_, digest, n))
        if conn.execute("SELECT 1 FROM sessions WHERE id=?", (id_,)).fetchone() is None:
            return id_
        n += 1  # a pre-loaded session holds this id (practically never): take the next one


def add_session(conn: sqlite3.Connection, source: str, type_: str, data: dict) -> tuple[str, bool]:
    """Store a session; (its id, True), or (the stored session's id, False) when the same source and type already
    hold identical data."""
    digest = checksum(data)
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = conn.execute(
            "SELECT id FROM sessions WHERE source=? AND type=? AND checksum=?", (source, type_, digest)
        ).fetchone()
        if found:
            conn.execute("COMMIT")
            return found[0], False
        id_ = _mint(conn, source, type_, digest)
        conn.execute(
            "INSERT INTO sessions (id, source, type, checksum, data) VALUES (?, ?, ?, ?, ?)",
            (id_, source, type_, digest, json.dumps(data, ensure_ascii=False)),
        )
        conn.execute("COMMIT")
        return id_, True
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _version(conn: sqlite3.Connection, source: str, type_: str, id_: str) -> int | None:
    r = conn.execute("SELECT version FROM sessions WHERE source=? AND type=? AND id=?", (source, type_, id_)).fetchone()
    return r[0] if r else None


def _write_data(conn: sqlite3.Connection, source: str, type_: str, id_: str, data: dict) -> None:
    """Replace a session's data and count a version, inside the caller's transaction; Conflict on a duplicate."""
    try:
        conn.execute("UPDATE sessions SET data=?, checksum=?, version=version+1 WHERE source=? AND type=? AND id=?",
                     (json.dumps(data, ensure_ascii=False), checksum(data), source, type_, id_))
    except sqlite3.IntegrityError as exc:
        raise Conflict(str(exc)) from exc


def update_session(conn: sqlite3.Connection, source: str, type_: str, id_: str, data: dict,
                   expected: int | None = None) -> int | None:
    """Replace a session's data and count the change: its new version, or None when no such session. With
    `expected`, only while the session is at that version (Stale otherwise): the check and the write are one
    statement, so no other write can land between them. Raises Conflict on a duplicate of another session."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = _version(conn, source, type_, id_)
        if current is not None and expected is not None and current != expected:
            raise Stale(f"the session is at version {current}, not {expected}")
        if current is not None:
            _write_data(conn, source, type_, id_, data)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return None if current is None else current + 1


def delete_session(conn: sqlite3.Connection, source: str, type_: str, id_: str, expected: int | None = None) -> bool:
    """Delete a session; False when no such session. With `expected`, only while it is at that version (Stale
    otherwise)."""
    if expected is None:
        cur = conn.execute("DELETE FROM sessions WHERE source=? AND type=? AND id=?", (source, type_, id_))
        return cur.rowcount == 1
    cur = conn.execute("DELETE FROM sessions WHERE source=? AND type=? AND id=? AND version=?",
                       (source, type_, id_, expected))
    if cur.rowcount == 1:
        return True
    if _version(conn, source, type_, id_) is None:
        return False
    raise Stale(f"the session is not at version {expected}")


def delete_sessions(conn: sqlite3.Connection, source: str, type_: str, ids: Iterable[str]) -> int:
    """Delete these sessions of this source and type in one transaction; how many there were."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        n = sum(conn.execute("DELETE FROM sessions WHERE source=? AND type=? AND id=?", (source, type_, id_)).rowcount
                for id_ in ids)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return n


def change_members(conn: sqlite3.Connection, source: str, type_: str, id_: str, email: str, add: bool,
                   expected: int | None = None) -> tuple[bool, int] | None:
    """Add `email` to the session's `data.members` (at the end; the list is made when missing or null) or remove
    every occurrence of it: (whether the data changed, the version after), or None when no such session. Addresses
    are compared ignoring case, as e-mail addresses are: adding `Ann@x.org` where `ann@x.org` is a member changes
    nothing, and removing it removes `ann@x.org`. A change counts as an update (version +1); adding a member already
    there or removing one that is not changes nothing. With `expected`, only while the session is at that version
    (Stale otherwise). Raises NotAList when `data.members` is neither a list nor null, Conflict when the change
    would duplicate another session's data."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        r = conn.execute("SELECT data, version FROM sessions WHERE source=? AND type=? AND id=?",
                         (source, type_, id_)).fetchone()
        if r is None:
            conn.execute("COMMIT")
            return None
        data, version = json.loads(r[0]), r[1]
        if expected is not None and version != expected:
            raise Stale(f"the session is at version {version}, not {expected}")
        members = data.get("members")
        members = [] if members is None else members
        if not isinstance(members, list):
            raise NotAList("data.members is not a list")
        same = [m for m in members if isinstance(m, str) and m.lower() == email.lower()]
        if add and not same:
            data["members"] = [*members, email]
        elif not add and same:
            data["members"] = [m for m in members if m not in same]
        else:
            conn.execute("COMMIT")
            return False, version
        _write_data(conn, source, type_, id_, data)
        conn.execute("COMMIT")
        return True, version + 1
    except BaseException:
        conn.execute("ROLLBACK")
        raise


# ------------------------------------------------------------------------------- used by the sandbox world


def parse_asset(raw: bytes) -> tuple[str, list[dict]]:
    """The tier and the stored sessions of a test case's "sessions" asset. A JSON list is the paper tier's (how every
    paper task stores them, kept so those bytes never change); a JSON object `{"tier": ..., "sessions": [...]}` names
    its tier, so that a test case alone says which service it runs against."""
    value = json.loads(raw)
    if isinstance(value, list):
        return PAPER, value
    if not isinstance(value, dict) or value.get("tier") not in TIERS or not isinstance(value.get("sessions"), list):
        raise ValueError(f"a sessions asset is a JSON list, or an object with a tier ({', '.join(TIERS)}) and a list "
                         f"of sessions")
    return value["tier"], value["sessions"]


def asset_data(sessions: list[dict], tier: str = PAPER) -> bytes:
    """A "sessions" asset as `parse_asset` reads it: the bare list on the paper tier, the object on another."""
    return canonical(sessions if tier == PAPER else {"tier": tier, "sessions": sessions}).encode()


def reset(conn: sqlite3.Connection, sessions: Iterable[dict], salt: str) -> None:
    """Replace everything with `sessions` ({id, source, type, data} each, and `version` where one is not 1) and
    start minting afresh with `salt`."""
    rows = [
        (s["id"], s["source"], s["type"], checksum(s["data"]), json.dumps(s["data"], ensure_ascii=False),
         int(s.get("version", 1)))
        for s in sessions
    ]
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("DELETE FROM sessions")
        conn.execute("DELETE FROM minted")
        conn.execute("DELETE FROM calls")
        conn.execute("DELETE FROM sqlite_sequence WHERE name='sessions'")
        conn.executemany(
            "INSERT INTO sessions (id, source, type, checksum, data, version) VALUES (?, ?, ?, ?, ?, ?)", rows)
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('salt', ?)", (salt,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


# What `dump` keeps: everything a later request or `snapshot` reads (the call log is the trace's, and a batch that
# restores a dump records no trace). sqlite_sequence holds the next creation order (`seq`) of a session.
_DUMPED = ("sessions", "minted", "meta", "sqlite_sequence")


def dump(conn: sqlite3.Connection) -> dict:
    """Every row the service reads, as `load` puts them back: the database between two requests, exactly."""
    conn.execute("BEGIN")
    try:
        return {table: conn.execute(f"SELECT * FROM {table}").fetchall() for table in _DUMPED}
    finally:
        conn.execute("COMMIT")


def load(conn: sqlite3.Connection, dumped: dict) -> None:
    """Replace the rows `dump` keeps with those it returned, and empty the call log."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for table in (*_DUMPED, "calls"):
            conn.execute(f"DELETE FROM {table}")
        for table, rows in dumped.items():
            if rows:
                conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})", rows)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def log_call(conn: sqlite3.Connection, call: dict) -> None:
    """Keep one answered request (the service's call log, read back with `calls`)."""
    conn.execute("INSERT INTO calls (call) VALUES (?)", (json.dumps(call, ensure_ascii=False),))


def calls(conn: sqlite3.Connection) -> list[dict]:
    """The requests answered since the last reset, oldest first."""
    return [json.loads(r[0]) for r in conn.execute("SELECT call FROM calls ORDER BY seq")]


def snapshot(conn: sqlite3.Connection, versions: bool = False) -> dict:
    """Every stored session, keyed by id: {id: {"source", "type", "data"}} (plain data, order-free); with
    `versions` (the frontier tier, where a version is part of what a program changes), each with its "version"."""
    rows = conn.execute("SELECT id, source, type, data, version FROM sessions ORDER BY seq")
    if versions:
        return {r[0]: {"source": r[1], "type": r[2], "data": json.loads(r[3]), "version": r[4]} for r in rows}
    return {r[0]: {"source": r[1], "type": r[2], "data": json.loads(r[3])} for r in rows}


def remove(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass
