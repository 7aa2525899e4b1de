"""docker-compose.yml: valid against the Compose Specification's JSON schema, and wired to
what the code reads.

No Docker engine runs here, so the file is checked statically: schema validation (a vendored
copy of compose-spec.json, Apache-2.0, see compose-spec.NOTICE), then the deployment's own
invariants — every piece the worker needs is present and healthchecked, every variable a
Wakeful container gets is a setting `wakeful/worker/settings.py` reads, the settings load
from that environment with nothing left to start in-container, and every command line
parses against the real CLI. Temporal runs as its project documents it for Compose (the
server image, a one-shot admin-tools job for the schemas, the `temporal` CLI for health, no
`auto-setup` or `tctl`), every third-party image is pinned, Qdrant's matches the installed
client, and Postgres is the official image since no migration needs an extension.
"""

from __future__ import annotations

import copy
import importlib.metadata
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest
import typer
import yaml
from qdrant_client.common.version_check import is_compatible

from wakeful.cli.main import app
from wakeful.worker.settings import ENV_PREFIX, Settings, env_var_names

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = Path(__file__).with_name("compose-spec.json")
SHARED_SCHEMA = ROOT.parent / "shared" / "compose-spec.json"
COMPOSE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / "deploy" / "wakeful.env.example"
WAKEFUL_SERVICES = ("worker", "ingress")
NEEDED = ("postgres", "temporal", "qdrant")
ONE_SHOT = ("temporal-schema", "temporal-namespace")
MIGRATIONS = ROOT / "wakeful" / "substrate" / "migrations"
TEMPORAL_SCHEMA = "/etc/temporal/schema/postgresql/v12"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return doc


def _env_file() -> dict[str, str]:
    pairs = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            pairs[key.strip()] = value
    return pairs


_VAR = re.compile(r"\$\{(\w+)(?:(:?[-?])([^}]*))?\}")


def _interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's ${VAR}, ${VAR:-default} and ${VAR:?error} forms, and $$ for a literal $."""

    def one(m: re.Match[str]) -> str:
        name, op, arg = m.group(1), m.group(2), m.group(3)
        value = env.get(name)
        if op and op.endswith("-") and not value:
            return arg or ""
        if op and op.endswith("?") and not value:
            raise AssertionError(f"${{{name}}} is required: {arg}")
        assert value is not None, f"${{{name}}} is not defined in {ENV_EXAMPLE.name}"
        return value

    return _VAR.sub(one, text).replace("$$", "$")


def test_the_vendored_schema_is_the_shared_one() -> None:
    if not SHARED_SCHEMA.exists():
        pytest.skip(f"no shared copy at {SHARED_SCHEMA} to compare the vendored schema with")
    assert json.loads(SCHEMA.read_text()) == json.loads(SHARED_SCHEMA.read_text())


def test_compose_file_validates_against_the_compose_schema(compose: dict[str, Any]) -> None:
    validator = jsonschema.Draft7Validator(json.loads(SCHEMA.read_text()))
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(compose)]
    assert errors == []
    # The schema is strict enough to catch a typo, so passing means something.
    broken = copy.deepcopy(compose)
    broken["services"]["worker"]["healthcheck"]["tests"] = ["CMD", "true"]
    assert not validator.is_valid(broken)


def test_every_piece_the_worker_needs_is_present_and_healthchecked(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    assert {*NEEDED, *WAKEFUL_SERVICES, "otel-collector"} <= set(services)
    for name in (*NEEDED, *WAKEFUL_SERVICES):
        check = services[name].get("healthcheck", {})
        assert check.get("test") and not check.get("disable"), f"{name} has no healthcheck"
    for name in WAKEFUL_SERVICES:
        deps = services[name]["depends_on"]
        for needed in NEEDED:
            assert deps[needed]["condition"] == "service_healthy", (name, needed)
    assert services["temporal"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("postgres", "qdrant"):
        mounts = [str(v).split(":")[1] for v in services[name]["volumes"]]
        assert mounts[0] in ("/var/lib/postgresql/data", "/qdrant/storage"), name
    assert set(compose["volumes"]) >= {"postgres-data", "qdrant-data"}


def test_wakeful_containers_get_only_settings_the_code_reads(compose: dict[str, Any]) -> None:
    known = {name for field in Settings.model_fields for name in env_var_names(field)}
    for service in WAKEFUL_SERVICES:
        env = compose["services"][service]["environment"]
        unknown = sorted(k for k in env if k.startswith(ENV_PREFIX) and k not in known)
        assert unknown == [], f"{service} sets variables no setting reads: {unknown}"
    from_file = [k for k in _env_file() if k.startswith(ENV_PREFIX)]
    unknown = sorted(k for k in from_file if k not in known and k != "WAKEFUL_AGENTS")
    assert unknown == [], f"{ENV_EXAMPLE.name} sets variables no setting reads: {unknown}"


@pytest.mark.parametrize("service", WAKEFUL_SERVICES)
def test_settings_load_from_the_container_environment(
    compose: dict[str, Any], service: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the container's process sees: env_file, then `environment:` on top."""
    file_env = _env_file()
    spec = compose["services"][service]
    assert [e["path"] for e in spec["env_file"]] == ["deploy/wakeful.env"]
    env = dict(file_env)
    env |= {k: _interpolate(str(v), file_env) for k, v in spec["environment"].items()}
    for name in list(__import__("os").environ):
        if name.startswith(ENV_PREFIX) or name.startswith(("ANTHROPIC_", "OPENAI_", "OTEL_")):
            monkeypatch.delenv(name)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = Settings()
    # Every piece is external: nothing embedded may start inside a container.
    assert settings.database_url == (
        "postgresql+psycopg://wakeful:change-me-0123456789abcdef@postgres:5432/wakeful"
    )
    assert settings.temporal_address == "temporal:7233"
    assert settings.qdrant_url == "http://qdrant:6333"
    assert settings.webhook_secret is not None
    assert (settings.otel_exporter, settings.otel_endpoint) == (
        "otlp",
        "http://otel-collector:4318",
    )
    collector = yaml.safe_load((ROOT / "deploy" / "otel-collector.yaml").read_text())
    http = collector["receivers"]["otlp"]["protocols"]["http"]["endpoint"]
    assert http.endswith(":4318")


def _parses(argv: list[str]) -> None:
    """Parse a command line with the real CLI (without running it)."""
    command = typer.main.get_command(app)
    ctx = command.make_context("wakeful", list(argv), resilient_parsing=False)
    while isinstance(command, click.Group) and ctx.protected_args + ctx.args:
        name, *rest = ctx.protected_args + ctx.args
        command = command.get_command(ctx, name)
        assert command is not None, f"no command {name!r} in {argv}"
        ctx = command.make_context(name, rest, parent=ctx)


def test_container_commands_parse_with_the_real_cli(compose: dict[str, Any]) -> None:
    env = _env_file()
    services = compose["services"]
    for service in WAKEFUL_SERVICES:
        _parses([_interpolate(arg, env) for arg in services[service]["command"]])
        test = services[service]["healthcheck"]["test"]
        assert test[:2] == ["CMD", "wakeful"]
        _parses(test[2:])
    assert services["ingress"]["command"][:2] == ["ingress", "serve"]
    assert services["ingress"]["ports"] == ["8080:8080"]


def test_the_ui_reads_payloads_through_the_codec_server(compose: dict[str, Any]) -> None:
    services = compose["services"]
    ui, codec = services["temporal-ui"], services["codec-server"]
    assert ui["environment"]["TEMPORAL_CODEC_ENDPOINT"] == "http://localhost:8888"
    assert ui["depends_on"]["codec-server"] == {"condition": "service_healthy"}
    assert codec["ports"] == ["127.0.0.1:8888:8888"]  # the host's loopback only
    _parses(codec["command"])
    assert codec["command"][codec["command"].index("--cors-origin") + 1] == (
        "http://" + ui["ports"][0].split(":")[0].replace("127.0.0.1", "localhost") + ":8233"
    )
    _parses(codec["healthcheck"]["test"][2:])


def test_dockerfile_installs_the_package_and_runs_the_cli() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "pip wheel" in text and 'ENTRYPOINT ["wakeful"]' in text
    assert "USER wakeful" in text  # not root
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".wakeful", "tests", "deploy/*.env"} <= set(ignored)


def _strings(node: Any) -> list[str]:
    """Every string in a parsed YAML node (keys and values), depth first."""
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(node, list):
        return [s for item in node for s in _strings(item)]
    return [node] if isinstance(node, str) else []


def _image(spec: dict[str, Any]) -> tuple[str, str]:
    name, _, tag = str(spec["image"]).rpartition(":")
    return name, tag


def _script(spec: dict[str, Any]) -> str:
    """A one-shot job's shell script, as its container runs it (`$$` is a literal `$`)."""
    assert spec["entrypoint"][:1] == ["/bin/sh"] and "-e" in "".join(spec["entrypoint"][1:])
    script = _interpolate(spec["command"][-1], _env_file())
    checked = subprocess.run(["sh", "-n", "-c", script], capture_output=True, text=True)
    assert checked.returncode == 0, f"the script does not parse: {checked.stderr}"
    return script


def test_temporal_runs_on_the_documented_images_without_auto_setup_or_tctl(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    assert [n for n, s in services.items() if "auto-setup" in str(s.get("image", ""))] == []
    uses_tctl = [
        n for n, s in services.items() if any(re.search(r"\btctl\b", x) for x in _strings(s))
    ]
    assert uses_tctl == [], f"{uses_tctl} still call tctl (deprecated): use the temporal CLI"
    server, version = _image(services["temporal"])
    assert server == "temporalio/server"
    for job in ONE_SHOT:  # the schema must be the one this server release expects
        assert _image(services[job]) == ("temporalio/admin-tools", version), job


def test_the_temporal_server_waits_for_its_schema_job(compose: dict[str, Any]) -> None:
    services = compose["services"]
    temporal, job = services["temporal"], services["temporal-schema"]
    assert temporal["depends_on"]["temporal-schema"]["condition"] == (
        "service_completed_successfully"
    )
    assert job["depends_on"]["postgres"]["condition"] == "service_healthy"
    # It connects to the server's Postgres as the server's user.
    env = {k: _interpolate(str(v), _env_file()) for k, v in job["environment"].items()}
    server = {k: _interpolate(str(v), _env_file()) for k, v in temporal["environment"].items()}
    assert (env["SQL_PLUGIN"], env["SQL_HOST"], env["SQL_PORT"]) == (
        server["DB"],
        server["POSTGRES_SEEDS"],
        server["DB_PORT"],
    )
    assert (env["SQL_USER"], env["SQL_PASSWORD"]) == (
        server["POSTGRES_USER"],
        server["POSTGRES_PWD"],
    )
    script = _script(job).replace("$schema", TEMPORAL_SCHEMA)
    steps = re.findall(r"temporal-sql-tool --db (\w+) ([\w-]+)(.*)", script)
    assert [(db, step) for db, step, _ in steps] == [
        (db, step)
        for db in ("temporal", "temporal_visibility")
        for step in ("create", "setup-schema", "update-schema")
    ]
    updates = [args.split() for _, step, args in steps if step == "update-schema"]
    assert updates == [
        ["-d", f"{TEMPORAL_SCHEMA}/temporal/versioned"],
        ["-d", f"{TEMPORAL_SCHEMA}/visibility/versioned"],
    ]


def test_wakeful_waits_for_the_namespace_the_temporal_cli_registered(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    job = services["temporal-namespace"]
    script = _script(job)
    assert "temporal operator cluster health" in script
    assert "temporal operator namespace create" in script
    assert job["depends_on"]["temporal"]["condition"] == "service_healthy"
    for name in WAKEFUL_SERVICES:
        wakeful = services[name]
        assert wakeful["depends_on"]["temporal-namespace"]["condition"] == (
            "service_completed_successfully"
        ), name
        assert (
            job["environment"]["NAMESPACE"] == wakeful["environment"]["WAKEFUL_TEMPORAL_NAMESPACE"]
        )
        assert (
            job["environment"]["TEMPORAL_ADDRESS"]
            == wakeful["environment"]["WAKEFUL_TEMPORAL_ADDRESS"]
        )


def test_every_awaited_service_can_be_awaited(compose: dict[str, Any]) -> None:
    """`service_healthy` needs a healthcheck; `service_completed_successfully` needs a job
    that exits and is not restarted after it succeeded."""
    services = compose["services"]
    for name, spec in services.items():
        for dep, cond in spec.get("depends_on", {}).items():
            target = services[dep]
            if cond["condition"] == "service_healthy":
                check = target.get("healthcheck", {})
                assert check.get("test") and not check.get("disable"), (name, dep)
            elif cond["condition"] == "service_completed_successfully":
                restart = str(target.get("restart", "no"))
                assert restart == "no" or restart.startswith("on-failure"), (dep, restart)
    assert {n for n, s in services.items() if "restart" not in s} == set(ONE_SHOT)


def test_third_party_images_are_pinned(compose: dict[str, Any]) -> None:
    own = compose["x-wakeful"]["image"]
    for name, spec in compose["services"].items():
        if spec.get("image") == own:
            continue
        image, tag = _image(spec)
        assert image and re.search(r"\d", tag) and tag != "latest", (
            f"{name}: {spec['image']} is not pinned to a version"
        )


def test_qdrant_image_is_compatible_with_the_installed_client(compose: dict[str, Any]) -> None:
    """qdrant-client warns on every connection when the server's minor version is more than
    one away from its own; the same check, with the client's own function."""
    image, tag = _image(compose["services"]["qdrant"])
    client = importlib.metadata.version("qdrant-client")
    assert image == "qdrant/qdrant"
    assert is_compatible(client, tag.removeprefix("v")), (
        f"{image}:{tag} against qdrant-client {client}: pin a server of the client's minor"
    )


def test_postgres_is_the_official_image_since_no_migration_needs_an_extension(
    compose: dict[str, Any],
) -> None:
    postgres = compose["services"]["postgres"]
    assert _image(postgres)[0] == "postgres"
    init = [v for v in postgres["volumes"] if "docker-entrypoint-initdb.d" in str(v)]
    assert init == [], "nothing to initialise: the migrations create what they use"
    needs = [
        str(path.relative_to(ROOT))
        for path in sorted(MIGRATIONS.rglob("*.py"))
        if re.search(r"create\s+extension", path.read_text(), re.IGNORECASE)
    ]
    assert sorted(MIGRATIONS.rglob("*.py")), f"no migrations under {MIGRATIONS}"
    assert needs == [], f"{needs} need an extension: provide it in the postgres service"
