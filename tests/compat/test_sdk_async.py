"""The async client over the methods the other files exercise with the sync client, plus rate
limiting: a 429 with Retry-After is retried by the SDK and surfaces as rate_limited without retry."""
import asyncio
import os
import time
import uuid

import pytest
from statewave import AsyncStatewaveClient, StatewaveClient
from statewave.client import NO_RETRY
from statewave.exceptions import StatewaveAPIError, StatewaveUnreplayableError
from statewave.models import BatchCreateResult, CompileJob, Memory, Receipt, ReceiptList, ReceiptReplayResult

from helpers import subject

URL = os.environ["MNEMO_URL"]
URL_LIMITED = os.environ["MNEMO_URL_LIMITED"]


def test_async_batch_compile_labels_and_receipts():
    async def run():
        sid = subject()
        async with AsyncStatewaveClient(URL, tenant_id="compat-async-surface", retry=NO_RETRY) as c:
            batch = await c.create_episodes_batch([
                {"subject_id": sid, "source": "chat", "type": "message", "session_id": "s1",
                 "payload": {"messages": [{"role": "user", "content": "I work at Initech."}]}},
                {"subject_id": sid, "source": "chat", "type": "message", "session_id": "s1",
                 "payload": {"messages": [{"role": "user", "content": "I use Postgres every day."}]}},
            ])
            assert isinstance(batch, BatchCreateResult) and batch.episodes_created == 2
            job = await c.compile_memories_async(sid)
            assert isinstance(job, CompileJob) and job.status in ("pending", "running", "completed")
            for _ in range(100):
                job = await c.get_compile_status(job.job_id)
                if job.status in ("completed", "failed"):
                    break
                await asyncio.sleep(0.05)
            assert job.status == "completed", job
            found = await c.search_memories(sid, query="Initech")
            memory = found.memories[0]
            labelled = await c.set_memory_labels(str(memory.id), ["Internal"])
            assert isinstance(labelled, Memory) and labelled.sensitivity_labels == ["internal"]

            bundle = await c.get_context(sid, "Where does the user work?", emit_receipt=True)
            assert "Initech" in bundle.assembled_context and bundle.receipt_id
            receipt = await c.get_receipt(bundle.receipt_id)
            assert isinstance(receipt, Receipt) and receipt.subject_id == sid
            listed = await c.list_receipts(sid, limit=10)
            assert isinstance(listed, ReceiptList) and [r.receipt_id for r in listed.receipts] == [bundle.receipt_id]
            checked = await c.verify_receipt(bundle.receipt_id)
            assert checked.reason == "no_signature" and checked.valid is None
            replay = await c.replay_receipt(bundle.receipt_id)
            assert isinstance(replay, ReceiptReplayResult) and replay.original_receipt_id == bundle.receipt_id
            assert replay.diff.context_hash["changed"] is False
            with pytest.raises(StatewaveUnreplayableError):
                await c.replay_receipt(replay.replay_receipt_id)
            with pytest.raises(StatewaveAPIError) as info:
                await c.get_receipt("01" + "0" * 24)
            assert info.value.status_code == 404
            with pytest.raises(StatewaveAPIError) as info:
                await c.set_memory_labels(str(uuid.uuid4()), ["x"])
            assert info.value.status_code == 404
    asyncio.run(run())


def test_rate_limit_is_retried_after_retry_after():
    tenant = f"compat-rl-{uuid.uuid4().hex[:6]}"
    waited = []
    # On a busy machine a token may refill between the refusal and the next call (2 a second at
    # 120 rpm), and then nothing is left to wait for: drain and ask again, a few times at most.
    for _ in range(5):
        with StatewaveClient(URL_LIMITED, tenant_id=tenant, retry=NO_RETRY) as strict:
            refused = None
            for _ in range(300):
                try:
                    strict.list_subjects()
                except StatewaveAPIError as e:
                    refused = e
                    break
            assert refused is not None, "the bucket of 120 never ran out"
            assert refused.status_code == 429 and refused.code == "rate_limited"
        # The default client honours Retry-After (1 s at 120 rpm) and then succeeds.
        with StatewaveClient(URL_LIMITED, tenant_id=tenant) as patient:
            started = time.monotonic()
            assert patient.list_subjects().total == 0
            waited.append(time.monotonic() - started)
        if waited[-1] >= 0.4:
            break
    assert max(waited) >= 0.4, f"the refused client never waited: {waited}"


def test_async_rate_limit_is_retried():
    tenant = f"compat-rl-a-{uuid.uuid4().hex[:6]}"

    async def run():
        async with AsyncStatewaveClient(URL_LIMITED, tenant_id=tenant) as c:
            results = await asyncio.gather(*[c.list_subjects() for _ in range(123)])
            assert all(r.total == 0 for r in results)
    asyncio.run(run())
