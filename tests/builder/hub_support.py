"""A fake Hugging Face Hub on loopback, so the publish tests drive the real `huggingface_hub` client over HTTP.

The live Hub is out of reach on test machines, and a stand-in Python object would test our guess of the client's
behaviour rather than the client. So `FakeHub` answers the handful of Hub API routes that a publish touches (create
repo, refs, tree, validate-yaml, preupload, commit, tag, repo info), keeps each repo's commits, branches and tags
in memory, and records every request it receives. It can be scripted to fail the way the Hub does: an HTTP status
for the next N requests of a route, a connection dropped before the request is applied, or one dropped after it
was applied (the response is lost). Every file is answered "regular" at preupload, so uploads travel base64 in the
commit body and no LFS storage is needed; preupload also reports the git oid of a file already on the branch, so
the client skips unchanged files exactly as it does against the Hub. It binds 127.0.0.1 on a free port and never
touches any other network.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable
from urllib.parse import parse_qs, unquote, urlsplit

from tests.evaluate.scripted_server import send_json

LOOPBACK = "127.0.0.1"
STOP_TIMEOUT_S = 5.0  # joining the server thread on stop; it exits as soon as shutdown() is seen
POLL_INTERVAL_S = 0.02  # how often serve_forever looks for shutdown(): stopping takes up to this long
SOCKET_TIMEOUT_S = 10.0  # a handler never waits longer than this for a client that stopped sending
INITIAL_FILES = {".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"}  # what a new Hub repo holds

# The routes a publish uses: /api/{type}s/{org}/{name}/{operation}/{revision}[/{path}]
REPO_ROUTE = re.compile(r"/api/(?P<type>models|datasets|spaces)/(?P<repo>[^/]+/[^/]+)"
                        r"(?:/(?P<op>refs|tree|preupload|commit|tag|revision)(?:/(?P<rev>[^/]+))?(?P<rest>/.*)?)?")


def git_blob_oid(data: bytes) -> str:
    """The git object id of a file, which the Hub reports at preupload so a client can skip unchanged files."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Request:
    """One request as the fake Hub received it."""

    method: str
    route: str  # create, refs, tree, validate-yaml, preupload, commit, tag, info, or unknown
    path: str
    query: dict
    headers: dict  # lower-case names
    body: bytes

    def json(self):
        return json.loads(self.body or b"{}")

    def ndjson(self) -> list[dict]:
        return [json.loads(line) for line in self.body.splitlines() if line.strip()]


@dataclass
class Commit:
    oid: str
    parent: str | None
    files: dict[str, bytes]  # the whole tree after this commit
    summary: str
    description: str


@dataclass
class Repo:
    repo_type: str
    private: bool
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    tag_messages: dict[str, str] = field(default_factory=dict)


@dataclass
class Failure:
    """A scripted failure for the next `times` requests of `route` ("*" = any route; times None = forever)."""

    route: str
    status: int | None = None  # answer with this HTTP status
    mode: str = "status"  # "status", "drop" (close before applying) or "lost" (apply, then close unanswered)
    times: int | None = 1


class FakeHub:
    """In-memory Hub behind a real HTTP server on loopback. Use as a context manager; `url` is its endpoint."""

    def __init__(self):
        self.repos: dict[str, Repo] = {}
        self.requests: list[Request] = []
        self.failures: list[Failure] = []
        self.hooks: dict[str, list[Callable[[], None]]] = {}
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> "FakeHub":
        hub = self

        class Handler(BaseHTTPRequestHandler):
            timeout = SOCKET_TIMEOUT_S

            def do_GET(self):  # noqa: N802 - http.server's naming
                hub._handle(self)

            def do_POST(self):  # noqa: N802
                hub._handle(self)

            def log_message(self, *args):  # keep test output clean
                pass

        self._server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(POLL_INTERVAL_S,),
                                        name="fake-hub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(STOP_TIMEOUT_S)
            self._server = None

    def __enter__(self) -> "FakeHub":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # ------------------------------------------------------------------ scripting and inspection

    def fail(self, route: str, status: int | None = None, *, times: int | None = 1, mode: str = "status") -> None:
        """Answer the next `times` requests of `route` with `status`, or drop/lose them (see `Failure`)."""
        assert mode in ("status", "drop", "lost") and (status is not None) == (mode == "status")
        with self._lock:
            self.failures.append(Failure(route, status, mode, times))

    def before(self, route: str, fn: Callable[[], None]) -> None:
        """Run `fn` once, just before the next request of `route` is applied (another client acting meanwhile)."""
        with self._lock:
            self.hooks.setdefault(route, []).append(fn)

    def of(self, route: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.route == route]

    def add_repo(self, repo_id: str, files: dict[str, bytes] | None = None, repo_type: str = "dataset",
                 private: bool = False) -> str:
        """A repo as the Hub creates it (an initial commit with .gitattributes), plus `files` in a second commit.

        Returns the head of main."""
        with self._lock:
            repo = self.repos[repo_id] = Repo(repo_type, private)
            head = self._new_commit(repo, None, dict(INITIAL_FILES), "initial commit", "")
            if files:
                head = self._new_commit(repo, head, {**INITIAL_FILES, **files}, "an earlier upload", "")
            return head

    def push_commit(self, repo_id: str, files: dict[str, bytes], branch: str = "main") -> str:
        """Another client's commit on `branch` (adds or replaces `files`); returns its oid."""
        with self._lock:
            repo = self.repos[repo_id]
            head = repo.branches[branch]
            return self._new_commit(repo, head, {**repo.commits[head].files, **files}, "someone else's", "", branch)

    def add_tag(self, repo_id: str, tag: str, oid: str | None = None) -> None:
        with self._lock:
            repo = self.repos[repo_id]
            repo.tags[tag] = oid or repo.branches["main"]

    def files_at(self, repo_id: str, revision: str) -> dict[str, bytes]:
        """The tree at a branch, tag or commit."""
        with self._lock:
            repo = self.repos[repo_id]
            return dict(repo.commits[self._resolve(repo, revision)].files)

    # ------------------------------------------------------------------ HTTP

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(h.path)
        path = unquote(parts.path)
        length = int(h.headers.get("content-length") or 0)
        body = h.rfile.read(length) if length else b""
        route, match = self._route(h.command, path)
        request = Request(h.command, route, path, parse_qs(parts.query),
                          {k.lower(): v for k, v in h.headers.items()}, body)
        with self._lock:
            self.requests.append(request)
            failure = self._take_failure(route)
            hooks = self.hooks.pop(route, [])
        if failure is not None and failure.mode == "drop":
            h.close_connection = True  # nothing applied, nothing answered: the client sees a dropped connection
            return
        if failure is not None and failure.mode == "status":
            send_json(h, failure.status, {"error": f"scripted HTTP {failure.status}"},
                       {"X-Error-Message": f"scripted HTTP {failure.status}"})
            return
        for fn in hooks:
            fn()
        with self._lock:
            status, payload, headers = self._apply(route, match, request)
        if failure is not None and failure.mode == "lost":
            h.close_connection = True  # applied, but the answer never reaches the client
            return
        send_json(h, status, payload, headers)

    @staticmethod
    def _route(method: str, path: str) -> tuple[str, re.Match | None]:
        if method == "POST" and path == "/api/repos/create":
            return "create", None
        if method == "POST" and path == "/api/validate-yaml":
            return "validate-yaml", None
        m = REPO_ROUTE.fullmatch(path)
        if m is None:
            return "unknown", None
        op = m["op"]
        if op in (None, "revision") and method == "GET":
            return "info", m
        if (method, op) in {("GET", "refs"), ("GET", "tree"), ("POST", "preupload"), ("POST", "commit"),
                            ("POST", "tag")}:
            return op, m
        return "unknown", m

    def _take_failure(self, route: str) -> Failure | None:
        for failure in self.failures:
            if failure.route in (route, "*") and (failure.times is None or failure.times > 0):
                if failure.times is not None:
                    failure.times -= 1
                return failure
        return None

    # ------------------------------------------------------------------ the Hub's behaviour

    def _apply(self, route: str, m: re.Match | None, req: Request) -> tuple[int, object, dict]:
        if route == "create":
            return self._create(req)
        if route == "validate-yaml":
            return 200, {"errors": [], "warnings": []}, {}
        if route == "unknown":
            return 404, {"error": f"the fake Hub does not serve {req.method} {req.path}"}, {}
        repo = self.repos.get(m["repo"])
        if repo is None or repo.repo_type + "s" != m["type"]:
            return 404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"}
        if route == "refs":
            def refs(kind: str, items: dict[str, str]) -> list[dict]:
                return [{"name": n, "ref": f"refs/{kind}/{n}", "targetCommit": oid} for n, oid in items.items()]
            return 200, {"branches": refs("heads", repo.branches), "converts": [], "tags": refs("tags", repo.tags)}, {}
        try:
            oid = self._resolve(repo, m["rev"] or "main")
        except KeyError:
            return 404, {"error": "Invalid rev id"}, {"X-Error-Code": "RevisionNotFound"}
        if route == "info":
            return 200, {"id": m["repo"], "sha": oid, "private": repo.private}, {}
        if route == "tree":
            return 200, self._tree(repo.commits[oid].files), {}
        if route == "preupload":
            tree = repo.commits[oid].files
            files = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                      "oid": git_blob_oid(tree[f["path"]]) if f["path"] in tree else None}
                     for f in req.json()["files"]]
            return 200, {"files": files, "commitOid": oid}, {}
        if route == "commit":
            return self._commit(repo, m, req, oid)
        return self._tag(repo, req, oid)

    def _create(self, req: Request) -> tuple[int, object, dict]:
        payload = req.json()
        repo_id = f"{payload['organization']}/{payload['name']}" if payload.get("organization") else payload["name"]
        repo_type = payload.get("type") or "model"
        url = f"{self.url}/{repo_type}s/{repo_id}" if repo_type != "model" else f"{self.url}/{repo_id}"
        if repo_id in self.repos:
            return 409, {"error": "You already created this repo", "url": url}, {}
        self.add_repo(repo_id, repo_type=repo_type, private=payload.get("visibility") == "private")
        return 200, {"url": url, "name": repo_id}, {}

    def _commit(self, repo: Repo, m: re.Match, req: Request, head: str) -> tuple[int, object, dict]:
        branch = m["rev"]
        if branch not in repo.branches:
            return 400, {"error": "commits go to a branch in this fake"}, {}
        lines = req.ndjson()
        header = lines[0]["value"] if lines and lines[0]["key"] == "header" else None
        if header is None:
            return 400, {"error": "the commit has no header line"}, {}
        parent = header.get("parentCommit")
        if parent is not None and parent != head:
            return 412, {"error": "A commit has happened since. Please refresh and try again."}, {}
        files = dict(repo.commits[head].files)
        for line in lines[1:]:
            key, value = line["key"], line["value"]
            if key == "file" and value.get("encoding") == "base64":
                files[value["path"]] = base64.b64decode(value["content"])
            elif key == "deletedFile":
                if value["path"] not in files:
                    return 404, {"error": "A file with this name doesn't exist"}, {"X-Error-Code": "EntryNotFound"}
                del files[value["path"]]
            elif key == "deletedFolder":
                prefix = value["path"].rstrip("/") + "/"
                files = {p: b for p, b in files.items() if not p.startswith(prefix)}
            else:
                return 400, {"error": f"the fake Hub takes regular files only, not {key}"}, {}
        oid = self._new_commit(repo, head, files, header["summary"], header.get("description", ""), branch)
        url = f"{self.url}/{repo.repo_type}s/{m['repo']}/commit/{oid}"
        return 200, {"success": True, "commitOid": oid, "commitUrl": url, "hookOutput": ""}, {}

    def _tag(self, repo: Repo, req: Request, oid: str) -> tuple[int, object, dict]:
        payload = req.json()
        if payload["tag"] in repo.tags:
            return 409, {"error": f"Tag {payload['tag']} already exists"}, {}
        repo.tags[payload["tag"]] = oid
        repo.tag_messages[payload["tag"]] = payload.get("message", "")
        return 200, {}, {}

    @staticmethod
    def _tree(files: dict[str, bytes]) -> list[dict]:
        """A recursive listing as the Hub gives it: folders and files, each with a git-style oid."""
        folders = sorted({"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)})
        out = [{"type": "directory", "path": d, "oid": hashlib.sha1(d.encode()).hexdigest()} for d in folders]
        out += [{"type": "file", "path": p, "size": len(b), "oid": git_blob_oid(b)}
                for p, b in sorted(files.items())]
        return out

    @staticmethod
    def _resolve(repo: Repo, revision: str) -> str:
        if revision in repo.branches:
            return repo.branches[revision]
        if revision in repo.tags:
            return repo.tags[revision]
        if revision in repo.commits:
            return revision
        raise KeyError(revision)

    def _new_commit(self, repo: Repo, parent: str | None, files: dict[str, bytes], summary: str,
                    description: str, branch: str = "main") -> str:
        self._counter += 1
        oid = hashlib.sha1(f"{self._counter}:{parent}:{summary}".encode()).hexdigest()
        repo.commits[oid] = Commit(oid, parent, files, summary, description)
        repo.branches[branch] = oid
        return oid
