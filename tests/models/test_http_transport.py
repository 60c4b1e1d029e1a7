"""The HTTP client's per-request deadline and size cap, against raw sockets on 127.0.0.1 that
misbehave: a server that trickles one byte a second (its headers or its body), one that answers
too much (with and without a Content-Length)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from lmleak.errors import ModelError

CARD = b'{"object": "list", "data": [{"id": "m", "max_model_len": 32, "lmleak": {"bos_id": 1, "vocab_size": 50}}]}'


class RawServer:
    """Answers every connection with ``respond(conn)`` in a thread of its own (loopback only)."""

    def __init__(self, respond):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.respond = respond
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn):
        with conn:
            conn.settimeout(30)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                ),
                0,
            )
            while len(rest) < length:
                rest += conn.recv(65536)
            path = head.split(b" ")[1].decode()
            try:
                self.respond(conn, path)
            except OSError:
                pass  # the client gave up: what the deadline is for

    def close(self):
        self.stop.set()
        self.sock.close()


def _ok(body: bytes) -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    )


def _client(port, **opts):
    from lmleak.models.http import HTTPClient, HTTPOptions

    return HTTPClient(f"http://127.0.0.1:{port}/v1", HTTPOptions(**{"retries": 0, **opts}))


@pytest.mark.parametrize("where", ["body", "headers"])
def test_a_server_trickling_one_byte_a_second_is_cut_at_the_deadline(where):
    """timeout=2 bounds the whole request: a server sending one byte a second (which never trips a
    per-read timeout of 2 s) is cut after about 2 s, whether it trickles the body or the headers."""

    def trickle(conn, path):
        answer = _ok(CARD)
        head, _, body = answer.partition(b"\r\n\r\n")
        if where == "body":
            conn.sendall(head + b"\r\n\r\n")
            data = body
        else:
            data = answer
        for i in range(len(data)):
            conn.sendall(data[i : i + 1])
            time.sleep(1.0)

    server = RawServer(trickle)
    try:
        client = _client(server.port, timeout=2.0)
        t0 = time.monotonic()
        with pytest.raises(ModelError, match=r"no complete answer within timeout=2 s"):
            client.get("/models", cache=False)
        elapsed = time.monotonic() - t0
        assert 1.9 < elapsed < 3.5, elapsed  # the trickle would take > 100 s
    finally:
        server.close()


def test_a_slow_but_steady_answer_within_the_deadline_is_read_whole():
    """The deadline is total, not a cap on waiting: a server that thinks for 0.5 s and then answers
    is read normally under timeout=3."""

    def slow(conn, path):
        time.sleep(0.5)
        conn.sendall(_ok(CARD))

    server = RawServer(slow)
    try:
        answer = _client(server.port, timeout=3.0).get("/models", cache=False)
        assert answer["data"][0]["id"] == "m"
    finally:
        server.close()


@pytest.mark.parametrize("declared", [True, False])
def test_an_answer_above_the_size_cap_is_refused_without_reading_it_whole(declared):
    """max_response_mb=1: a 3 MiB answer is refused (declared by Content-Length, or streamed without
    one), with one line naming the URL and the option; it is not retried."""
    big = b'{"data": "' + b"x" * (3 << 20) + b'"}'
    sent = []

    def huge(conn, path):
        sent.append(path)
        if declared:
            conn.sendall(_ok(big))
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
            conn.sendall(big)

    server = RawServer(huge)
    try:
        client = _client(server.port, max_response_mb=1.0, retries=3)
        with pytest.raises(
            ModelError, match=r"/v1/models: the server's answer is larger than 1,048,576 bytes"
        ):
            client.get("/models", cache=False)
        assert client.counters.requests == 1  # not retried: a broken server, not a busy one
    finally:
        server.close()


def test_read_capped_stops_at_the_cap():
    import httpx

    from lmleak.models.http_transport import read_capped

    assert read_capped(httpx.Response(200, content=b"abc"), 3, "u") == b"abc"
    with pytest.raises(ModelError, match="larger than 2 bytes"):
        read_capped(httpx.Response(200, content=b"abc"), 2, "u")


def test_the_deadline_is_per_thread_and_restored():
    from lmleak.models.http_transport import deadline, time_left

    assert time_left() is None
    with deadline(5.0):
        left = time_left()
        assert left is not None and 4.0 < left <= 5.0
        seen = []
        t = threading.Thread(target=lambda: seen.append(time_left()))
        t.start()
        t.join()
        assert seen == [None]  # another thread's requests have their own deadlines
    assert time_left() is None
