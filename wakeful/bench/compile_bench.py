"""``wakeful bench compile``: how fast the compiler projects large histories.

Synthetic histories of 1k, 10k and 100k blocks (mixed kinds, ~2 KB of text each) are
compiled into a 50k-token window. Reported per size:

* ``p50_ms`` / ``p99_ms`` — **precounted** compiles: the :class:`CountingCache` already
  holds this history's token counts and block facts, as it does in a worker that compiled
  the agent's previous call (tokens are counted once per block, not once per compile);
* ``warm_p50_ms`` — **incremental** compiles: the history grows by one event per compile
  and the cache is reused; every warm window is checked byte-for-byte against a cold
  compile of the same snapshot (an ``AssertionError`` here means the cache leaked into the
  output);
* ``cold_p50_ms`` — a fresh cache every compile: every block counted and summarised.

The baseline is LangChain's ``trim_messages`` (strategy "last") on the same history as chat
messages, with the same budget and the same token counter behind the same memo (so it is
not charged for tokenising), measured in the same run. Progress goes to stderr, the JSON
report to stdout.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from wakeful.compiler import (
    AgentProfile,
    Allocations,
    Block,
    BlockKind,
    Budget,
    CountingCache,
    EstimatingCounter,
    Goal,
    GoalKind,
    Policy,
    Role,
    Snapshot,
    TokenCounter,
    compile_window,
)
from wakeful.compiler.work import BLOCK_OVERHEAD

SIZES = (1_000, 10_000, 100_000)
WINDOW = 50_000
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
WAKE = "wake-bench"
AGENT = AgentProfile(
    tenant="bench",
    name="synthetic",
    model="claude-sonnet-4-5",
    instructions="You keep a fleet of services healthy. Be brief and precise.",
)
_WORDS = (
    "disk latency deploy rollback error warning service checkout payment queue retry "
    "timeout config migration index replica primary shard cache eviction alert page "
    "owner runbook metric p99 budget window token summary decision incident"
).split()


def _corpus(rnd: random.Random) -> str:
    return " ".join(rnd.choice(_WORDS) for _ in range(60_000))


def history(n: int, seed: int = 7) -> list[Block]:
    """A deterministic mixed history of ``n`` blocks, ~2 KB each, ending in a live wake."""
    rnd = random.Random(seed)
    corpus = _corpus(rnd)

    def text(i: int, size: int = 2000) -> str:
        start = (i * 7919) % (len(corpus) - size)
        return f"[{i}] " + corpus[start : start + size]

    def at(seq: int) -> datetime:
        return NOW - timedelta(minutes=(n - seq))

    blocks: list[Block] = [
        Block(
            id=f"tool-{k}",
            kind=BlockKind.TOOL_SCHEMA,
            text=f"Tool {k}: " + text(k, 300),
            source="registry",
            seq=k,
            tool_name=f"tool_{k}",
            tool_input={"type": "object", "properties": {"q": {"type": "string"}}},
        )
        for k in range(8)
    ]
    blocks += [
        Block(
            id=f"rule-{k}",
            kind=BlockKind.SYSTEM_RULE,
            text=text(100 + k, 400),
            source="org",
            seq=10 + k,
        )
        for k in range(6)
    ]
    blocks += [
        Block(
            id="skills", kind=BlockKind.SKILL_INDEX, text=text(200, 800), source="skills", seq=20
        ),
        Block(id="frame", kind=BlockKind.TASK_FRAME, text=text(201, 600), source="task", seq=21),
        Block(
            id="handoff",
            kind=BlockKind.HANDOFF_NOTE,
            text=text(202, 1200),
            source="handoff",
            seq=22,
        ),
    ]
    blocks += [
        Block(
            id=f"D-{k}",
            kind=BlockKind.LOAD_BEARING,
            text=text(300 + k, 300),
            source="registry",
            seq=30 + k,
            load_bearing=True,
        )
        for k in range(3)
    ]
    seq = 100
    while len(blocks) < n - 5:
        roll = rnd.random()
        if roll < 0.40:
            role = Role.USER if seq % 2 else Role.ASSISTANT
            blocks.append(
                Block(
                    id=f"t-{seq}",
                    kind=BlockKind.TURN,
                    text=text(seq),
                    source="chat",
                    seq=seq,
                    role=role,
                    importance=rnd.random(),
                )
            )
        elif roll < 0.70:
            call_id = f"call-{seq}"
            blocks.append(
                Block(
                    id=f"{call_id}-u",
                    kind=BlockKind.TOOL_CALL,
                    text="",
                    source="model",
                    seq=seq,
                    tool_call_id=call_id,
                    tool_name="tool_1",
                    tool_input={"q": f"query {seq}"},
                )
            )
            seq += 1
            blocks.append(
                Block(
                    id=f"{call_id}-r",
                    kind=BlockKind.TOOL_RESULT,
                    text=text(seq),
                    source="tool_1",
                    seq=seq,
                    tool_call_id=call_id,
                    tool_name="tool_1",
                    resolved=rnd.random() < 0.5,
                    captured_at=at(seq),
                )
            )
        elif roll < 0.85:
            blocks.append(
                Block(
                    id=f"m-{seq}",
                    kind=BlockKind.MEMORY,
                    text=text(seq),
                    source="memory",
                    seq=seq,
                    relevance=rnd.random(),
                    importance=rnd.random(),
                    captured_at=at(seq),
                    stale_after=at(seq) + timedelta(days=1) if seq % 5 == 0 else None,
                    supersession_key=f"fact-{seq % 500}" if seq % 3 == 0 else None,
                )
            )
        elif roll < 0.97:
            blocks.append(
                Block(
                    id=f"r-{seq}",
                    kind=BlockKind.RETRIEVED,
                    text=text(seq),
                    source=f"doc:{seq % 97}",
                    seq=seq,
                    relevance=rnd.random(),
                    captured_at=at(seq),
                    supersession_key=f"chunk-{seq % 300}" if seq % 4 == 0 else None,
                )
            )
        else:
            blocks.append(
                Block(
                    id=f"s-{seq}",
                    kind=BlockKind.SUMMARY,
                    text=text(seq),
                    source="consolidation",
                    seq=seq,
                )
            )
        seq += 1
    blocks.append(
        Block(
            id="ask",
            kind=BlockKind.TURN,
            text="The disk alarm fired again on db-2.",
            source="webhook",
            seq=seq,
            role=Role.USER,
            wake_id=WAKE,
        )
    )
    for k in range(2):
        call_id = f"live-{k}"
        blocks.append(
            Block(
                id=f"{call_id}-u",
                kind=BlockKind.TOOL_CALL,
                text="",
                source="model",
                seq=seq + 1 + 2 * k,
                tool_call_id=call_id,
                tool_name="tool_2",
                tool_input={"host": "db-2"},
                wake_id=WAKE,
            )
        )
        blocks.append(
            Block(
                id=f"{call_id}-r",
                kind=BlockKind.TOOL_RESULT,
                text=text(seq + k),
                source="tool_2",
                seq=seq + 2 + 2 * k,
                tool_call_id=call_id,
                tool_name="tool_2",
                wake_id=WAKE,
            )
        )
    return blocks


def bench_policy() -> Policy:
    return Policy(
        budget=Budget(context_limit=WINDOW, output_reserve=4_096, allocations=Allocations())
    )


def _snapshot(blocks: list[Block] | tuple[Block, ...]) -> Snapshot:
    # The blocks were validated when built; re-validating 100k of them is not what we measure.
    return Snapshot.model_construct(
        agent=AGENT, as_of=NOW, session_id=None, current_wake_id=WAKE, blocks=tuple(blocks)
    )


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def _baseline(
    blocks: list[Block], cache: CountingCache, counter: TokenCounter, budget: int, repeat: int
) -> list[float]:
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
        trim_messages,
    )

    stable = [
        b
        for b in blocks
        if b.kind
        in (
            BlockKind.SYSTEM_RULE,
            BlockKind.SKILL_INDEX,
            BlockKind.TASK_FRAME,
            BlockKind.HANDOFF_NOTE,
            BlockKind.LOAD_BEARING,
        )
    ]
    messages: list[BaseMessage] = [
        SystemMessage(AGENT.instructions + "\n\n" + "\n\n".join(b.text for b in stable))
    ]
    for b in sorted(blocks, key=lambda b: (b.seq, b.id)):
        if b.kind is BlockKind.TOOL_CALL:
            messages.append(
                AIMessage(
                    content="",
                    tool_calls=[
                        {
                            "name": b.tool_name or "tool",
                            "args": b.tool_input or {},
                            "id": b.tool_call_id,
                        }
                    ],
                )
            )
        elif b.kind is BlockKind.TOOL_RESULT:
            messages.append(ToolMessage(content=b.text, tool_call_id=b.tool_call_id or ""))
        elif b.kind is BlockKind.TURN and b.role is Role.ASSISTANT:
            messages.append(AIMessage(content=b.text))
        elif b.kind in (BlockKind.TURN, BlockKind.MEMORY, BlockKind.RETRIEVED, BlockKind.SUMMARY):
            messages.append(HumanMessage(content=b.text))

    def count(batch: list[BaseMessage]) -> int:
        # The list form (LangChain sums per-message counts the same way for a per-message
        # counter); tool-call arguments are ignored, which only flatters the baseline.
        total = 0
        for message in batch:
            content = message.content if isinstance(message.content, str) else str(message.content)
            total += cache.count(counter, content) + BLOCK_OVERHEAD
        return total

    def run() -> object:
        return trim_messages(
            messages,
            max_tokens=budget,
            token_counter=count,
            strategy="last",
            include_system=True,
            start_on="human",
        )

    run()
    return _timed(run, repeat)


def run(
    json_out: bool = True,
    sizes: tuple[int, ...] = SIZES,
    counter: TokenCounter | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the benchmark; returns the report (and prints it as JSON if ``json_out``)."""
    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    counter = counter or EstimatingCounter()
    policy = bench_policy()
    goal = Goal(kind=GoalKind.WEBHOOK, text="The disk alarm fired again on db-2.")
    report: dict[str, Any] = {
        "window_tokens": WINDOW,
        "counter": counter.name,
        "sizes": [],
        "baseline": {},
    }
    for n in sizes:
        repeat = max(5, min(40, 400_000 // n))
        say(f"[bench] {n} blocks: building history")
        blocks = history(n)
        snap = _snapshot(blocks)

        def cold(snap: Snapshot = snap) -> object:
            return compile_window(snap, goal, policy, NOW, counter=counter, cache=CountingCache())

        held = CountingCache()

        def precounted(snap: Snapshot = snap, held: CountingCache = held) -> object:
            return compile_window(snap, goal, policy, NOW, counter=counter, cache=held)

        precounted()
        say(f"[bench] {n} blocks: {repeat} precounted compiles")
        hot_ms = _timed(precounted, repeat)
        say(f"[bench] {n} blocks: {max(3, repeat // 4)} cold compiles")
        cold_ms = _timed(cold, max(3, repeat // 4))

        say(f"[bench] {n} blocks: {repeat} incremental compiles, each checked against a cold one")
        grow = blocks[: n - 5 - repeat]
        tail = blocks[n - 5 :]
        extra = blocks[n - 5 - repeat : n - 5]
        cache = CountingCache()
        compile_window(_snapshot(grow + tail), goal, policy, NOW, counter=counter, cache=cache)
        warm_ms = []
        for block in extra:
            grow.append(block)
            snap_k = _snapshot(grow + tail)
            start = time.perf_counter()
            warm = compile_window(snap_k, goal, policy, NOW, counter=counter, cache=cache)
            warm_ms.append((time.perf_counter() - start) * 1000)
            fresh = compile_window(
                snap_k, goal, policy, NOW, counter=counter, cache=CountingCache()
            )
            assert warm.request_json == fresh.request_json, "warm output differs from cold"
            assert warm.ledger == fresh.ledger, "warm ledger differs from cold"

        say(f"[bench] {n} blocks: baseline trim_messages x{repeat}")
        base_cache = CountingCache()
        base_ms = _baseline(blocks, base_cache, counter, policy.budget.input_budget, repeat)
        row = {
            "blocks": n,
            "p50_ms": round(statistics.median(hot_ms), 3),
            "p99_ms": round(_percentile(hot_ms, 0.99), 3),
            "warm_p50_ms": round(statistics.median(warm_ms), 3),
            "warm_p99_ms": round(_percentile(warm_ms, 0.99), 3),
            "cold_p50_ms": round(statistics.median(cold_ms), 3),
            "samples": repeat,
        }
        report["sizes"].append(row)
        report["baseline"][str(n)] = {
            "p50_ms": round(statistics.median(base_ms), 3),
            "p99_ms": round(_percentile(base_ms, 0.99), 3),
        }
        say(f"[bench] {n} blocks: {row} baseline {report['baseline'][str(n)]}")
    if json_out:
        print(json.dumps(report, indent=2))
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print the JSON report to stdout")
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="comma-separated history sizes"
    )
    parser.add_argument(
        "--counter", choices=("estimate", "o200k_base", "cl100k_base"), default="estimate"
    )
    args = parser.parse_args(argv)
    counter: TokenCounter = EstimatingCounter()
    if args.counter != "estimate":
        from wakeful.tokenizers import BpeCounter

        counter = BpeCounter(args.counter)
    report = run(
        json_out=args.json, sizes=tuple(int(s) for s in args.sizes.split(",")), counter=counter
    )
    if not args.json:
        for row in report["sizes"]:
            base = report["baseline"][str(row["blocks"])]["p50_ms"]
            print(
                f"{row['blocks']:>7} blocks  p50 {row['p50_ms']:8.2f} ms  p99 "
                f"{row['p99_ms']:8.2f} ms  warm p50 {row['warm_p50_ms']:8.2f} ms  "
                f"trim_messages p50 {base:8.2f} ms"
            )


if __name__ == "__main__":
    main()
