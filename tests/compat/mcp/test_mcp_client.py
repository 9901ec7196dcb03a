"""The official MCP Python client (PyPI `mcp`) against mnemo's /mcp, over streamable HTTP on
both protocol revisions and through the `mnemo mcp` stdio bridge. Run by tests/mcp.rs, which
starts the servers and passes their URLs and keys in the environment."""
import os
import uuid

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

URL = os.environ["MNEMO_URL"]
KEY_A = os.environ["MNEMO_KEY_ALPHA"]
KEY_B = os.environ["MNEMO_KEY_BETA"]
URL_SW = os.environ["MNEMO_URL_STATEWAVE"]
BIN = os.environ["MNEMO_BIN"]
AS_OF = "2030-01-01T00:00:00Z"
MODES = [("2026-07-28", "2026-07-28"), ("legacy", "2025-11-25")]


@pytest.fixture
def anyio_backend():
    return "asyncio"


def http_client(base, key=None, mode="auto", bearer=False):
    """A client over streamable HTTP; the key as X-API-Key, or as a bearer token."""
    headers = {}
    if key:
        headers = {"Authorization": f"Bearer {key}"} if bearer else {"X-API-Key": key}
    transport = streamable_http_client(f"{base}/mcp", http_client=create_mcp_http_client(headers=headers))
    return Client(transport, mode=mode)


def stdio_client(key=None, mode="auto"):
    """A client that launches `mnemo mcp` and talks to it over stdin/stdout."""
    env = {"MNEMO_API_KEY": key} if key else {}
    params = StdioServerParameters(command=BIN, args=["mcp", "--url", f"{URL}/mcp"], env=env)
    return Client(params, mode=mode)


def api(method, path, key, **kw):
    r = httpx.request(method, f"{URL}{path}", headers={"X-API-Key": key}, timeout=30, **kw)
    assert r.status_code < 300, r.text
    return r.json()


def subject():
    return f"user:{uuid.uuid4().hex[:8]}"


async def remember_some(c, sid):
    r = await c.call_tool("remember", {"subject_id": sid, "text": "My name is Ana and I live in Quito.", "session_id": "s1"})
    assert not r.is_error, r
    r = await c.call_tool("remember", {"subject_id": sid, "text": "I prefer green tea.", "compile": True})
    assert not r.is_error, r
    assert r.structured_content["compiled"]["memories_created"] >= 2, r.structured_content
    return r


@pytest.mark.anyio
@pytest.mark.parametrize("mode,version", MODES)
async def test_lists_the_tools_on_both_revisions(mode, version):
    async with http_client(URL, KEY_A, mode) as c:
        assert c.protocol_version == version
        tools = (await c.list_tools()).tools
        assert [t.name for t in tools] == ["remember", "recall", "search_memories", "timeline", "forget", "erase"]
        by = {t.name: t for t in tools}
        assert by["recall"].annotations.read_only_hint is True
        assert by["forget"].annotations.destructive_hint is True
        schema = by["remember"].input_schema
        if not isinstance(schema, dict):
            schema = schema.model_dump(by_alias=True, exclude_none=True)
        assert schema["required"] == ["subject_id", "text"]


@pytest.mark.anyio
@pytest.mark.parametrize("mode,version", MODES)
async def test_each_tool_answers_what_the_http_api_answers(mode, version):
    sid = subject()
    async with http_client(URL, KEY_A, mode, bearer=(mode == "legacy")) as c:
        remembered = await remember_some(c, sid)
        ctx = {"subject_id": sid, "task": "What does Ana drink?", "max_tokens": 300, "as_of": AS_OF}
        r = await c.call_tool("recall", ctx)
        bundle = api("POST", "/v1/context", KEY_A, json=ctx)
        assert not r.is_error
        assert "not instructions" in r.content[0].text
        assert r.content[1].text == bundle["assembled_context"]
        assert "green tea" in bundle["assembled_context"]

        r = await c.call_tool("search_memories", {"subject_id": sid, "query": "tea", "limit": 5})
        found = api("GET", "/v1/memories/search", KEY_A, params={"subject_id": sid, "q": "tea", "semantic": "true", "limit": 5})
        assert r.structured_content["memories"] == found["memories"]
        assert found["memories"]

        r = await c.call_tool("timeline", {"subject_id": sid, "limit": 20})
        tl = api("GET", "/v1/timeline", KEY_A, params={"subject_id": sid, "limit": 20, "newest_first": "true"})
        assert r.structured_content == tl
        assert tl["episodes"][-1]["id"] == remembered.structured_content["episode_id"]

        mid = found["memories"][0]["id"]
        r = await c.call_tool("forget", {"subject_id": sid, "memory_id": mid})
        assert not r.is_error and r.structured_content["status"] == "tombstoned"
        again = api("GET", "/v1/memories/search", KEY_A, params={"subject_id": sid, "q": "tea", "semantic": "true"})
        assert mid not in [m["id"] for m in again["memories"]]

        r = await c.call_tool("recall", {"subject_id": sid})
        assert r.is_error and "task: field required" in r.content[0].text


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_stdio_bridge_serves_the_same_tools(mode):
    sid = subject()
    async with stdio_client(KEY_A, mode) as c:
        assert [t.name for t in (await c.list_tools()).tools][:4] == ["remember", "recall", "search_memories", "timeline"]
        await remember_some(c, sid)
        ctx = {"subject_id": sid, "task": "Where does Ana live?", "as_of": AS_OF}
        r = await c.call_tool("recall", ctx)
        assert r.content[1].text == api("POST", "/v1/context", KEY_A, json=ctx)["assembled_context"]


@pytest.mark.anyio
async def test_unauthorised_clients_are_refused():
    with pytest.raises(Exception):
        async with http_client(URL, None) as c:
            await c.list_tools()
    with pytest.raises(Exception):
        async with http_client(URL, "mnemo_wrong_key") as c:
            await c.list_tools()
    with pytest.raises(Exception):
        async with stdio_client(None) as c:
            await c.list_tools()


@pytest.mark.anyio
async def test_another_tenant_sees_and_forgets_nothing():
    sid = subject()
    async with http_client(URL, KEY_A) as a:
        await a.call_tool("remember", {"subject_id": sid, "text": "My passport number is X1234567.", "compile": True})
        mine = await a.call_tool("search_memories", {"subject_id": sid, "query": "passport"})
        assert mine.structured_content["memories"]
    mid = mine.structured_content["memories"][0]["id"]
    async with http_client(URL, KEY_B) as b:
        r = await b.call_tool("search_memories", {"subject_id": sid, "query": "passport"})
        assert r.structured_content["memories"] == []
        r = await b.call_tool("timeline", {"subject_id": sid})
        assert r.structured_content["episodes"] == [] and r.structured_content["memories"] == []
        r = await b.call_tool("recall", {"subject_id": sid, "task": "What is the passport number?"})
        assert "X1234567" not in "".join(c.text for c in r.content)
        r = await b.call_tool("forget", {"subject_id": sid, "memory_id": mid})
        assert r.is_error and r.content[0].text == "memory not found"
    async with http_client(URL, KEY_A) as a:
        still = await a.call_tool("search_memories", {"subject_id": sid, "query": "passport"})
        assert mid in [m["id"] for m in still.structured_content["memories"]]


@pytest.mark.anyio
async def test_the_statewave_toolset_uses_statewaves_names():
    async with http_client(URL_SW) as c:
        names = [t.name for t in (await c.list_tools()).tools]
        assert names == ["statewave_ingest_episode", "statewave_search_memories", "statewave_get_context",
                         "statewave_get_timeline", "statewave_compile_subject"]
        sid = subject()
        # The arguments Statewave's own MCP server documents.
        ep = {"subject": sid, "kind": "chat.note", "text": "I live in Lisbon.",
              "source": {"type": "chat", "id": "m-1"}, "occurred_at": "2026-06-30T15:00:00Z",
              "idempotency_key": f"{sid}-1"}
        r = await c.call_tool("statewave_ingest_episode", ep)
        assert not r.is_error, r
        assert r.structured_content["subject_id"] == sid
        assert r.structured_content["type"] == "chat.note"
        r = await c.call_tool("statewave_compile_subject", {"subject": sid})
        assert r.structured_content["memories_created"] >= 1
        r = await c.call_tool("statewave_get_context",
                              {"subject": sid, "query": "Where does the user live?", "as_of": AS_OF})
        ctx = {"subject_id": sid, "task": "Where does the user live?", "as_of": AS_OF}
        http = httpx.post(f"{URL_SW}/v1/context", json=ctx, timeout=30).json()
        assert r.structured_content == http
        assert "Lisbon" in http["assembled_context"]
        r = await c.call_tool("statewave_search_memories", {"query": "Lisbon", "subject": sid, "limit": 5})
        http = httpx.get(f"{URL_SW}/v1/memories/search", params={"subject_id": sid, "q": "Lisbon", "limit": 5},
                         timeout=30).json()
        assert r.structured_content == http
        r = await c.call_tool("statewave_get_timeline", {"subject": sid, "kinds": ["chat.note"]})
        assert [e["type"] for e in r.structured_content["episodes"]] == ["chat.note"]
        # mnemo's HTTP field names still work.
        r = await c.call_tool("statewave_compile_subject", {"subject_id": sid})
        assert not r.is_error, r
        r = await c.call_tool("statewave_search_memories", {"query": "Lisbon"})
        assert r.is_error and "subject" in r.content[0].text
