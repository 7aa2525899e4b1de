"""Settings: the one place Wakeful reads environment variables.

Every other module takes a :class:`Settings` (or the values it needs) as an argument, so
tests build one with keyword arguments and nothing depends on the process environment.
Variables are ``WAKEFUL_<FIELD>``; provider keys and base URLs are also read from the names
their SDKs use (``ANTHROPIC_API_KEY``...), the ``WAKEFUL_`` name winning when both are set.

A missing URL means "run it here": no ``database_url`` starts embedded Postgres, no
``temporal_address`` the Temporal dev server, no ``qdrant_url`` opens a Qdrant Edge shard.
Temporal's own configuration (``TEMPORAL_ADDRESS``, ``TEMPORAL_NAMESPACE``, a profile) fills
in the Temporal address and namespace when no ``WAKEFUL_TEMPORAL_*`` variable sets them.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from wakeful.errors import ConfigError
from wakeful.names import NAME_RULE, TenantName, is_name
from wakeful.worker import ports
from wakeful.worker.temporal_env import load_profile

if TYPE_CHECKING:
    from temporalio.envconfig import ClientConfigProfile

EMBEDDER_KINDS = ("hashing", "openai", "sentence-transformers", "wordllama")

__all__ = [
    "APPROVER_RULE",
    "EMBEDDER_KINDS",
    "ENV_PREFIX",
    "MIN_APPROVAL_TOKEN_CHARS",
    "STATE_DIR_NAME",
    "Settings",
    "env_var_names",
    "find_state_dir",
    "is_approver_name",
    "load_settings",
    "retired_env_vars",
    "unknown_env_vars",
]

ENV_PREFIX = "WAKEFUL_"
STATE_DIR_NAME = ".wakeful"
# Who may approve a waiting tool call over HTTP: a name, and a bearer token of its own.
APPROVER_RULE = "1-64 characters of A-Z a-z 0-9 _ . @ + -, starting with a letter or digit"
_APPROVER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,63}")
MIN_APPROVAL_TOKEN_CHARS = 32
_APPROVAL_TOKEN = re.compile(r"[\x21-\x7e]{32,512}")  # MIN_APPROVAL_TOKEN_CHARS or more
# WAKEFUL_* names Wakeful reads that are not settings: the agents a container's worker
# serves (docker-compose, deploy/wakeful.env.example) and the test suite's snapshot switch.
_NOT_SETTINGS = frozenset({"WAKEFUL_AGENTS", "WAKEFUL_UPDATE_SNAPSHOTS"})
# WAKEFUL_* names that were settings once and are read no more, each with what to use instead:
# set, they change nothing, which the CLI says rather than let them look like they work.
_RETIRED = MappingProxyType(
    {
        "WAKEFUL_ACTIVITY_TIMEOUT_S": "each non-model activity's timeout is fixed for that "
        "activity (a tool's is its own timeout_s)",
        "WAKEFUL_MODEL_TIMEOUT_S": "one model call attempt is bounded by "
        "WAKEFUL_MODEL_ATTEMPT_TIMEOUT_S",
    }
)


def is_approver_name(name: str) -> bool:
    """Whether ``name`` can name an approver (:data:`APPROVER_RULE`)."""
    return _APPROVER.fullmatch(name) is not None


def _also(field: str, plain: str) -> AliasChoices:
    """Read ``WAKEFUL_<FIELD>`` first, then the SDK's own variable name.

    Keyword arguments still use the field name (``populate_by_name``).
    """
    return AliasChoices(ENV_PREFIX + field.upper(), plain)


class Settings(BaseSettings):
    """Typed configuration for the worker, the ingress, the CLI and the embedded stack."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_ignore_empty=True,  # `WAKEFUL_DATABASE_URL=` in an env file means "unset"
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        validate_default=True,
    )

    # --- where things live -------------------------------------------------------------
    state_dir: Path = Field(
        Path(".wakeful"),
        description="Directory holding all embedded state: Postgres data, the Temporal "
        "SQLite file, the Qdrant Edge shard, logs and stack.json. One directory, one stack.",
    )
    database_url: str | None = Field(
        None,
        description="Postgres URL (postgres://, postgresql:// or postgresql+psycopg://), "
        "kept in SQLAlchemy+psycopg form. Unset: the embedded Postgres is started.",
    )
    temporal_address: str | None = Field(
        None,
        description="Temporal frontend as host:port (or a URL such as http://host:7233); "
        "overrides TEMPORAL_ADDRESS and the Temporal profile's address. Unset (and no "
        "Temporal address configured): the embedded Temporal dev server is started.",
    )
    temporal_namespace: str = Field(
        "default",
        min_length=1,
        description="Temporal namespace the workflows run in; overrides TEMPORAL_NAMESPACE "
        "and the Temporal profile's namespace.",
    )
    task_queue: str = Field(
        "wakeful", min_length=1, description="Temporal task queue the worker polls."
    )
    worker_wait_s: float = Field(
        5.0,
        ge=0,
        le=3600,
        description="How long `trigger`, `consolidate` and `approve` wait for a worker to poll "
        "the task queue before refusing, delivering nothing (a worker started a moment ago "
        "may not have polled yet).",
    )
    activity_threads: int = Field(
        32,
        ge=1,
        le=1024,
        description="Activities one worker runs at once, sync ones (compiles, tools, "
        "substrate writes) each in a thread. Model calls are async but take a slot too: a "
        "worker waits on at most this many model calls at a time (wakeful bench fleet measures "
        "how many agents woken at once this serves).",
    )
    workflow_sandbox: bool = Field(
        True,
        description="Run workflows in Temporal's sandbox, which stops a non-deterministic "
        "call at run time. Off: less worker CPU per wake (wakeful bench history measures it); "
        "Wakeful's workflows are replay-tested, and agents' code runs in activities, never in "
        "a workflow.",
    )
    temporal_port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="Preferred gRPC port of the embedded Temporal server. Unset: the first "
        "free port from 7233 upward, kept across restarts.",
    )
    embedder: str = Field(
        "hashing",
        description="The retrieval embedder: 'hashing' (lexical, offline; the default), "
        "'openai' or 'openai:<model>' (an OpenAI-compatible embeddings API; needs an API key), "
        "'sentence-transformers' or 'sentence-transformers:<model>' (needs that package), "
        "'wordllama' (a 256-dimension static embedding model shipped in the wordllama wheel, "
        "offline; pip install 'wakeful[semantic]'). "
        "Vectors are kept per embedder name and never mixed: switching rebuilds the index and "
        "indexes every event again, from the first.",
    )
    search_attributes: bool = Field(
        True,
        description="Register Wakeful's search attributes (WakefulTenant, WakefulAgent, "
        "WakefulSession) on the namespace at worker start, where the server allows it, and "
        "tag agents' workflows with them; false: never touch the namespace's attributes.",
    )
    temporal_ui: bool = Field(
        True,
        description="Serve the Temporal Web UI from the embedded Temporal server (`wakeful "
        "stack up` and `status` print its URL); false saves memory and a port on small "
        "machines.",
    )
    temporal_ui_port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="Preferred port of the embedded Temporal Web UI. Unset: the first free "
        "port from 8233 upward, kept across restarts.",
    )
    qdrant_url: str | None = Field(
        None,
        description="Qdrant server URL (http(s)://host:6333). Unset: a Qdrant Edge shard "
        "is opened in-process at qdrant_path.",
    )
    qdrant_api_key: SecretStr | None = Field(None, description="API key for qdrant_url.")
    qdrant_path: Path = Field(
        default_factory=lambda data: Path(data.get("state_dir", Path(".wakeful"))) / "qdrant",
        description="Directory of the Qdrant Edge shard; defaults to <state_dir>/qdrant.",
    )
    policy_dir: Path | None = Field(
        None,
        description="Directory of compile policies (*.toml, *.yaml), read when the worker "
        "starts: a policy is named by its name field, else its file's stem, and an agent "
        "uses it with Agent(policy=name). A file that does not validate, or an agent "
        "naming a policy that is not there, stops the worker at start. Unset: only the "
        "built-in default policy (and policy files agents name by path).",
    )
    skills_dir: Path | None = Field(
        None,
        description="Directory of skills (<name>/SKILL.md with name and description in its "
        "front matter), read when the worker starts: every agent it serves gets them besides "
        "its own (Agent(skills_dir=...), whose skills win on a name both have). A file that "
        "does not validate stops the worker at start. Unset: agents' own skills only.",
    )
    intent_classifier: str = Field(
        "rules",
        description="What names the intents of a goal that came without any, for the "
        "policy's intent triggers: rules (the policy's [[intents]] patterns), model (each "
        "agent's own model picks among them) or model:<provider>:<model> (e.g. "
        "model:anthropic:claude-haiku-4-5). A failed model call falls back to the rules; "
        "the ledger says which classified.",
    )
    intent_classifier_timeout_s: float = Field(
        20.0,  # activities.intent_setting.TIMEOUT_S, not imported: the CLI loads settings
        gt=0,
        le=40,
        description="Seconds a model classification of a goal's intents may take before the "
        "rules classify it instead (at most 40: it runs inside the compile activity, whose "
        "own timeout is 60 s).",
    )
    model_attempt_timeout_s: float = Field(
        240.0,  # below retries.MODEL_TIMEOUT (300 s), not imported: the CLI loads settings
        gt=0,
        lt=300,
        description="Seconds one attempt at a provider (each fallback's, when a call fails "
        "over) may take to reply in full before it is abandoned as a timeout: the call goes "
        "to the next fallback, or is retried. Cuts a reply that never finishes, whose bytes "
        "keep arriving, which no read timeout ends (below 300: the model call's own timeout).",
    )
    stream_model_calls: bool = Field(
        True,
        description="Model calls use the providers' streaming APIs and publish what the "
        "model says as it comes, for `wakeful trigger --stream` and Client.stream to follow "
        "(the stored reply is the same either way). false: every call unstreamed.",
    )
    tenant: TenantName = Field(
        "default",
        description="Tenant this process acts for; every substrate row is scoped by it "
        f"({NAME_RULE}).",
    )

    # --- model providers (SDK retries stay off: Temporal owns retries) ---------------
    anthropic_api_key: SecretStr | None = Field(
        None,
        validation_alias=_also("anthropic_api_key", "ANTHROPIC_API_KEY"),
        description="Anthropic API key; also read from ANTHROPIC_API_KEY.",
    )
    anthropic_base_url: str | None = Field(
        None,
        validation_alias=_also("anthropic_base_url", "ANTHROPIC_BASE_URL"),
        description="Anthropic API base URL (the provider simulator in tests and the demo); "
        "also read from ANTHROPIC_BASE_URL.",
    )
    openai_api_key: SecretStr | None = Field(
        None,
        validation_alias=_also("openai_api_key", "OPENAI_API_KEY"),
        description="OpenAI API key; also read from OPENAI_API_KEY.",
    )
    openai_base_url: str | None = Field(
        None,
        validation_alias=_also("openai_base_url", "OPENAI_BASE_URL"),
        description="OpenAI API base URL; also read from OPENAI_BASE_URL.",
    )

    # --- webhook ingress ------------------------------------------------------------
    webhook_secret: SecretStr | None = Field(
        None,
        description="Signing secret of the default tenant's webhooks (HMAC-SHA256). Unset: "
        "the ingress refuses every delivery for that tenant rather than accept unsigned ones.",
    )
    webhook_tenant_secrets: dict[str, SecretStr] = Field(
        default_factory=dict,
        description='Signing secrets of other tenants, as JSON: {"tenant": "secret"}.',
    )
    webhook_max_body_bytes: int = Field(
        262_144, gt=0, description="Largest webhook body accepted; larger gets 413."
    )
    webhook_replay_window_s: int = Field(
        300,
        gt=0,
        description="How far a signature timestamp may be from now, in seconds; older or "
        "newer deliveries get 401 so a captured request cannot be replayed later.",
    )
    approval_tokens: dict[str, SecretStr] = Field(
        default_factory=dict,
        description='Approvers of the default tenant\'s tool calls, as JSON: {"name": "token"}. '
        "A POST /approvals/... with 'Authorization: Bearer <token>' decides as that name. "
        f"Each token is {MIN_APPROVAL_TOKEN_CHARS}-512 visible ASCII characters (`openssl "
        "rand -hex 32`), one per approver, and never a webhook secret. Unset: the ingress refuses "
        "every approval for the tenant.",
    )
    approval_tenant_tokens: dict[str, dict[str, SecretStr]] = Field(
        default_factory=dict,
        description='Approvers of other tenants, as JSON: {"tenant": {"name": "token"}}.',
    )
    ingress_host: str = Field("127.0.0.1", description="Address the ingress binds.")
    ingress_port: int = Field(8080, ge=1, le=65535, description="Port the ingress binds.")
    ingress_header_timeout_s: float = Field(
        5.0,
        gt=0,
        le=3600,
        description="Seconds a connection to the ingress has to send a request's line and "
        "headers (from opening, or from the first byte of the next request on a kept-alive "
        "connection); an idle or trickling connection is closed then.",
    )
    ingress_max_connections_per_client: int = Field(
        32,
        ge=0,
        description="Connections one client address may hold open to the ingress at once; "
        "more are closed as they open, so one client cannot take every connection slot. 0: "
        "no per-client limit (behind a reverse proxy, where every client is the proxy's "
        "address, limit clients at the proxy instead).",
    )

    # --- telemetry ------------------------------------------------------------------
    # The standard OTEL_* variables are read too (the WAKEFUL_OTEL_* name wins). By default
    # Wakeful records to the process's global providers and installs none of its own.
    otel_exporter: Literal["none", "console", "otlp"] = Field(
        "none",
        validation_alias=_also("otel_exporter", "OTEL_TRACES_EXPORTER"),
        description="Where OpenTelemetry spans and metrics go when no global provider is "
        "set: none (only to a provider the process set itself), console or otlp; also read "
        "from OTEL_TRACES_EXPORTER.",
    )
    otel_metrics_exporter: Literal["none", "console", "otlp"] | None = Field(
        None,
        validation_alias=_also("otel_metrics_exporter", "OTEL_METRICS_EXPORTER"),
        description="Where OpenTelemetry metrics go when no global meter provider is set: "
        "none, console or otlp; unset, where otel_exporter sends spans; also read from "
        "OTEL_METRICS_EXPORTER.",
    )
    otel_endpoint: str | None = Field(
        None,
        validation_alias=_also("otel_endpoint", "OTEL_EXPORTER_OTLP_ENDPOINT"),
        description="OTLP collector endpoint when otel_exporter is otlp; also read from "
        "OTEL_EXPORTER_OTLP_ENDPOINT.",
    )
    otel_service_name: str = Field(
        "wakeful-worker",
        validation_alias=_also("otel_service_name", "OTEL_SERVICE_NAME"),
        description="service.name of the worker's telemetry; also read from OTEL_SERVICE_NAME.",
    )
    otel_capture_message_content: bool = Field(
        False,
        validation_alias=_also(
            "otel_capture_message_content", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
        ),
        description="Record prompts, replies and tool arguments/results (redacted) on the "
        "GenAI spans; also read from OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT.",
    )

    # --- timeouts (explicit, so nothing waits forever) -----------------------------
    connect_timeout_s: float = Field(
        10.0, gt=0, description="How long a client waits to connect to Postgres/Temporal/Qdrant."
    )
    stack_start_timeout_s: float = Field(
        60.0,
        gt=0,
        description="How long `stack up` waits for an embedded server to become ready, and "
        "for another process that is starting or stopping the same stack.",
    )
    stack_stop_timeout_s: float = Field(
        20.0,
        gt=0,
        description="How long `stack down` waits for a server to exit before killing it.",
    )

    @staticmethod
    def sqlalchemy_url(url: str) -> str:
        """``url`` in the ``postgresql+psycopg://`` form SQLAlchemy needs."""
        return ports.sqlalchemy_url(url)

    @staticmethod
    def libpq_url(url: str) -> str:
        """``url`` in the ``postgresql://`` form psycopg.connect needs."""
        return ports.libpq_url(url)

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str | None) -> str | None:
        return None if value is None or not value.strip() else ports.sqlalchemy_url(value)

    @field_validator("temporal_address")
    @classmethod
    def _temporal_address(cls, value: str | None) -> str | None:
        return None if value is None or not value.strip() else ports.temporal_target(value)

    @field_validator("qdrant_url", "anthropic_base_url", "openai_base_url", "otel_endpoint")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("expected an http:// or https:// URL")
        return value.rstrip("/")

    @field_validator("embedder")
    @classmethod
    def _embedder(cls, value: str) -> str:
        kind = value.split(":", 1)[0].strip()
        if kind not in EMBEDDER_KINDS:
            raise ValueError(f"use one of {', '.join(EMBEDDER_KINDS)} (optionally :<model>)")
        return value.strip()

    @field_validator("intent_classifier")
    @classmethod
    def _intent_classifier(cls, value: str) -> str:
        from wakeful.compiler.intents import parse_classifier_setting  # the compiler: lazily

        parse_classifier_setting(value)  # raises ValueError saying what is accepted
        return value.strip() or "rules"

    @field_validator("webhook_tenant_secrets")
    @classmethod
    def _secret_tenants(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        # Each key is a tenant that the ingress serves: the same rule as every tenant name.
        bad = sorted(t for t in value if not is_name(t))
        if bad:
            raise ValueError(f"tenant name {bad[0]!r} is invalid: use {NAME_RULE}")
        return value

    @field_validator("approval_tokens")
    @classmethod
    def _approvers(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for name, token in value.items():
            if not is_approver_name(name):
                raise ValueError(f"approver name {name[:80]!r} is invalid: use {APPROVER_RULE}")
            if not _APPROVAL_TOKEN.fullmatch(token.get_secret_value()):
                raise ValueError(
                    f"the token of approver {name!r} must be {MIN_APPROVAL_TOKEN_CHARS}-512 "
                    "visible ASCII characters without spaces (e.g. `openssl rand -hex 32`)"
                )
        return value

    @field_validator("approval_tenant_tokens")
    @classmethod
    def _tenant_approvers(
        cls, value: dict[str, dict[str, SecretStr]]
    ) -> dict[str, dict[str, SecretStr]]:
        bad = sorted(t for t in value if not is_name(t))
        if bad:
            raise ValueError(f"tenant name {bad[0]!r} is invalid: use {NAME_RULE}")
        for approvers in value.values():
            cls._approvers(approvers)
        return value

    @model_validator(mode="after")
    def _approval_tokens_are_their_own(self) -> Settings:
        # A token names one approver, and is not a credential of anything else: a webhook
        # sender holding its secret must not be able to approve with it.
        tokens = [t.get_secret_value() for t in self.approval_tokens.values()] + [
            t.get_secret_value()
            for approvers in self.approval_tenant_tokens.values()
            for t in approvers.values()
        ]
        if len(set(tokens)) != len(tokens):
            raise ValueError("two approvers share a token: give each approver a token of its own")
        secrets = {s.get_secret_value() for s in self.webhook_tenant_secrets.values()}
        if self.webhook_secret is not None:
            secrets.add(self.webhook_secret.get_secret_value())
        if secrets.intersection(tokens):
            raise ValueError(
                "an approval token is also a webhook secret: approvals need a credential of "
                "their own (e.g. `openssl rand -hex 32`)"
            )
        return self

    @field_validator("state_dir", "qdrant_path", "policy_dir", "skills_dir")
    @classmethod
    def _expand_home(cls, value: Path | None) -> Path | None:
        return None if value is None else value.expanduser()


def env_var_names(field: str) -> tuple[str, ...]:
    """The environment variables that set ``field``, preferred first."""
    info = Settings.model_fields[field]
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(str(choice) for choice in alias.choices)
    return (ENV_PREFIX + field.upper(),)


def find_state_dir(start: Path) -> Path | None:
    """The nearest ``.wakeful`` directory in ``start`` or above it, as git finds ``.git``."""
    here = start.resolve()
    for folder in (here, *here.parents):
        candidate = folder / STATE_DIR_NAME
        if candidate.is_dir():
            return candidate
    return None


def unknown_env_vars(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """``WAKEFUL_*`` variables that set nothing, each with the closest known name (or None).

    pydantic-settings ignores them, so a typo such as ``WAKEFUL_DATABSE_URL`` would leave
    the default in place without a word.
    """
    known = {name for field in Settings.model_fields for name in env_var_names(field)}
    known = {name for name in known if name.startswith(ENV_PREFIX)}
    found = []
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX) or name in known or name in _NOT_SETTINGS:
            continue
        if name in _RETIRED:  # named by retired_env_vars, with what replaced it
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.8)
        found.append((name, close[0] if close else None))
    return found


def retired_env_vars(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """``WAKEFUL_*`` variables set in ``environ`` that were settings once and are read no
    more, each with what to use instead."""
    return [(name, instead) for name, instead in sorted(_RETIRED.items()) if name in environ]


def _state_dir_given(overrides: Iterable[str]) -> bool:
    return "state_dir" in overrides or bool(os.environ.get(ENV_PREFIX + "STATE_DIR", "").strip())


def load_settings(**overrides: Any) -> Settings:
    """Build :class:`Settings` from the environment plus ``overrides``.

    Unless ``WAKEFUL_STATE_DIR`` (or a ``state_dir`` override) says where, the state
    directory is the nearest ``.wakeful`` in the current directory or above it, so a
    command run from a project's subfolder finds the project's stack; where there is none,
    it is ``./.wakeful``.

    Raises :class:`~wakeful.errors.ConfigError` with one line per the CLI's needs: which
    variable is wrong and what it accepts, never the value of a secret.
    """
    if not _state_dir_given(overrides):
        nearest = find_state_dir(Path.cwd())
        if nearest is not None:
            overrides["state_dir"] = nearest
    overrides = {**_temporal_profile(overrides), **overrides}
    try:
        return Settings(**overrides)
    except ValidationError as err:
        raise ConfigError(_describe(err)) from None
    except SettingsError as err:  # a structured (JSON) variable that does not parse
        found = re.search(r'field "(\w+)"', str(err))
        field = found.group(1) if found else None
        if field not in Settings.model_fields:
            raise ConfigError(f"bad configuration: {err}") from None
        names = " / ".join(env_var_names(field))
        hint = Settings.model_fields[field].description or ""
        raise ConfigError(f"bad configuration: {names} is not valid JSON; {hint}") from None


def _temporal_profile(overrides: Mapping[str, Any]) -> dict[str, str]:
    """Address and namespace from Temporal's environment configuration (``TEMPORAL_ADDRESS``,
    ``TEMPORAL_NAMESPACE``, the active profile) for the fields no ``WAKEFUL_TEMPORAL_*``
    variable or override sets. An address found there is a Temporal to use, so the embedded
    dev server is not started."""
    wanted = [
        field
        for field in ("temporal_address", "temporal_namespace")
        if field not in overrides and not os.environ.get(ENV_PREFIX + field.upper(), "").strip()
    ]
    if not wanted:
        return {}
    profile = load_profile()
    if "temporal_address" in wanted and not profile.address and _secured(profile):
        # Without an address the embedded dev server would start and the TLS handshake or
        # API key would fail against it: say what is missing instead.
        raise ConfigError(
            "Temporal's environment configuration sets TLS or an API key but no address:"
            " set TEMPORAL_ADDRESS (or the profile's address) to the cluster they are for,"
            " or unset them to use the embedded dev server"
        )
    found = {"temporal_address": profile.address, "temporal_namespace": profile.namespace}
    return {field: value for field in wanted if (value := found[field])}


def _secured(profile: ClientConfigProfile) -> bool:
    """Whether the profile asks for an API key or TLS (not merely turns TLS off)."""
    tls = profile.tls
    return bool(profile.api_key) or (tls is not None and not tls.disabled)


def _describe(err: ValidationError) -> str:
    problems = []
    for item in err.errors(include_url=False):
        if item["type"] == "default_factory_not_called":
            continue  # a consequence of another error, reported on its own
        where = str(item["loc"][0]) if item["loc"] else "?"
        field = _field_for(where)
        msg = str(item["msg"]).removeprefix("Value error, ")
        if field is None or item["type"] == "extra_forbidden":
            problems.append(f"unknown setting {where!r}")
            continue
        names = " / ".join(env_var_names(field))
        problems.append(f"{names}={_shown(field, item['input'])} is invalid: {msg}")
    return "bad configuration: " + "; ".join(problems)


def _shown(field: str, value: object) -> str:
    """The rejected value as it may appear in a log: secrets hidden, passwords masked."""
    if "secret" in field or field.endswith("_key"):
        return "<hidden>"
    text = _URL_PASSWORD.sub(r"\1***@", repr(value))
    return text if len(text) <= 60 else text[:57] + "..."


_URL_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")


def _field_for(name: str) -> str | None:
    """Map a validation error location (a field name or an alias) back to the field."""
    if name in Settings.model_fields:
        return name
    for field in Settings.model_fields:
        if name in env_var_names(field):
            return field
    return None
