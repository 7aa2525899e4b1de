"""Compiles of different agents may share one CountingCache from several threads (the
worker's compile lock is per agent): each gets the window it gets alone."""

from __future__ import annotations

import threading

from wakeful.compiler import (
    AgentProfile,
    CountingCache,
    EstimatingCounter,
    WindowPolicy,
    compile_window,
)

from .factory import NOW, goal, snapshot


def _agent(name: str) -> AgentProfile:
    return AgentProfile(
        tenant="acme", name=name, model="claude-sonnet-4-5", instructions=f"You are {name}."
    )


def test_agents_compiling_side_by_side_on_one_cache_get_their_own_windows() -> None:
    policy, counter = WindowPolicy.default(), EstimatingCounter()
    snaps = {name: snapshot(agent=_agent(name)) for name in ("a", "b", "c", "d")}
    alone = {
        name: compile_window(snap, goal(), policy, NOW, counter=counter).request_json
        for name, snap in snaps.items()
    }
    shared = CountingCache(max_entries=64)  # small: overflows clear tables mid-run
    start = threading.Barrier(len(snaps))
    wrong: list[str] = []

    def run(name: str) -> None:
        start.wait()
        for _ in range(30):
            window = compile_window(snaps[name], goal(), policy, NOW, counter=counter, cache=shared)
            if window.request_json != alone[name]:
                wrong.append(name)

    threads = [threading.Thread(target=run, args=(name,)) for name in snaps]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong
