"""`/openapi.json` against the live server: schemathesis generates requests from the document
and checks every response — no 5xx, a documented status, the documented content type, a body
matching its schema.

(`schemathesis.pytest.from_fixture` needs pytest internals that pytest 9 removed, so the cases
are drawn with hypothesis from each operation's strategy inside plain tests.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from workbench_support import serving, settings_for

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is a dev extra")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = (
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
)


@pytest.fixture(scope="module")
def one_pack_url(wb_root: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The example pack alone, so most generated searches reach the engine (200s); the
    three-pack server is checked too, where most are refused (400/401/404)."""
    from ep_mcp.serve.app import open_context
    from ep_mcp.serve.http.app import create_app

    one = settings_for(tmp_path_factory.mktemp("one"), [{"path": str(wb_root / "example")}])
    serve, ring = open_context(one)
    try:
        with serving(create_app(serve, one.server, ring)) as url:
            yield url
    finally:
        serve.library.close()


BUDGET = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def check_every_operation(base: str) -> int:
    """Generate cases for every operation of the live document; return how many ran."""
    api = schemathesis.openapi.from_url(f"{base}/openapi.json")
    ran = 0
    for result in api.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @BUDGET
        def run(case: Any) -> None:
            nonlocal ran
            ran += 1
            case.call_and_validate(checks=CHECKS)

        run()
    return ran


def test_one_pack_server_matches_its_openapi_document(one_pack_url: str) -> None:
    assert check_every_operation(one_pack_url) > 100


def test_three_pack_server_with_a_keyed_pack_matches_its_openapi_document(live_url: str) -> None:
    assert check_every_operation(live_url) > 100
