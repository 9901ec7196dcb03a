"""Support sessions through the SDK: resolutions, health, SLA and handoff, sync and async."""
import asyncio
import os
import uuid
from datetime import datetime

import pytest
from statewave import AsyncStatewaveClient, StatewaveClient
from statewave.client import NO_RETRY
from statewave.exceptions import StatewaveAPIError, StatewaveUnreplayableError
from statewave.models import Handoff, Health, Resolution, SLASummary

from helpers import say, subject

URL = os.environ["MNEMO_URL"]


def story(c, sid):
    say(c, sid, "My name is Ola and I live in Tromsø.", session="intro")
    c.create_resolution(sid, "intro", status="resolved", resolution_summary="Welcomed")
    say(c, sid, "The mobile app crashes when I open my invoices, this is urgent", session="now")
    c.create_episode(sid, "agent", "message", {"text": "Asked the customer to update the app"}, session_id="now")
    c.compile_memories(sid)


def test_resolutions_health_sla_handoff_sync():
    sid = subject()
    with StatewaveClient(URL, tenant_id="compat-sessions", retry=NO_RETRY) as c:
        story(c, sid)
        r = c.create_resolution(sid, "now", metadata={"priority": "high"})
        assert isinstance(r, Resolution) and isinstance(r.id, uuid.UUID)
        assert r.status == "open" and r.resolved_at is None and r.metadata == {"priority": "high"}
        rows = c.list_resolutions(sid)
        assert [x.session_id for x in rows] == ["now", "intro"]
        assert [x.session_id for x in c.list_resolutions(sid, status="resolved", limit=5, offset=0)] == ["intro"]

        h = c.get_health(sid)
        assert isinstance(h, Health) and h.subject_id == sid
        assert 0 <= h.score <= 100 and h.state in ("healthy", "watch", "at_risk")
        assert any(f.signal == "urgency" for f in h.factors)

        sla = c.get_sla(sid, first_response_threshold_minutes=0.5, resolution_threshold_hours=24)
        assert isinstance(sla, SLASummary) and sla.total_sessions == 2 and sla.open_sessions == 1
        now = next(s for s in sla.sessions if s.session_id == "now")
        assert now.status == "open" and now.first_message_at is not None

        brief = c.create_handoff(sid, "now", emit_receipt=True, caller_id="human-1", caller_type="human")
        assert isinstance(brief, Handoff) and isinstance(brief.generated_at, datetime)
        assert brief.reason == "escalation" and "crashes" in brief.active_issue
        assert brief.attempted_steps == ["Asked the customer to update the app"]
        assert brief.handoff_notes.startswith("# Handoff Brief")
        assert brief.receipt_emitted and brief.receipt_id
        receipt = c.get_receipt(brief.receipt_id)
        assert receipt.task == "handoff:escalation:now"
        with pytest.raises(StatewaveUnreplayableError) as info:
            c.replay_receipt(brief.receipt_id)
        assert info.value.reason == "invalid_snapshot"

        with pytest.raises(StatewaveAPIError) as info:
            c.create_resolution(sid, "now", status="closed")
        assert info.value.status_code == 422


def test_resolutions_health_sla_handoff_async():
    async def run():
        sid = subject()
        async with AsyncStatewaveClient(URL, tenant_id="compat-sessions-async", retry=NO_RETRY) as c:
            with StatewaveClient(URL, tenant_id="compat-sessions-async") as sync:
                story(sync, sid)
            r = await c.create_resolution(sid, "now", status="resolved", resolution_summary="Updated the app")
            assert r.resolved_at is not None
            assert len(await c.list_resolutions(sid)) == 2
            h = await c.get_health(sid)
            assert h.state in ("healthy", "watch", "at_risk")
            sla = await c.get_sla(sid)
            assert sla.resolved_sessions == 2
            brief = await c.create_handoff(sid, "now", reason="vip", max_tokens=200)
            assert brief.reason == "vip" and brief.token_estimate <= 200 and not brief.receipt_emitted
            assert brief.resolution_history[0].session_id in ("now", "intro")
    asyncio.run(run())
