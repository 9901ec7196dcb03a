"""The official Statewave SDK (statewave==1.5.0) against a live mnemo: episodes, timeline, subjects, errors.

Run by tests/compat_sdk.rs, which starts the servers and sets:
  MNEMO_URL        an open server
  MNEMO_URL_KEYED  a server that requires MNEMO_KEY
"""
import os
import uuid

import pytest
from statewave import StatewaveClient, AsyncStatewaveClient
from statewave.client import NO_RETRY
from statewave.exceptions import StatewaveAPIError

URL = os.environ["MNEMO_URL"]
URL_KEYED = os.environ["MNEMO_URL_KEYED"]
KEY = os.environ["MNEMO_KEY"]


def subject():
    return f"user:{uuid.uuid4().hex[:8]}"


def test_create_episode_and_idempotent_replay():
    sid = subject()
    with StatewaveClient(URL, tenant_id="compat") as c:
        ep = c.create_episode(sid, "chat", "message", {"messages": [{"role": "user", "content": "I live in Quito."}]},
                              metadata={"k": 1}, session_id="s1", idempotency_key="idem-1")
        assert isinstance(ep.id, uuid.UUID)
        assert ep.subject_id == sid and ep.type == "message" and ep.metadata == {"k": 1}
        assert ep.occurred_at is not None and ep.created_at is not None
        again = c.create_episode(sid, "chat", "message", {"text": "different"}, idempotency_key="idem-1")
        assert again.id == ep.id
        assert again.payload == ep.payload


def test_batch_timeline_and_subjects():
    sid = subject()
    with StatewaveClient(URL, tenant_id="compat-batch") as c:
        eps = [{"subject_id": sid, "source": "chat", "type": "message", "payload": {"text": f"m{i}"}} for i in range(5)]
        res = c.create_episodes_batch(eps)
        assert res.episodes_created == 5
        assert len(res.episodes) == 5
        tl = c.get_timeline(sid, limit=2)
        assert len(tl.episodes) == 2
        assert tl.episodes_has_more is True
        assert tl.memories == []
        tl = c.get_timeline(sid, limit=2, newest_first=True)
        assert [e.payload["text"] for e in tl.episodes] == ["m3", "m4"]
        subs = c.list_subjects()
        assert subs.total == 1
        assert subs.subjects[0].subject_id == sid
        assert subs.subjects[0].episode_count == 5


def test_validation_error_is_parsed():
    with StatewaveClient(URL, retry=NO_RETRY) as c:
        with pytest.raises(StatewaveAPIError) as info:
            c.create_episode("", "chat", "message", {"text": "x"})
        err = info.value
        assert err.status_code == 422
        assert err.code == "validation_error"
        assert "subject_id" in err.message
        assert err.request_id


def test_missing_and_wrong_api_key():
    with StatewaveClient(URL_KEYED, retry=NO_RETRY) as c:
        with pytest.raises(StatewaveAPIError) as info:
            c.list_subjects()
        assert info.value.status_code == 401
        assert info.value.code == "missing_api_key"
    with StatewaveClient(URL_KEYED, api_key="wrong", retry=NO_RETRY) as c:
        with pytest.raises(StatewaveAPIError) as info:
            c.list_subjects()
        assert info.value.status_code == 403
    with StatewaveClient(URL_KEYED, api_key=KEY) as c:
        assert c.list_subjects().total == 0


def test_async_client_basics():
    import asyncio

    async def run():
        sid = subject()
        async with AsyncStatewaveClient(URL, tenant_id="compat-async") as c:
            ep = await c.create_episode(sid, "chat", "message", {"text": "hello"})
            tl = await c.get_timeline(sid)
            assert [e.id for e in tl.episodes] == [ep.id]
            subs = await c.list_subjects()
            assert subs.total == 1

    asyncio.run(run())
