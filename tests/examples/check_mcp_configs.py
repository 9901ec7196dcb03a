"""Connects the official MCP client (PyPI `mcp`) through the configuration files in
examples/mcp/, as a desktop or coding agent would read them, to a test server, and remembers and
recalls a fact. Run by tests/api/examples.rs.

Only what necessarily differs from a user's machine is changed: the test server's address
replaces http://127.0.0.1:8100, and the bridge's `mnemo` command is the binary under test
(MNEMO_BIN) rather than one on the PATH. Everything else is used as the file says."""
import asyncio
import json
import os
import pathlib
import uuid

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "mcp"
DEFAULT = "http://127.0.0.1:8100"
URL = os.environ["MNEMO_URL"]
BIN = os.environ["MNEMO_BIN"]


def server(name):
    """The `mnemo` entry of a configuration file."""
    config = json.loads((EXAMPLES / name).read_text())
    entry = config["mcpServers"]["mnemo"]
    return json.loads(json.dumps(entry).replace(DEFAULT, URL))


def http_client():
    entry = server("mcp.json")
    assert entry["type"] == "http", entry
    transport = streamable_http_client(entry["url"], http_client=create_mcp_http_client(headers=entry.get("headers")))
    return Client(transport)


def bridge_client():
    entry = server("claude_desktop_config.json")
    assert entry["command"] == "mnemo", entry
    params = StdioServerParameters(command=BIN, args=entry["args"], env=entry.get("env"))
    return Client(params)


async def remember_and_recall(client):
    subject = f"user:{uuid.uuid4().hex[:8]}"
    async with client as c:
        names = [t.name for t in (await c.list_tools()).tools]
        assert {"remember", "recall", "search_memories", "timeline"} <= set(names), names
        r = await c.call_tool("remember", {"subject_id": subject, "text": "I work at Initech.", "compile": True})
        assert not r.is_error, r
        r = await c.call_tool("recall", {"subject_id": subject, "task": "Where does the user work?"})
        assert not r.is_error, r
        text = "".join(getattr(part, "text", "") for part in r.content)
        assert "Initech" in text, text


async def main():
    await remember_and_recall(http_client())
    print("examples/mcp/mcp.json: remember and recall over streamable HTTP")
    await remember_and_recall(bridge_client())
    print("examples/mcp/claude_desktop_config.json: remember and recall through the stdio bridge")


asyncio.run(main())
