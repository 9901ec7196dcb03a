"""Every public method of both SDK clients is exercised by this suite (a new SDK method fails here)."""
import inspect
import pathlib
import re

from statewave import AsyncStatewaveClient, StatewaveClient

HERE = pathlib.Path(__file__).parent
# Called implicitly by `with` / `async with` blocks throughout the suite.
IMPLICIT = {"close"}


def public_methods(cls):
    return {n for n, _ in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")}


def test_sync_and_async_clients_have_the_same_surface():
    assert public_methods(StatewaveClient) == public_methods(AsyncStatewaveClient)


def test_every_public_method_is_called_by_the_suite():
    source = "\n".join(p.read_text() for p in HERE.glob("test_*.py") if p.name != pathlib.Path(__file__).name)
    called = set(re.findall(r"\.(\w+)\(", source))
    missing = sorted(public_methods(StatewaveClient) - called - IMPLICIT)
    assert not missing, f"SDK methods without a compatibility test: {missing}"
    awaited = set(re.findall(r"await \w+\.(\w+)\(", source))
    missing_async = sorted(public_methods(AsyncStatewaveClient) - awaited - IMPLICIT)
    assert not missing_async, f"async SDK methods without a compatibility test: {missing_async}"
