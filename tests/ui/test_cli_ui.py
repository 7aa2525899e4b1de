"""`wakeful ui` refuses to listen beyond the loopback interface without a token, in one line,
before it opens anything."""

from __future__ import annotations

import httpx
import pytest
from typer.testing import CliRunner

from tests.ui.conftest import Recorded
from tests.ui.serve import serving_ui
from wakeful.cli.main import app


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "::"])
def test_a_public_host_without_a_token_is_refused_in_one_line(
    host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WAKEFUL_UI_TOKEN", raising=False)
    out = CliRunner().invoke(app, ["ui", "--host", host])
    assert out.exit_code == 2, (out.stdout, out.stderr)
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(f"error: --host {host} exposes the console") and "--token" in line
    assert "WAKEFUL_UI_TOKEN" in line


def test_a_port_out_of_range_is_refused_in_one_line() -> None:
    out = CliRunner().invoke(app, ["ui", "--port", "70000"])
    assert out.exit_code == 2
    assert out.stderr.strip() == (
        "error: --port 70000 is not a TCP port (1-65535, or 0 for any free one)"
    )


def test_a_token_from_the_environment_guards_a_public_host(recorded: Recorded) -> None:
    env = recorded.env | {"WAKEFUL_UI_TOKEN": "s3cret-from-env"}
    with serving_ui(env, "--host", "0.0.0.0") as server:
        assert httpx.get(f"{server.base}/").status_code == 401
        bearer = {"Authorization": "Bearer s3cret-from-env"}
        answered = httpx.get(f"{server.base}/", headers=bearer)
        assert answered.status_code == 200 and recorded.agent.name in answered.text
    assert server.returncode == 0, server.said
    assert "token required" in server.said
