"""The test suite itself runs with the network blocked (see tests/conftest.py)."""

from __future__ import annotations

import socket

import pytest


def test_outbound_connections_are_refused_during_tests():
    with pytest.raises(RuntimeError, match="attempted during tests"):
        socket.create_connection(("192.0.2.55", 443), timeout=1)  # TEST-NET-1, never routed


def test_dns_lookups_of_remote_hosts_are_refused():
    with pytest.raises(RuntimeError, match="DNS lookup attempted"):
        socket.getaddrinfo("huggingface.co", 443)


def test_loopback_stays_usable():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    c = socket.create_connection(srv.getsockname(), timeout=1)
    c.close()
    srv.close()
