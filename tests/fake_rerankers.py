"""Fake rerank servers on 127.0.0.1: a Cohere-style and a TEI-style `/rerank`, and an
OpenAI-compatible `/chat/completions` that answers `{"scores": [...]}`. Each scores a passage
by how many distinct query words it holds, plus 10 when it holds the word ``prefer``.
``hang`` makes every request wait (bounded by ``HANG_S``) until ``release`` is set; ``seen``
records every request."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HANG_S = 10.0


def overlap(query: str, passage: str, prefer: str | None = None) -> float:
    words = set(re.findall(r"\w+", query.lower()))
    held = set(re.findall(r"\w+", passage.lower()))
    return float(len(words & held)) + (10.0 if prefer and prefer in held else 0.0)


@dataclass
class FakeRerankServer:
    url: str = ""
    hang: bool = False
    status: int = 200
    prefer: str | None = None  # a word that lifts a passage above every other
    raw: str | None = None  # answer exactly this body instead
    seen: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def answer(self, path: str, body: Any) -> Any:
        if path.endswith("/chat/completions"):
            user = body["messages"][-1]["content"]
            query = user.split("\n", 1)[0].removeprefix("Query: ")
            passages = re.split(r"\n\n\[\d+\] ", "\n\n" + user.split("Passages:\n", 1)[1])[1:]
            scores = [overlap(query, p, self.prefer) for p in passages]
            content = f"Here you go: {json.dumps({'scores': scores})}"
            return {"choices": [{"message": {"role": "assistant", "content": content}}]}
        if "texts" in body:  # TEI
            return [
                {"index": i, "score": overlap(body["query"], t, self.prefer)}
                for i, t in enumerate(body["texts"])
            ][::-1]
        results = [
            {"index": i, "relevance_score": overlap(body["query"], d, self.prefer)}
            for i, d in enumerate(body["documents"])
        ]
        return {"results": sorted(results, key=lambda r: -r["relevance_score"])}


@contextmanager
def serve() -> Iterator[FakeRerankServer]:
    fake = FakeRerankServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"null")
            fake.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            if fake.hang:
                fake.release.wait(HANG_S)
            data = (fake.raw or json.dumps(fake.answer(self.path, body))).encode()
            try:
                self.send_response(fake.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client gave up (budget test)
                pass

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    fake.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.release.set()
        httpd.shutdown()
        httpd.server_close()
