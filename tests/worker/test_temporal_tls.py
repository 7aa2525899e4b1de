"""TLS and mTLS to a real Temporal server, configured only through ``TEMPORAL_*`` variables.

``temporal server start-dev`` has no TLS options (the installed CLI offers none), so the dev
server sits behind a TLS-terminating proxy, the way a secured cluster often sits behind a
load balancer: the client's TLS handshake (CA trust, server name, client certificate) is
real, and the proxy refuses a client without a certificate when mTLS is on.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import ssl
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509  # installed with mcp (pyjwt[crypto])
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from temporalio import workflow
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from wakeful.worker.client import connect

SERVER_NAME = "temporal.test"  # not the address's host: the client must send it (SNI)


@workflow.defn(sandboxed=False)
class Echo:
    @workflow.run
    async def run(self, text: str) -> str:
        return f"echo: {text}"


@dataclass
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _issue(
    name: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    signer: ec.EllipticCurvePrivateKey,
    *,
    ca: bool = False,
    server: bool = False,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(SERVER_NAME), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    elif not ca:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    return builder.sign(signer, hashes.SHA256())


def _write(path: Path, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey | None) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    if key is not None:
        path.with_suffix(".key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "wakeful test CA")])
    ca = _issue("wakeful test CA", ca_key, ca_name, ca_key, ca=True)
    server_key, client_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    server = _issue(SERVER_NAME, server_key, ca_name, ca_key, server=True)
    client = _issue("wakeful worker", client_key, ca_name, ca_key)
    return Pki(
        ca=_write(d / "ca.pem", ca, None),
        server_cert=_write(d / "server.pem", server, server_key),
        server_key=d / "server.key",
        client_cert=_write(d / "client.pem", client, client_key),
        client_key=d / "client.key",
    )


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError, ssl.SSLError):
            await writer.wait_closed()


@contextlib.asynccontextmanager
async def tls_proxy(pki: Pki, upstream: str, *, mtls: bool) -> AsyncIterator[int]:
    """TLS (HTTP/2 by ALPN, as gRPC needs) on a local port, plaintext gRPC to ``upstream``."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki.server_cert, pki.server_key)
    ctx.set_alpn_protocols(["h2"])
    if mtls:
        ctx.load_verify_locations(pki.ca)
        ctx.verify_mode = ssl.CERT_REQUIRED
    host, port = upstream.rsplit(":", 1)
    tasks: set[asyncio.Task[None]] = set()

    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection(host, int(port))
        pipes = [
            asyncio.create_task(_pipe(client_r, server_w)),
            asyncio.create_task(_pipe(server_r, client_w)),
        ]
        tasks.update(pipes)
        await asyncio.gather(*pipes)

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=ctx)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


async def _describe_and_run(env: dict[str, str]) -> None:
    client = await connect(environ=env)  # no address, no namespace: all from TEMPORAL_*
    described = await client.workflow_service.describe_namespace(
        DescribeNamespaceRequest(namespace="default")
    )
    assert described.namespace_info.name == "default"
    queue = f"tls-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=queue, workflows=[Echo]):
        result = await client.execute_workflow(
            Echo.run, "over TLS", id=f"echo-{uuid.uuid4().hex}", task_queue=queue
        )
    assert result == "echo: over TLS"


def _env(tmp_path: Path, pki: Pki, port: int) -> dict[str, str]:
    """Only Temporal's own variables: address, server CA and the name the cert carries."""
    return {
        "TEMPORAL_CONFIG_FILE": str(tmp_path / "absent.toml"),  # no profiles file
        "TEMPORAL_ADDRESS": f"127.0.0.1:{port}",
        "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(pki.ca),
        "TEMPORAL_TLS_SERVER_NAME": SERVER_NAME,
    }


async def test_tls_with_server_ca_from_variables(
    temporal_dev: WorkflowEnvironment, pki: Pki, tmp_path: Path
) -> None:
    upstream = temporal_dev.client.service_client.config.target_host
    async with tls_proxy(pki, upstream, mtls=False) as port:
        # Plaintext, as every connection was before TEMPORAL_TLS_* was read, is refused...
        with pytest.raises(RuntimeError, match=r"(?i)connect"):
            await connect(
                f"127.0.0.1:{port}",
                "default",
                environ=_env(tmp_path, pki, port) | {"TEMPORAL_TLS": "false"},
            )
        # ...the server CA and name from the variables make it through.
        await _describe_and_run(_env(tmp_path, pki, port))


async def test_mtls_with_client_certificate_from_variables(
    temporal_dev: WorkflowEnvironment, pki: Pki, tmp_path: Path
) -> None:
    upstream = temporal_dev.client.service_client.config.target_host
    async with tls_proxy(pki, upstream, mtls=True) as port:
        env = _env(tmp_path, pki, port)
        # Without a client certificate the server refuses the handshake...
        with pytest.raises(RuntimeError, match=r"(?i)connect"):
            await connect(environ=env)
        # ...with one, the worker connects and runs a workflow.
        env["TEMPORAL_TLS_CLIENT_CERT_PATH"] = str(pki.client_cert)
        env["TEMPORAL_TLS_CLIENT_KEY_PATH"] = str(pki.client_key)
        await _describe_and_run(env)


async def test_api_key_over_tls_from_variables(
    temporal_dev: WorkflowEnvironment, pki: Pki, tmp_path: Path
) -> None:
    """Temporal Cloud's shape: an address and an API key (sent as the bearer token of every
    call; the dev server accepts any), over TLS, from Temporal's own variables."""
    upstream = temporal_dev.client.service_client.config.target_host
    async with tls_proxy(pki, upstream, mtls=False) as port:
        env = _env(tmp_path, pki, port) | {"TEMPORAL_API_KEY": "k-cloud-123"}
        client = await connect(environ=env)
        assert client.api_key == "k-cloud-123"
        assert client.service_client.config.tls  # on, with the CA and name from the variables
        await _describe_and_run(env)
