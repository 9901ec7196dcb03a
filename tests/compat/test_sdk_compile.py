"""The Statewave SDK's compile, search and label calls against a live mnemo."""
import asyncio
import os

from helpers import say, subject
import pytest
from statewave import AsyncStatewaveClient, StatewaveClient
from statewave.client import NO_RETRY
from statewave.exceptions import StatewaveAPIError

URL = os.environ["MNEMO_URL"]



def test_compile_memories_supersedes_employer():
    sid = subject()
    with StatewaveClient(URL, tenant_id="compat-compile") as c:
        say(c, sid, "Hi! I work at Globex and my name is Dana Reyes.")
        res = c.compile_memories(sid)
        assert res.subject_id == sid
        assert res.memories_created == len(res.memories) >= 3
        kinds = {m.kind for m in res.memories}
        assert kinds == {"episode_summary", "profile_fact"}
        say(c, sid, "Quick update: I work at Initech now, I started last week.")
        c.compile_memories(sid)
        tl = c.get_timeline(sid)
        current = [m.content for m in tl.memories if m.kind == "profile_fact" and m.status == "active"]
        old = [m.content for m in tl.memories if m.status == "superseded"]
        assert any("Initech" in x for x in current)
        assert not any("Globex" in x for x in current)
        assert any("Globex" in x for x in old)
        assert c.compile_memories(sid).memories_created == 0


def test_compile_async_and_wait():
    sid = subject()
    with StatewaveClient(URL, tenant_id="compat-compile") as c:
        say(c, sid, "I live in Lisbon, near the river.")
        job = c.compile_memories_wait(sid, poll_interval=0.1, timeout=30)
        assert job.status == "completed", job
        assert job.memories_created == 2
        again = c.compile_memories_async(sid)
        assert again.status == "pending" and again.job_id
        polled = c.get_compile_status(again.job_id)
        assert polled.subject_id == sid
        with pytest.raises(StatewaveAPIError) as info:
            StatewaveClient(URL, tenant_id="someone-else", retry=NO_RETRY).get_compile_status(again.job_id)
        assert info.value.status_code == 404


def test_search_and_labels():
    sid = subject()
    with StatewaveClient(URL, tenant_id="compat-search") as c:
        say(c, sid, "I use Postgres for the main app.")
        c.compile_memories(sid)
        found = c.search_memories(sid, query="Postgres")
        assert found.memories and all("Postgres" in m.content for m in found.memories)
        facts = c.search_memories(sid, kind="profile_fact")
        assert [m.kind for m in facts.memories] == ["profile_fact"]
        semantic = c.search_memories(sid, query="database", semantic=True)
        assert isinstance(semantic.memories, list)
        m = c.set_memory_labels(str(facts.memories[0].id), [" PII.Email ", "pii.email", "Finance"])
        assert m.sensitivity_labels == ["finance", "pii.email"]
        assert c.set_memory_labels(str(m.id), []).sensitivity_labels == []


def test_async_client_compile():
    async def run():
        sid = subject()
        async with AsyncStatewaveClient(URL, tenant_id="compat-async-compile") as c:
            await c.create_episode(sid, "chat", "message", {"text": "I use Redis for caching."})
            res = await c.compile_memories(sid)
            assert res.memories_created == 2
            job = await c.compile_memories_wait(sid, poll_interval=0.1, timeout=30)
            assert job.status == "completed"
            found = await c.search_memories(sid, query="Redis")
            assert found.memories

    asyncio.run(run())
