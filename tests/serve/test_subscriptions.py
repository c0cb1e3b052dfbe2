"""Resource subscriptions through the official client: the watcher's reloads reach the
sessions subscribed to the changed resources (2025 `resources/subscribe` on a transport with
sessions, 2026-07-28 `subscriptions/listen` everywhere), and nobody else."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated
from mcp.shared.exceptions import MCPError

from ep_mcp.config.env import resolve_environment
from ep_mcp.library.watch import PackWatcher
from ep_mcp.serve import subscriptions
from ep_mcp.serve.app import open_context
from ep_mcp.serve.auth import Access
from ep_mcp.serve.mcp.server import build_server

# the 2025 era's methods, deprecated by the SDK for 2026-07-28 clients, are what is tested
pytestmark = pytest.mark.filterwarnings(
    "ignore:resources/(un)?subscribe is removed:mcp.shared.exceptions.MCPDeprecationWarning"
)
WAIT_S = 60  # bounds a hang only: every wait below ends on an event
GARDENING = "ep://beta/file/gardening.md"


class Inbox:
    """The notifications a client was sent, in order, and a way to wait for the next."""

    def __init__(self) -> None:
        self.send, self.receive = anyio.create_memory_object_stream[tuple[str, str]](100)

    async def __call__(self, message: object) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ResourceUpdatedNotification):
            self.send.send_nowait(("updated", str(root.params.uri)))
        elif isinstance(root, types.ResourceListChangedNotification):
            self.send.send_nowait(("list_changed", ""))
        elif isinstance(root, types.PromptListChangedNotification):
            self.send.send_nowait(("prompts", ""))

    async def next(self) -> tuple[str, str]:
        with anyio.fail_after(WAIT_S):
            return await self.receive.receive()


@pytest.fixture
def served(fresh_packs: dict[str, Path], settings_for: Any) -> Any:
    """A ServeContext over fresh packs (alpha keyed), and a watcher telling its subscribers."""
    settings = resolve_environment(settings_for(fresh_packs, alpha_keys=("sk-alpha",)), {})
    serve, _ = open_context(settings)
    watcher = PackWatcher(serve.library, on_change=serve.changes.publish)
    yield serve, watcher, fresh_packs
    serve.library.close()


async def edit(watcher: PackWatcher, *files: tuple[Path, str | None]) -> None:
    """Write (or, with None, delete) files, then one watcher batch over them."""
    for path, text in files:
        if text is None:
            path.unlink()
        else:
            path.write_text(text, encoding="utf-8")
    await anyio.to_thread.run_sync(watcher.reload, [str(p) for p, _ in files])


@asynccontextmanager
async def legacy(serve: Any, inbox: Inbox, access: Access | None = None) -> AsyncIterator[Client]:
    server = build_server(serve, access, sessions=True)
    async with Client(server, mode="legacy", message_handler=inbox) as c:
        yield c


def test_a_session_hears_of_its_file_until_it_unsubscribes(served: Any) -> None:
    serve, watcher, packs = served
    beta = packs["beta"]

    async def go() -> None:
        inbox = Inbox()
        async with legacy(serve, inbox) as c:
            caps = c.server_capabilities.resources
            assert caps is not None and caps.subscribe and caps.list_changed
            await c.subscribe_resource(GARDENING)
            await c.subscribe_resource("ep://beta/files")
            await edit(watcher, (beta / "gardening.md", "# Gardening\n\nZebras eat tomatoes.\n"))
            # one batch: each URI once, in order; compost.md was not asked for
            assert await inbox.next() == ("updated", GARDENING)
            assert await inbox.next() == ("updated", "ep://beta/files")
            text = (await c.read_resource(GARDENING)).contents[0].text  # type: ignore[union-attr]
            assert "Zebras" in text
            await c.unsubscribe_resource(GARDENING)
            await edit(watcher, (beta / "gardening.md", "# Gardening\n\nOkapis now.\n"))
            # the same batch would have sent gardening.md before files: it sent files only
            assert await inbox.next() == ("updated", "ep://beta/files")
            await edit(watcher, (beta / "orchids.md", "# Orchids\n\nBright light.\n"))
            assert await inbox.next() == ("list_changed", "")
            assert await inbox.next() == ("updated", "ep://beta/files")
            assert len(serve.changes.sessions()) == 1
        assert serve.changes.sessions() == []  # the subscriptions ended with the session

    anyio.run(go)


def test_an_edit_on_disk_reaches_the_subscriber_through_the_real_watcher(served: Any) -> None:
    serve, _, packs = served
    watcher = PackWatcher(serve.library, debounce_ms=100, on_change=serve.changes.publish)

    async def go() -> None:
        inbox = Inbox()
        async with legacy(serve, inbox) as c:
            await c.subscribe_resource("ep://beta/file/compost.md")
            watcher.start()
            try:
                assert await anyio.to_thread.run_sync(watcher.ready.wait, WAIT_S)
                (packs["beta"] / "compost.md").write_text("# Compost\n\nTurn it weekly.\n")
                assert await inbox.next() == ("updated", "ep://beta/file/compost.md")
            finally:
                watcher.stop()

    anyio.run(go)


def test_a_listen_stream_hears_of_its_resources_and_of_added_files(served: Any) -> None:
    serve, watcher, packs = served
    beta = packs["beta"]

    async def go() -> None:
        async with Client(build_server(serve)) as c:  # 2026-07-28: no sessions needed
            caps = c.server_capabilities.resources
            assert caps is not None and caps.subscribe
            # a file URI in another spelling is the same resource
            wanted = ["ep://beta/file/gardening%2Emd"]
            async with c.listen(resource_subscriptions=wanted, resources_list_changed=True) as sub:
                assert sub.honored.resource_subscriptions == [GARDENING]
                await edit(watcher, (beta / "gardening.md", "# Gardening\n\nZebras.\n"))
                with anyio.fail_after(WAIT_S):
                    assert await anext(sub) == ResourceUpdated(uri=GARDENING)
                await edit(watcher, (beta / "compost.md", None))
                with anyio.fail_after(WAIT_S):
                    assert await anext(sub) == ResourcesListChanged()

    anyio.run(go)


@pytest.mark.parametrize(
    "uri",
    [
        "ep://alpha/file/overview.md",  # a keyed pack this access does not open
        "ep://alpha/manifest",
        "ep://beta/file/missing.md",
        "ep://beta/file/../alpha/overview.md",
        "test://watched-resource",
    ],
)
def test_what_a_session_cannot_read_it_cannot_subscribe_to(served: Any, uri: str) -> None:
    serve, _, _ = served
    beta_only = Access(frozenset({"beta"}), False)

    async def go() -> None:
        async with legacy(serve, Inbox(), beta_only) as c:
            with pytest.raises(MCPError) as read:
                await c.read_resource(uri)
            with pytest.raises(MCPError) as sub:
                await c.subscribe_resource(uri)
            assert (sub.value.error.code, sub.value.error.message) == (
                read.value.error.code,
                read.value.error.message,
            )
        async with Client(build_server(serve, beta_only)) as c:
            with pytest.raises(MCPError) as listen:
                async with c.listen(resource_subscriptions=[GARDENING, uri]):
                    pass
            assert listen.value.error.message == read.value.error.message

    anyio.run(go)


def test_a_keyed_packs_changes_reach_only_sessions_that_open_it(served: Any) -> None:
    serve, watcher, packs = served
    beta_only = Access(frozenset({"beta"}), False)
    files = "ep://beta/files"

    async def go() -> None:
        inbox = Inbox()
        async with (
            legacy(serve, inbox, beta_only) as old,
            Client(build_server(serve, beta_only)) as modern,
            modern.listen(resources_list_changed=True, resource_subscriptions=[files]) as sub,
        ):
            await old.subscribe_resource(files)
            # a file added to alpha (keyed), then an edit in beta: neither era's beta-only
            # session hears of the first (its list_changed would come before beta's news)
            await edit(watcher, (packs["alpha"] / "new.md", "# New\n\nAlpha secret.\n"))
            await edit(watcher, (packs["beta"] / "compost.md", "# Compost\n\nBeta news.\n"))
            assert await inbox.next() == ("updated", files)
            with anyio.fail_after(WAIT_S):
                assert await anext(sub) == ResourceUpdated(uri=files)

    anyio.run(go)


def test_subscriptions_per_session_are_capped(served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    serve, _, _ = served
    monkeypatch.setattr(subscriptions, "MAX_SUBSCRIPTIONS", 2)
    uris = ["ep://beta/file/gardening.md", "ep://beta/file/compost.md", "ep://beta/files"]

    async def go() -> None:
        async with legacy(serve, Inbox()) as c:
            await c.subscribe_resource(uris[0])
            await c.subscribe_resource(uris[1])
            await c.subscribe_resource(uris[1])  # again: still two
            with pytest.raises(MCPError, match="at most 2 resource subscriptions per session"):
                await c.subscribe_resource(uris[2])
            await c.unsubscribe_resource(uris[0])
            await c.subscribe_resource(uris[2])  # room again
        async with Client(build_server(serve)) as c:
            with pytest.raises(MCPError, match="at most 2 resource subscriptions per listen"):
                async with c.listen(resource_subscriptions=uris):
                    pass

    anyio.run(go)


def test_stateless_http_servers_offer_no_2025_subscriptions(served: Any) -> None:
    serve, _, _ = served

    async def go() -> None:
        async with Client(build_server(serve), mode="legacy") as c:  # as HTTP builds it
            caps = c.server_capabilities.resources
            assert caps is not None and not caps.subscribe and not caps.list_changed
            with pytest.raises(MCPError, match=r"[Mm]ethod not found"):
                await c.subscribe_resource(GARDENING)

    anyio.run(go)


@pytest.mark.parametrize("sessions", [True, False])
def test_without_a_watcher_no_subscriptions_are_offered(served: Any, sessions: bool) -> None:
    serve, _, _ = served
    serve.changes.watched = False  # as `serve --no-watch` and `--workers` run

    async def go() -> None:
        async with Client(build_server(serve, sessions=sessions), mode="legacy") as c:
            caps = c.server_capabilities.resources
            assert caps is not None and not caps.subscribe and not caps.list_changed
        async with Client(build_server(serve, sessions=sessions)) as c:
            caps = c.server_capabilities.resources
            assert caps is not None and not caps.subscribe and not caps.list_changed
            with pytest.raises(MCPError, match=r"[Mm]ethod not found"):
                async with c.listen(resource_subscriptions=[GARDENING]):
                    pass

    anyio.run(go)


def test_the_manifest_authority_and_skill_files_are_told_of_too(served: Any) -> None:
    serve, watcher, packs = served
    alpha = packs["alpha"]
    manifest = (alpha / "manifest.yaml").read_text()
    skill = "skill://alpha/concepts/ports.md"

    async def go() -> None:
        inbox = Inbox()
        async with legacy(serve, inbox) as c:  # every pack (stdio): alpha is readable
            for uri in ("ep://alpha/authority", "ep://alpha/manifest", skill):
                await c.subscribe_resource(uri)
            bigger = manifest.replace("in_scope: Routers and ports.", "in_scope: Routers.")
            await edit(watcher, (alpha / "manifest.yaml", bigger))
            assert await inbox.next() == ("updated", "ep://alpha/authority")
            assert await inbox.next() == ("updated", "ep://alpha/manifest")
            ports = (alpha / "concepts/ports.md").read_text() + "\nPort 22 is SSH.\n"
            await edit(watcher, (alpha / "concepts/ports.md", ports))
            assert await inbox.next() == ("updated", skill)
            text = (await c.read_resource(skill)).contents[0].text  # type: ignore[union-attr]
            assert "Port 22 is SSH." in text

    anyio.run(go)


def test_a_new_workflow_file_changes_the_prompt_list_in_both_eras(served: Any) -> None:
    serve, watcher, packs = served
    workflow = "---\ntitle: Repot\ntype: workflow\n---\n# Repot\n\n1. Lift the plant.\n"

    async def go() -> None:
        inbox = Inbox()
        async with (
            legacy(serve, inbox) as old,
            Client(build_server(serve)) as modern,
            modern.listen(prompts_list_changed=True) as sub,
        ):
            caps = old.server_capabilities.prompts
            assert caps is not None and caps.list_changed
            await edit(watcher, (packs["beta"] / "repot.md", workflow))
            assert await inbox.next() == ("prompts", "")
            assert await inbox.next() == ("list_changed", "")  # a file was added too
            with anyio.fail_after(WAIT_S):
                assert await anext(sub) == PromptsListChanged()
            assert "beta/repot" in [p.name for p in (await old.list_prompts()).prompts]

    anyio.run(go)
