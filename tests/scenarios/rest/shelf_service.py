"""A small REST service for the readiness tests, on the standard library only: shelves holding books.

    python shelf_service.py PORT SPEC_FILE

POST /reset empties it. POST /shelves makes a shelf ({"id", "name", "created"}: `created` is made up), GET /shelves
lists them a page at a time (?limit=N: {"items": [...], "next": "/shelves?limit=N&after=ID"} while more remain),
GET /shelves/{id} reads one (404 when there is none), PUT /shelves/{id} makes one of that id, DELETE /shelves/{id} deletes it and every book on it. The same
for /shelves/{id}/books. GET /openapi.json answers SPEC_FILE.
"""

from __future__ import annotations

import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

STATE = {"next": 1, "shelves": {}, "books": {}}  # books: shelf id -> {book id: book}


class Handler(BaseHTTPRequestHandler):
    def answer(self, status: int, body=None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def made(self, body) -> dict:
        item = {"id": str(STATE["next"]), "name": str((body or {}).get("name", "")), "created": STATE["next"] * 7}
        STATE["next"] += 1
        return item

    def page(self, items: list, query: dict, path: str) -> None:
        limit = int(query.get("limit", ["100"])[0])
        after = query.get("after", [None])[0]
        start = next((i + 1 for i, x in enumerate(items) if x["id"] == after), 0)
        shown = items[start:start + limit]
        more = start + limit < len(items)
        self.answer(200, {"items": shown, **({"next": f"{path}?limit={limit}&after={shown[-1]['id']}"} if more else {})})

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if url.path == "/openapi.json":
            self.send_response(200)
            data = open(sys.argv[2], "rb").read()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif url.path == "/shelves":
            self.page(list(STATE["shelves"].values()), query, url.path)
        elif m := re.fullmatch(r"/shelves/([^/]+)", url.path):
            shelf = STATE["shelves"].get(m[1])
            self.answer(200 if shelf else 404, shelf or {"error": f"no shelf {m[1]}"})
        elif m := re.fullmatch(r"/shelves/([^/]+)/books", url.path):
            if m[1] not in STATE["shelves"]:
                return self.answer(404, {"error": f"no shelf {m[1]}"})
            self.page(list(STATE["books"][m[1]].values()), query, url.path)
        elif m := re.fullmatch(r"/shelves/([^/]+)/books/([^/]+)", url.path):
            book = STATE["books"].get(m[1], {}).get(m[2])
            self.answer(200 if book else 404, book or {"error": f"no book {m[2]}"})
        else:
            self.answer(404, {"error": "no such path"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"null")
        except ValueError:
            return self.answer(400, {"error": "not JSON"})
        if body is not None and not isinstance(body, dict):
            return self.answer(400, {"error": "the body must be an object"})
        if self.path == "/reset":
            STATE.update({"next": 1, "shelves": {}, "books": {}})
            return self.answer(204)
        if self.path == "/shelves":
            shelf = self.made(body)
            STATE["shelves"][shelf["id"]] = shelf
            STATE["books"][shelf["id"]] = {}
            return self.answer(201, shelf)
        if (m := re.fullmatch(r"/shelves/([^/]+)/books", self.path)) and m[1] in STATE["shelves"]:
            book = self.made(body)
            STATE["books"][m[1]][book["id"]] = book
            return self.answer(201, book)
        self.answer(404, {"error": "no such path"})

    def do_PUT(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        if not isinstance(body, dict):
            return self.answer(400, {"error": "the body must be an object"})
        if m := re.fullmatch(r"/shelves/([^/]+)", self.path):
            STATE["shelves"][m[1]] = {"id": m[1], "name": str(body.get("name", "")), "created": 0}
            STATE["books"].setdefault(m[1], {})
            return self.answer(201, STATE["shelves"][m[1]])
        if (m := re.fullmatch(r"/shelves/([^/]+)/books/([^/]+)", self.path)) and m[1] in STATE["shelves"]:
            STATE["books"][m[1]][m[2]] = {"id": m[2], "name": str(body.get("name", "")), "created": 0}
            return self.answer(201, STATE["books"][m[1]][m[2]])
        self.answer(404, {"error": "no such path"})

    def do_DELETE(self) -> None:
        if (m := re.fullmatch(r"/shelves/([^/]+)", self.path)) and m[1] in STATE["shelves"]:
            del STATE["shelves"][m[1]]
            del STATE["books"][m[1]]
            return self.answer(204)
        if (m := re.fullmatch(r"/shelves/([^/]+)/books/([^/]+)", self.path)) and m[2] in STATE["books"].get(m[1], {}):
            del STATE["books"][m[1]][m[2]]
            return self.answer(204)
        self.answer(404, {"error": "no such item"})

    def log_message(self, *a) -> None:
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
