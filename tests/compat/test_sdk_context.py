"""The Statewave SDK's context and delete calls against a live mnemo."""
import asyncio
import os

from helpers import say, subject
from statewave import AsyncStatewaveClient, StatewaveClient

URL = os.environ["MNEMO_URL"]



def test_get_context_and_string():
    sid = subject()
    with StatewaveClient(URL, tenant_id="compat-context") as c:
        say(c, sid, "Hi! I work at Globex and my name is Dana Reyes.")
        c.compile_memories(sid)
        say(c, sid, "Quick update: I work at Initech now.", session="s2")
        c.compile_memories(sid)
        bundle = c.get_context(sid, "Where does the user work?", max_tokens=300, session_id="s2",
                               query_id="q1", task_id="t1", caller_id="bot", caller_type="agent")
        assert bundle.subject_id == sid and bundle.task == "Where does the user work?"
        assert any("Initech" in m.content for m in bundle.facts)
        assert not any("Globex" in m.content for m in bundle.facts)
        assert 0 < bundle.token_estimate <= 300
        assert bundle.assembled_context.startswith("## Task\nWhere does the user work?\n")
        assert set(bundle.provenance) >= {"fact_ids", "summary_ids", "procedure_ids", "episode_ids"}
        assert bundle.receipt_id is None and bundle.receipt_emitted is False
        text = c.get_context_string(sid, "Where does the user work?", max_tokens=300)
        assert "Initech" in text and "Globex" not in text


def test_delete_subject():
    sid = subject()
    with StatewaveClient(URL, tenant_id="compat-delete") as c:
        say(c, sid, "My name is Ola Nordmann and I live in Bergen.")
        c.compile_memories(sid)
        res = c.delete_subject(sid)
        assert res.subject_id == sid and res.episodes_deleted == 1 and res.memories_deleted >= 2
        again = c.delete_subject(sid)
        assert again.episodes_deleted == 0 and again.memories_deleted == 0
        assert "Bergen" not in c.get_context_string(sid, "Who is the user?")
        assert c.get_timeline(sid).episodes == []


def test_async_context():
    async def run():
        sid = subject()
        async with AsyncStatewaveClient(URL, tenant_id="compat-async-context") as c:
            await c.create_episode(sid, "chat", "message", {"text": "I live in Oslo."})
            await c.compile_memories(sid)
            b = await c.get_context(sid, "Where does the user live?")
            assert any("Oslo" in m.content for m in b.facts)
            assert "Oslo" in await c.get_context_string(sid, "Where does the user live?")
            d = await c.delete_subject(sid)
            assert d.episodes_deleted == 1

    asyncio.run(run())
