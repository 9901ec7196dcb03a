"""An agent's loop with mnemo through the Statewave Python SDK (statewave==1.5.0).

1. Each turn of a short support conversation is recorded as an episode as it happens.
2. The subject's pending episodes are compiled into memories (facts, summaries).
3. Before the next answer, the agent asks for the context of its task, with a receipt.
4. The receipt is checked: its hash is the sha256 of the exact text the agent was shown, its
   signature verdict is read, and a replay rebuilds the same bytes.

Run it against a running server (scripts/start):

    python3 -m venv .venv && .venv/bin/pip install statewave==1.5.0
    .venv/bin/python examples/python/agent_loop.py

MNEMO_URL (default http://127.0.0.1:8100) and MNEMO_API_KEY (unset: an open local server) say
where to connect. tests/api/examples.rs runs this file against a real server on every CI run.
"""
import hashlib
import os
import uuid

from statewave import StatewaveClient

URL = os.environ.get("MNEMO_URL", "http://127.0.0.1:8100")
API_KEY = os.environ.get("MNEMO_API_KEY")

CONVERSATION = [
    ("user", "Hi, I'm Ada. I work at Initech and I run the billing service."),
    ("assistant", "Nice to meet you, Ada. What can I help with?"),
    ("user", "I prefer short answers, and we use Postgres for billing."),
    ("assistant", "Noted. Short answers it is."),
    ("user", "Update: I moved to Lisbon last month."),
]


def main() -> None:
    sw = StatewaveClient(URL, api_key=API_KEY)
    subject = f"user:ada-{uuid.uuid4().hex[:8]}"  # a new subject per run
    session = "support-1"

    # 1. Record each turn as it happens (one episode per chat message).
    for role, text in CONVERSATION:
        sw.create_episode(subject, source="chat", type="message", session_id=session,
                          payload={"messages": [{"role": role, "content": text}]})

    # 2. Compile what is pending into memories.
    compiled = sw.compile_memories(subject)
    print(f"compiled {compiled.memories_created} memories:")
    for m in compiled.memories:
        print(f"  [{m.kind}] {m.content}")

    # 3. The context for the next answer, within a token budget, with a receipt.
    task = "The user asks which database their billing service uses and where they live now."
    ctx = sw.get_context(subject, task, max_tokens=400, session_id=session, emit_receipt=True)
    print(f"\ncontext ({ctx.token_estimate} tokens, receipt {ctx.receipt_id}):\n{ctx.assembled_context}")
    assert ctx.token_estimate <= 400
    assert "Postgres" in ctx.assembled_context and "Lisbon" in ctx.assembled_context

    # 4. The receipt proves which bytes the agent was shown.
    receipt = sw.get_receipt(ctx.receipt_id)
    shown = hashlib.sha256(ctx.assembled_context.encode("utf-8")).hexdigest()
    assert receipt.output["context_hash"] == shown, "the receipt names other bytes"
    verdict = sw.verify_receipt(ctx.receipt_id)  # HMAC; unsigned while no signing key is set
    replay = sw.replay_receipt(ctx.receipt_id)  # rebuilt as of the receipt's instant
    assert replay.diff.context_hash["changed"] is False, replay.diff
    print(f"receipt: hash matches the text shown; signature valid={verdict.valid} "
          f"({verdict.reason or 'signed'}); replay reproduced the same bytes")

    sw.delete_subject(subject)  # erase the demo subject (returns a certificate)
    sw.close()


if __name__ == "__main__":
    main()
