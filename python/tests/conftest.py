"""Shared fixtures: the tool folders under fixtures/, the reference's default tools
(when lollms-client is installed), and a check that no worker outlives the tests."""

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def _children() -> set:
    me = str(os.getpid())
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            found.add(int(entry))
    return found


@pytest.fixture(scope="session", autouse=True)
def no_worker_left_behind():
    yield
    import gc
    import time

    gc.collect()
    deadline = time.monotonic() + 5
    while _children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _children(), "worker processes outlived the tests"


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="session")
def reference_default_tools():
    lcp = pytest.importorskip("lollms_client.tools_bindings.lcp")
    return Path(lcp.__file__).parent / "default_tools"
