"""The Statewave SDK's receipt calls against a live mnemo."""
import os

import pytest
from helpers import say, subject
from statewave import StatewaveClient
from statewave.client import NO_RETRY
from statewave.exceptions import StatewaveAPIError, StatewaveUnreplayableError

URL = os.environ["MNEMO_URL"]


def test_receipt_lifecycle():
    sid = subject()
    with StatewaveClient(URL, tenant_id="compat-receipts") as c:
        say(c, sid, "I work at Globex and I live in Lisbon.")
        c.compile_memories(sid)
        ids = []
        for i in range(3):
            b = c.get_context(sid, f"Where does the user work? ({i})", emit_receipt=True, caller_id="bot",
                              caller_type="agent", query_id=f"q{i}")
            assert b.receipt_emitted is True and len(b.receipt_id) == 26
            ids.append(b.receipt_id)
        r = c.get_receipt(ids[0])
        assert r.receipt_id == ids[0] and r.mode == "retrieval" and r.subject_id == sid
        assert r.output["context_hash"] and r.selected_entries and r.policy_snapshot is not None
        page = c.list_receipts(sid, limit=2)
        assert [x.receipt_id for x in page.receipts] == [ids[2], ids[1]]
        rest = c.list_receipts(sid, limit=2, cursor=page.next_cursor)
        assert [x.receipt_id for x in rest.receipts] == [ids[0]] and rest.next_cursor is None
        v = c.verify_receipt(ids[0])
        assert v.valid is None and v.reason == "no_signature"
        replay = c.replay_receipt(ids[0])
        assert replay.original_receipt_id == ids[0] and replay.replay_receipt_id
        assert replay.diff.context_hash["changed"] is False
        assert replay.diff.selected_entries["added"] == []
        with pytest.raises(StatewaveUnreplayableError) as info:
            c.replay_receipt(replay.replay_receipt_id)
        assert info.value.reason == "nested_replay"
    with StatewaveClient(URL, tenant_id="someone-else", retry=NO_RETRY) as other:
        with pytest.raises(StatewaveAPIError) as info:
            other.get_receipt(ids[0])
        assert info.value.status_code == 404
