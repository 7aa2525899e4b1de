"""An agent's documents on real Postgres: versions, supersession, and retrieval of their
chunks through the event index (the vector store is derived; Postgres decides what holds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wakeful.compiler.blocks import BlockKind
from wakeful.errors import UnknownAgentError, UserError
from wakeful.substrate.doc_chunks import DocumentFile, read_documents
from wakeful.substrate.embedders import HashingEmbedder
from wakeful.substrate.indexing import EventIndex, retrieved_blocks
from wakeful.substrate.retrieval import RetrievalConfig, RetrievalHit
from wakeful.substrate.store import TenantStore
from wakeful.substrate.vectors.memory import MemoryVectorStore

V1 = """# Runbook

## Key rotation

The checkout deploy key rotates every Tuesday at noon.

## Rollback

Run the rollback job from the release page.
"""
V2 = V1.replace("every Tuesday at noon", "on the first Monday of each month")


def words(text: str) -> int:
    return len(text.split())


def agent(ts: TenantStore, name: str = "a1") -> str:
    ts.upsert_agent(name, model="m", provider="anthropic", instructions="i", spec={})
    return name


def gather(index: EventIndex, ts: TenantStore, query: str) -> list[RetrievalHit]:
    return index.gather(ts, "a1", query=query, max_event_id=0, token_cap=500, count_tokens=words)


def test_add_is_versioned_unchanged_is_a_no_op_and_a_change_supersedes(
    tenant: TenantStore,
) -> None:
    agent(tenant)
    (first,) = tenant.add_documents("a1", [DocumentFile("runbook.md", V1)])
    assert (first.outcome, first.chunks, first.superseded) == ("added", 2, 0)
    (again,) = tenant.add_documents("a1", [DocumentFile("runbook.md", V1)])
    assert (again.outcome, again.superseded) == ("unchanged", 0)
    assert len(tenant.doc_chunks("a1", live_only=False)) == 2  # nothing written
    (changed,) = tenant.add_documents("a1", [DocumentFile("runbook.md", V2)])
    # Only the chunk that changed is superseded: the rollback section keeps its row.
    assert (changed.outcome, changed.chunks, changed.superseded) == ("replaced", 2, 1)
    (listed,) = tenant.documents("a1")
    assert (listed.path, listed.version, listed.chunks) == ("runbook.md", changed.version, 2)
    assert all("first Monday" in c.text or "Rollback" in c.heading for c in tenant.doc_chunks("a1"))
    assert len(tenant.doc_chunks("a1", live_only=False)) == 3  # one new row, not two
    assert tenant.remove_document("a1", "runbook.md") == 2
    assert tenant.documents("a1") == []
    with pytest.raises(UserError, match=r"agent 'a1' has no document 'runbook\.md'"):
        tenant.remove_document("a1", "runbook.md")
    with pytest.raises(UnknownAgentError, match="no agent 'ghost'"):
        tenant.add_documents("ghost", [DocumentFile("runbook.md", V1)])


def test_a_chunk_is_found_by_its_heading_and_a_superseded_one_never_again(
    tenant: TenantStore,
) -> None:
    agent(tenant)
    vectors = MemoryVectorStore()
    index = EventIndex(vectors, HashingEmbedder(dim=64), count_tokens=words)
    tenant.add_documents("a1", [DocumentFile("runbook.md", V1)])
    hits = gather(index, tenant, "key rotation")
    assert hits and hits[0].kind == "doc"
    assert "every Tuesday at noon" in hits[0].text
    block = retrieved_blocks(hits)[0]
    assert block.kind is BlockKind.RETRIEVED
    assert block.source == "doc:runbook.md#Runbook > Key rotation"

    tenant.add_documents("a1", [DocumentFile("runbook.md", V2)])
    hits = gather(index, tenant, "key rotation Tuesday noon")
    texts = " ".join(h.text for h in hits)
    assert "first Monday" in texts
    assert "every Tuesday at noon" not in texts
    # The old version's point is gone from the index; the unchanged rollback chunk kept its.
    assert vectors.count(tenant.name, "a1") == 2

    tenant.remove_document("a1", "runbook.md")
    assert gather(index, tenant, "key rotation") == []
    assert vectors.count(tenant.name, "a1") == 0


def test_a_file_edited_many_times_leaves_no_copies_to_crowd_other_files_out(
    tenant: TenantStore,
) -> None:
    # A changelog edited 40 times under a stable section: each version that superseded
    # every chunk left a dead copy of the stable one in the index, all ranking above the
    # other file's chunk, and a ranking 20 deep then held nothing but copies.
    agent(tenant)
    config = RetrievalConfig(candidates=20, tokens_per_candidate=1000)
    index = EventIndex(
        MemoryVectorStore(), HashingEmbedder(dim=64), config=config, count_tokens=words
    )
    stable = "## Key rotation\n\nThe deploy key rotation runs every Tuesday at noon.\n"
    for n in range(40):
        notes = f"# Notes\n\n{stable}\n## Changelog\n\nRelease {n} shipped.\n"
        tenant.add_documents("a1", [DocumentFile("notes.md", notes)])
        gather(index, tenant, "release shipped")  # indexed as a worker would, wake by wake
    other = "# Vault\n\n## Keys\n\nThe deploy key rotation is logged in the vault.\n"
    tenant.add_documents("a1", [DocumentFile("vault.md", other)])
    sources = {h.external_id for h in gather(index, tenant, "deploy key rotation Tuesday")}
    assert "doc:notes.md#Notes > Key rotation" in sources
    assert "doc:vault.md#Vault > Keys" in sources, sources


def test_a_section_changed_many_times_keeps_one_point_and_is_found(
    tenant: TenantStore,
) -> None:
    # Each version of a changed section was superseded but its point stayed: 40 versions
    # filled a 20-deep ranking with dead copies, and the live one was never retrieved.
    agent(tenant)
    vectors = MemoryVectorStore()
    config = RetrievalConfig(candidates=20, tokens_per_candidate=1000)
    index = EventIndex(vectors, HashingEmbedder(dim=64), config=config, count_tokens=words)
    for n in range(40):
        log = f"# Log\n\n## Latest release\n\nThe latest release shipped is release {n}.\n"
        tenant.add_documents("a1", [DocumentFile("log.md", log)])
        gather(index, tenant, "latest release shipped")
    assert vectors.count(tenant.name, "a1") == 1
    texts = [h.text for h in gather(index, tenant, "latest release shipped")]
    assert any("release 39" in t for t in texts), texts


def test_documents_of_another_agent_are_not_retrieved(tenant: TenantStore) -> None:
    agent(tenant)
    agent(tenant, "a2")
    tenant.add_documents("a2", [DocumentFile("runbook.md", V1)])
    index = EventIndex(MemoryVectorStore(), HashingEmbedder(dim=64), count_tokens=words)
    assert gather(index, tenant, "key rotation") == []


def test_a_batch_with_a_bad_file_stores_nothing(tenant: TenantStore, tmp_path: Path) -> None:
    agent(tenant)
    (tmp_path / "ok.md").write_text(V1, encoding="utf-8")
    (tmp_path / "bad.bin").write_bytes(b"\x00\x01")
    with pytest.raises(UserError, match=r"bad\.bin is a binary file"):
        tenant.add_documents("a1", read_documents(["ok.md", "bad.bin"], cwd=tmp_path))
    assert tenant.documents("a1") == []


def test_agent_documents_are_added_on_registration_or_refused_in_one_line(
    tenant: TenantStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wakeful.agents import Agent
    from wakeful.errors import ConfigError
    from wakeful.worker.serve import register_agent

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runbook.md").write_text(V1, encoding="utf-8")
    with pytest.raises(UserError, match="documents is one string"):
        Agent(name="a1", instructions="i", tenant=tenant.name, documents="runbook.md")  # type: ignore[arg-type]
    agent = Agent(name="a1", instructions="i", tenant=tenant.name, documents=["runbook.md"])
    assert agent.spec()["documents"] == ["runbook.md"]
    register_agent(tenant, agent)
    assert [(d.path, d.chunks) for d in tenant.documents("a1")] == [("runbook.md", 2)]
    register_agent(tenant, agent)  # unchanged: nothing new
    assert len(tenant.doc_chunks("a1", live_only=False)) == 2

    (tmp_path / "runbook.md").write_text(V2, encoding="utf-8")
    broken = Agent(
        name="a1", instructions="new", tenant=tenant.name, documents=["runbook.md", "gone.md"]
    )
    with pytest.raises(ConfigError) as err:
        register_agent(tenant, broken)
    assert str(err.value) == (
        "agent 'a1': documents: no such file or folder: 'gone.md'; give an existing path or a glob"
    )
    # Nothing of the broken registration was stored: the agent and its documents as before.
    assert tenant.get_agent("a1")["instructions"] == "i"
    assert "every Tuesday" in " ".join(c.text for c in tenant.doc_chunks("a1"))
