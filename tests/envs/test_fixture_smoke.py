"""The shared fixture serves a healthy chain_sum server."""

import httpx


def test_chain_sum_server_fixture_is_healthy(chain_sum_server):
    assert chain_sum_server.startswith("http://127.0.0.1:")
    assert httpx.get(f"{chain_sum_server}/health", timeout=10).json() == {"status": "healthy"}
    assert httpx.get(f"{chain_sum_server}/list_environments", timeout=10).json() == ["chain_sum"]
