"""A worker's compiles take turns per agent, not per worker: one agent's compiles share its
partition in the worker's cache, other agents' compiles run beside them."""

from __future__ import annotations

import threading

from wakeful.activities.deps import CompileLocks


def test_compiles_of_one_agent_share_a_lock_and_other_agents_do_not_wait() -> None:
    locks = CompileLocks()
    triage = locks("acme", "triage")
    assert locks("acme", "triage") is triage
    with triage:
        # Another agent (or the same name in another tenant) compiles meanwhile.
        for other in (locks("acme", "billing"), locks("globex", "triage")):
            assert other.acquire(blocking=False), "a compile of another agent had to wait"
            other.release()
        assert not locks("acme", "triage").acquire(blocking=False)


def test_locks_handed_out_from_several_threads_are_one_per_agent() -> None:
    locks = CompileLocks()
    start = threading.Barrier(8)
    got: list[threading.Lock] = []

    def take() -> None:
        start.wait()
        got.append(locks("acme", "triage"))

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(lock) for lock in got}) == 1
