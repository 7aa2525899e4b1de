"""The simulator as a server: scripts, scopes, the control API and the CLI entry point."""

from __future__ import annotations

import os
import re
import selectors
import signal
import socket
import subprocess
import sys
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from tests.signals import default_sigint
from wakeful.testing.simulator import ManualClock, Script, Simulator, SimulatorServer
from wakeful.testing.simulator.app import UVICORN_OPTIONS
from wakeful.testing.simulator.script import Conversation, planner_reply

SCRIPT_YAML = """\
default: echo
steps:
  - text: "Let me look."
    tool_calls:
      - name: read_file
        input: {path: README.md}
  - error: {status: 429, retry_after: 1}
  - text: "done"
"""


def _message(key: str, text: str = "hello") -> tuple[dict[str, str], dict[str, object]]:
    headers = {"x-api-key": key}
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": text}],
    }
    return headers, body


def test_script_file_is_walked_in_order_per_scope(tmp_path: Path) -> None:
    path = tmp_path / "script.yaml"
    path.write_text(SCRIPT_YAML, encoding="utf-8")
    sim = Simulator(script=Script.load(path), clock=ManualClock())
    status, body, _ = sim.anthropic_messages(*_message("a"))
    assert status == 200 and body["stop_reason"] == "tool_use"
    assert body["content"][1]["input"] == {"path": "README.md"}
    status, body, headers = sim.anthropic_messages(*_message("a"))
    assert status == 429 and headers["retry-after"] == "1"
    assert body["error"]["type"] == "rate_limit_error"
    assert sim.anthropic_messages(*_message("a"))[1]["content"][0]["text"] == "done"
    assert sim.anthropic_messages(*_message("a", "x"))[1]["content"][0]["text"] == "You said: x"
    # another scope starts at the first step
    assert sim.anthropic_messages(*_message("b"))[1]["stop_reason"] == "tool_use"


def test_json_list_scripts_and_validation() -> None:
    assert Script.parse([{"text": "hi"}]).steps[0].text == "hi"
    with pytest.raises(ValueError, match="Extra inputs"):
        Script.parse([{"txt": "typo"}])


def test_missing_api_key_is_401_in_anthropic_shape() -> None:
    status, body, _ = Simulator().anthropic_messages({}, _message("k")[1])
    assert status == 401 and body["error"]["type"] == "authentication_error"


def test_planner_calls_the_named_tool_or_echoes() -> None:
    tools = {
        "write_note": {
            "properties": {"title": {"type": "string"}, "body": {}},
            "required": ["title"],
        }
    }
    reply = planner_reply(
        Conversation(tools=tools, last_user_text="write_note title=groceries body=milk")
    )
    assert reply.tool_calls == (("write_note", {"title": "groceries", "body": "milk"}),)
    assert planner_reply(Conversation(tools=tools, last_user_text="hi")).text == "You said: hi"
    done = planner_reply(Conversation(tool_results=["saved"]))
    assert done.stop_reason == "end_turn" and "saved" in done.text


def test_reset_forgets_one_scope_only() -> None:
    sim = Simulator(clock=ManualClock())
    headers, body = _message("a")
    body["system"] = [{"type": "text", "text": "x " * 3000, "cache_control": {"type": "ephemeral"}}]
    sim.anthropic_messages(headers, body)
    sim.anthropic_messages({"x-api-key": "b"}, body)
    sim.reset("a")
    assert sim.anthropic_messages(headers, body)[1]["usage"]["cache_read_input_tokens"] == 0
    assert (
        sim.anthropic_messages({"x-api-key": "b"}, body)[1]["usage"]["cache_read_input_tokens"] > 0
    )
    assert len(sim.calls("b")) == 2


def test_control_api_over_http(sim_server: SimulatorServer, sim_key: str) -> None:
    with httpx.Client(base_url=sim_server.base_url) as http:
        assert http.get("/healthz").json() == {"ok": True}
        http.post("/_sim/script", json={"script": [{"text": "scripted"}], "scope": sim_key})
        reply = http.post(
            "/v1/messages", headers={"x-api-key": sim_key}, json=_message(sim_key)[1]
        ).json()
        assert reply["content"][0]["text"] == "scripted"
        counted = http.post(
            "/v1/messages/count_tokens", headers={"x-api-key": sim_key}, json=_message(sim_key)[1]
        ).json()
        assert counted["input_tokens"] > 0
        calls = http.get("/_sim/calls", params={"scope": sim_key}).json()["calls"]
        assert [c["endpoint"] for c in calls] == ["anthropic.messages"]
        before = sim_server.simulator.now()
        assert http.post("/_sim/advance", json={"seconds": 60}).json()["now"] == before + 60
        http.post("/_sim/reset", json={"scope": sim_key})
        assert http.get("/_sim/calls", params={"scope": sim_key}).json()["calls"] == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _first_line(proc: subprocess.Popen[str], within_s: float = 60) -> str:
    """The process's first line on stderr (``within_s`` is a failure timeout: a server that
    never says it is up fails the test instead of hanging it)."""
    assert proc.stderr is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stderr, selectors.EVENT_READ)
        assert selector.select(timeout=within_s), "the simulator never said it was up"
    return proc.stderr.readline()


def test_module_entry_point_serves_a_script_and_says_where(tmp_path: Path) -> None:
    """``python -m wakeful.testing.simulator``: one line once it answers, naming the URL for
    each SDK; Ctrl-C stops it quietly."""
    path = tmp_path / "s.json"
    path.write_text('[{"text": "from a file"}]', encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "wakeful.testing.simulator", "--port", "0", "--script", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        said = _first_line(proc)  # written once the server answers
        found = re.match(r"provider simulator on (http://127\.0\.0\.1:\d+) \(", said)
        assert found is not None, said + proc.stderr.read()
        url = found.group(1)
        assert f"ANTHROPIC_BASE_URL={url}, OPENAI_BASE_URL={url}/v1" in said
        reply = httpx.post(
            url + "/v1/messages", headers={"x-api-key": "cli"}, json=_message("cli")[1]
        ).json()
        assert reply["content"][0]["text"] == "from a file"
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert (proc.returncode, out, rest) == (0, "", "")


def test_the_simulator_and_the_console_default_to_different_ports() -> None:
    """Both are started by hand on one machine (the README's offline agent, ``wakeful ui``):
    their default ports differ, as each command's help says."""
    sim = subprocess.run(
        [sys.executable, "-m", "wakeful.testing.simulator", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    ui = subprocess.run(
        [sys.executable, "-m", "wakeful.cli.main", "ui", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ | {"COLUMNS": "200", "NO_COLOR": "1"},
    )
    sim_port = re.search(r"default (\d+)\)", " ".join(sim.stdout.split()))
    ui_port = re.search(r"\[default: (\d+)\]", ui.stdout)
    assert sim_port is not None and ui_port is not None, sim.stdout + ui.stdout
    assert sim_port.group(1) != ui_port.group(1)


def test_split_tool_traffic_is_rejected_like_the_apis() -> None:
    """A compiler that drops a tool_result (or its call) gets the providers' 400s."""
    sim = Simulator(clock=ManualClock())
    use = {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}
    orphan_call = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 5,
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": "next"},
        ],
    }
    status, body, _ = sim.anthropic_messages({"x-api-key": "p"}, orphan_call)
    assert (
        status == 400
        and "`tool_use` ids were found without `tool_result`" in (body["error"]["message"])
    )
    orphan_result = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 5,
        "messages": [
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"}],
            }
        ],
    }
    status, body, _ = sim.anthropic_messages({"x-api-key": "p"}, orphan_result)
    assert status == 400 and "unexpected `tool_use_id`" in body["error"]["message"]
    chat = {
        "model": "gpt-4o",
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "t", "arguments": "{}"},
                    }
                ],
            },
            {"role": "user", "content": "next"},
        ],
    }
    status, body, _ = sim.openai_chat({"authorization": "Bearer p"}, chat)
    assert status == 400 and "call_1" in body["error"]["message"]


def _cached(key: str) -> tuple[dict[str, str], dict[str, object]]:
    """A request whose system prompt is long enough to cache and marked for it."""
    headers, body = _message(key)
    rules = " ".join(f"rule {i}: keep the deploy log" for i in range(400))
    body["system"] = [{"type": "text", "text": rules, "cache_control": {"type": "ephemeral"}}]
    return headers, body


def test_evict_drops_one_scopes_cache_and_keeps_its_calls() -> None:
    sim = Simulator(clock=ManualClock())
    for key in ("a", "b"):
        assert sim.anthropic_messages(*_cached(key))[1]["usage"]["cache_creation_input_tokens"] > 0
    assert sim.anthropic_messages(*_cached("a"))[1]["usage"]["cache_read_input_tokens"] > 0
    assert sim.evict("a") == 1 and sim.evictions("a") == 1
    usage = sim.anthropic_messages(*_cached("a"))[1]["usage"]
    assert usage["cache_read_input_tokens"] == 0 and usage["cache_creation_input_tokens"] > 0
    assert len(sim.calls("a")) == 3  # the call log stays
    assert sim.anthropic_messages(*_cached("b"))[1]["usage"]["cache_read_input_tokens"] > 0
    assert sim.evictions("b") == 0


@pytest.mark.parametrize("streamed", [True, False])
def test_a_trickle_step_keeps_sending_and_never_finishes(
    sim_server: SimulatorServer, sim_key: str, streamed: bool
) -> None:
    """A ``trickle`` step: streamed, the reply's opening events and then keep-alive comments;
    unstreamed, whitespace; either way more bytes keep coming and no reply ends."""
    script = [{"text": "A reply that never ends.", "trickle": True}, {"text": "done"}]
    sim_server.simulator.set_script(Script.parse(script), sim_key)
    body = _message(sim_key)[1] | ({"stream": True} if streamed else {})
    with httpx.Client(base_url=sim_server.base_url) as http:
        with http.stream("POST", "/v1/messages", headers={"x-api-key": sim_key}, json=body) as r:
            assert r.status_code == 200
            assert "x-sim-trickle" not in r.headers
            received = ""
            for chunk in r.iter_text():
                received += chunk
                if received.count(": keep-alive" if streamed else " ") >= 5:
                    break
        # The next call takes the next step; the trickled one is not an answered call.
        after = http.post("/v1/messages", headers={"x-api-key": sim_key}, json=_message(sim_key)[1])
    if streamed:
        opening, _, rest = received.partition(": keep-alive")
        assert opening.count("event: ") == 3 and '"text_delta"' in opening
        assert "message_stop" not in received and set(rest) <= set(": keep-alive\n")
    else:
        assert received.strip() == ""
    assert after.json()["content"][0]["text"] == "done"
    assert sim_server.simulator.trickles(sim_key) == 1
    assert [c.endpoint for c in sim_server.simulator.calls(sim_key)] == ["anthropic.messages"]


def test_cached_prefix_tokens_reads_the_longest_live_prefix_without_touching_it() -> None:
    clock = ManualClock()
    sim = Simulator(clock=clock)
    headers, body = _cached("a")
    assert sim.cached_prefix_tokens("a", body) == 0, "nothing written yet"
    written = sim.anthropic_messages(headers, body)[1]["usage"]["cache_creation_input_tokens"]
    # The same cached system prompt with another question after it: its prefix is held.
    _, other = _cached("a")
    other["messages"] = [{"role": "user", "content": "and the rollback?"}]
    assert sim.cached_prefix_tokens("a", other) == written
    assert sim.cached_prefix_tokens("b", other) == 0, "another scope's cache"
    clock.advance(299)
    assert sim.cached_prefix_tokens("a", other) == written
    clock.advance(2)  # the 5 min entry expired; asking did not refresh it
    assert sim.cached_prefix_tokens("a", other) == 0
    assert len(sim.calls("a")) == 1 and sim.evictions("a") == 0


def test_an_idle_connection_outlives_the_sdks_pool_and_stopping_closes_it() -> None:
    """The simulator keeps an idle kept-alive connection open longer than the SDKs' pools
    keep one (as a provider's load balancer does), so it does not close one as a client
    picks it for its next request; stopping the simulator closes it at once all the same,
    instead of waiting for it."""
    pools = [anthropic.DEFAULT_CONNECTION_LIMITS, openai.DEFAULT_CONNECTION_LIMITS]
    expiry = max(limits.keepalive_expiry or float("inf") for limits in pools)
    # a minute or more, as providers keep them, and so well past the pools' 5 s
    assert UVICORN_OPTIONS["timeout_keep_alive"] >= 60 > expiry
    server = SimulatorServer().start()
    try:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: sim\r\n\r\n")
            reply = sock.makefile("rb")
            assert reply.readline().startswith(b"HTTP/1.1 200")
            length = 0
            while (line := reply.readline()) != b"\r\n":
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            reply.read(length)  # the connection is idle now, and kept alive
            server.stop()
            assert reply.read() == b""  # closed by the server as it stopped
    finally:
        server.stop()


def test_embeddings_are_made_from_the_text_alone_and_bad_requests_refused() -> None:
    sim = Simulator()
    key = {"authorization": "Bearer sk-test"}
    status, body, _ = sim.openai_embeddings(
        key, {"model": "text-embedding-3-small", "input": ["a", "b", "a"], "dimensions": 8}
    )
    vectors = [d["embedding"] for d in body["data"]]
    assert status == 200 and [d["index"] for d in body["data"]] == [0, 1, 2]
    assert vectors[0] == vectors[2] != vectors[1] and len(vectors[0]) == 8
    assert abs(sum(v * v for v in vectors[0]) - 1.0) < 1e-9
    (one,) = sim.openai_embeddings(key, {"model": "text-embedding-3-large", "input": "a"})[1][
        "data"
    ]
    assert len(one["embedding"]) == 3072
    assert sim.openai_embeddings({}, {"model": "m", "input": "a"})[0] == 401
    for bad in ({"model": "m"}, {"model": "m", "input": [1]}, {"model": "m", "input": []}, []):
        status, body, _ = sim.openai_embeddings(key, bad)
        assert status == 400 and body["error"]["type"] == "invalid_request_error"
