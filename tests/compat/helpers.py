"""Shared helpers for the SDK compatibility tests."""
import uuid


def subject():
    """A fresh subject id."""
    return f"user:{uuid.uuid4().hex[:8]}"


def say(client, sid, text, session="s1"):
    """Records one user chat message."""
    return client.create_episode(sid, "chat", "message", {"messages": [{"role": "user", "content": text}]},
                                 session_id=session)
