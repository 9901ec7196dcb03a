"""Suggested labels through the SDK: list_suggested_labels and promote_suggested_labels, sync and async."""
import asyncio
import os

import pytest
from statewave import AsyncStatewaveClient, StatewaveClient
from statewave.client import NO_RETRY
from statewave.exceptions import StatewaveAPIError

from helpers import say, subject

URL = os.environ["MNEMO_URL"]


def seed(c, sid):
    say(c, sid, "Write to me at ola@example.org please.")
    say(c, sid, "My phone number is +47 912 34 567.")
    c.compile_memories(sid)


def test_list_and_promote_sync():
    sid = subject()
    with StatewaveClient(URL, tenant_id="compat-labels", retry=NO_RETRY) as c:
        seed(c, sid)
        page = c.list_suggested_labels(subject_id=sid)
        assert page.total >= 2 and page.limit == 50 and page.offset == 0
        assert {e["label"] for e in page.catalogue} >= {"pii.email", "pii.phone"}
        emails = c.list_suggested_labels(subject_id=sid, label="pii.email", limit=10)
        assert emails.total >= 1
        m = emails.memories[0]
        assert m.subject_id == sid and "pii.email" in m.suggested_labels and isinstance(m.summary, str)
        res = c.promote_suggested_labels(m.id, ["pii.email"])
        assert res.memory_id == m.id and res.promoted == ["pii.email"]
        assert "pii.email" in res.sensitivity_labels and "pii.email" not in res.suggested_labels
        with pytest.raises(StatewaveAPIError) as info:
            c.promote_suggested_labels(m.id, ["pii.email"])
        assert info.value.status_code == 422 and info.value.code == "promote_labels.not_suggested"
        with pytest.raises(StatewaveAPIError) as info:
            c.promote_suggested_labels(m.id, [])
        assert info.value.code == "promote_labels.empty"
        # tenant_id as a query parameter names the tenant explicitly.
        with StatewaveClient(URL, tenant_id="someone-else", retry=NO_RETRY) as admin:
            # The promoted memory may still carry other suggestions, so it can stay in the queue.
            assert admin.list_suggested_labels(tenant_id="compat-labels", subject_id=sid).total in (page.total - 1, page.total)
            assert admin.list_suggested_labels(subject_id=sid).total == 0


def test_list_and_promote_async():
    async def run():
        sid = subject()
        async with AsyncStatewaveClient(URL, tenant_id="compat-labels-async", retry=NO_RETRY) as c:
            with StatewaveClient(URL, tenant_id="compat-labels-async") as sync:
                seed(sync, sid)
            page = await c.list_suggested_labels(subject_id=sid, label="pii.phone")
            assert page.total >= 1
            m = page.memories[0]
            res = await c.promote_suggested_labels(m.id, ["pii.phone"], tenant_id="compat-labels-async")
            assert res.sensitivity_labels == sorted(set(m.sensitivity_labels) | {"pii.phone"})
            with pytest.raises(StatewaveAPIError) as info:
                await c.promote_suggested_labels("00000000-0000-0000-0000-000000000000", ["pii.phone"])
            assert info.value.status_code == 404
    asyncio.run(run())
