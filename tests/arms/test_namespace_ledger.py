"""The namespace ledger's file, written by a thread of its own in the order of the changes."""

from __future__ import annotations

import asyncio
import json

from memrun.arms.namespaces import NamespaceLedger


def test_a_namespace_is_on_disk_when_add_async_returns_and_the_file_follows_every_change(tmp_path):
    ledger = NamespaceLedger(tmp_path, "http://user:secret@host/", "tok")

    def listed() -> list[str]:
        return json.loads(ledger.path.read_text())["namespaces"] if ledger.path.exists() else []

    names = [f"memrun-tok-{i}" for i in range(40)]

    async def history(name: str) -> None:
        await ledger.add_async(name)
        assert name in listed()  # before the request that creates it could go out
        await asyncio.sleep(0)
        await ledger.discard_async(name)

    async def main() -> None:
        await asyncio.gather(*(history(n) for n in names[:20]))
        for name in names[20:]:
            await ledger.add_async(name)

    asyncio.run(main())
    assert listed() == names[20:] and "secret" not in ledger.path.read_text()
    ledger.mark_unerased("the server went away")
    assert json.loads(ledger.path.read_text())["unerased"] == "the server went away"
    for name in names[20:]:
        ledger.discard(name)
    assert not ledger.path.exists()  # nothing left: the file goes
    ledger.close()
    ledger.add("late")  # after close (an arm closed at exit): written in the caller's thread
    assert listed() == ["late"]


def test_a_leftover_is_offered_only_to_the_server_it_was_made_on(tmp_path):
    """Ledgers saved masked URLs alone, so two servers differing only in a query value
    (``?ns=a`` and ``?ns=b``) looked alike and one run erased the other's leftovers."""
    import subprocess
    import sys

    from memrun.arms.namespaces import orphaned_ledgers
    from memrun.core.url_secrets import url_identity

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    for ns in ("a", "b"):
        ledger = NamespaceLedger(tmp_path, url_identity(f"http://h:1/?ns={ns}"), f"tok{ns}")
        ledger.add(f"memrun-tok{ns}-1")
        ledger.close()
        data = json.loads(ledger.path.read_text())
        ledger.path.write_text(json.dumps({**data, "pid": int(dead.stdout)}))  # its process has ended
        assert data["base_url"].startswith("http://h:1/?ns=*** [pbkdf2:")  # the value itself is not saved
    for ns in ("a", "b"):
        found = [x.names for x in orphaned_ledgers(tmp_path, url_identity(f"http://h:1/?ns={ns}"))]
        assert found == [[f"memrun-tok{ns}-1"]]
    # a URL with nothing masked is its own key, as before
    assert url_identity("http://h:1/v1") == "http://h:1/v1"
