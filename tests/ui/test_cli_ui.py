"""`wakeful ui` refuses to listen beyond the loopback interface without a token, in one line,
before it opens anything."""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

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


def test_only_the_names_it_is_served_as_are_answered(recorded: Recorded) -> None:
    """A page elsewhere that rebinds its own name to this machine reaches the console with
    that name in ``Host``: refused (it answered 200 and the page), while the loopback names
    and a host given with --allowed-host are answered."""
    page = f"/agents/{recorded.agent.name}"
    with serving_ui(recorded.env, "--allowed-host", "console.example") as server:
        port = server.base.rpartition(":")[2]

        def status(host: str) -> int:
            return httpx.get(server.base + page, headers={"Host": host}).status_code

        rebound = httpx.get(server.base + page, headers={"Host": f"attacker.example:{port}"})
        answered = {
            host: status(host)
            for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}",
                         f"console.example:{port}", "console.example")
        }  # fmt: skip
        refused = {host: status(host) for host in ("attacker.example", "127.0.0.1.nip.io")}
    assert rebound.status_code == 400, rebound.text[:300]
    assert recorded.agent.name not in rebound.text
    assert "--allowed-host" in rebound.text
    assert set(answered.values()) == {200}, answered
    assert set(refused.values()) == {400}, refused
    assert server.returncode == 0, server.said


def test_a_token_in_the_address_never_redirects_off_site(recorded: Recorded) -> None:
    """``//evil.example/?token=...`` set the cookie and redirected to ``//evil.example/``,
    another site to the browser; the redirect now stays on the console's own pages."""
    env = recorded.env | {"WAKEFUL_UI_TOKEN": "s3cret-redirect"}
    with serving_ui(env) as server:
        moved = {
            path: httpx.get(f"{server.base}{path}?token=s3cret-redirect", follow_redirects=False)
            for path in ("//evil.example/", "/\\evil.example/", "///evil.example/x", "/cost")
        }
    for path, answer in moved.items():
        assert answer.status_code == 303, (path, answer.status_code)
        location = answer.headers["location"]
        assert location.startswith("/") and location[1:2] not in ("/", "\\"), (path, location)
        assert urlsplit(urljoin(server.base + "/", location)).netloc == urlsplit(server.base).netloc
    assert moved["/cost"].headers["location"] == "/cost"
