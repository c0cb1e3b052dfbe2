"""Range and choice checks of the settings that types alone cannot express.

Allowed values come from the config's enums (``Fusion``, ``VectorEngine``), never a list here.
Every check adds to one list, so a config with three mistakes reports three problems at once.
"""

from __future__ import annotations

import datetime
import difflib
from collections.abc import Sequence
from enum import StrEnum

from ep_mcp.config.model import (
    DEFAULT_RERANK_MODEL,
    Fusion,
    IndexEngine,
    RerankerKind,
    Settings,
    Transport,
    VectorEngine,
    memory_mb,
)
from ep_mcp.config.schema import did_you_mean

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
MIN_BUILD_MB, MAX_BUILD_MB = 64, 64 * 1024  # index.pg_build_memory (PostgreSQL's default is 64)
MAX_HEADER_TIMEOUT_S = 600.0  # server.header_timeout_s: a bound, not "forever"

_UNIT_INTERVAL = (
    "mmr_lambda",
    "graph_decay",
    "score_ratio",
    "vector_weight",
    "text_weight",
    "lexical_coverage_floor",
    "length_penalty",
    "freshness_penalty",
    "one_leg_factor",
)
_AT_LEAST_ONE = (
    "rrf_k",
    "candidate_multiplier",
    "min_candidates",
    "lexical_time_limit_ms",
    "query_deadline_ms",
    "requires_max_atoms",
    "requires_token_budget",
)
_NOT_NEGATIVE = (
    "lexical_gate",
    "graph_depth",
    "graph_reserved_slots",
    "requires_max_depth",
    "max_chunks_per_file",
    "length_penalty_chars",
)


def _choice(key: str, value: object, choices: type[StrEnum]) -> list[str]:
    """A value set in code rather than read from YAML is checked against its enum too."""
    allowed = [m.value for m in choices]
    if value in allowed:
        return []
    hint = did_you_mean(value, allowed) if isinstance(value, str) else ""
    return [f"{key}: must be one of {', '.join(allowed)} — got {value!r}{hint}"]


def _retrieval(settings: Settings) -> list[str]:
    r = settings.retrieval
    out = _choice("retrieval.fusion", r.fusion, Fusion)
    for name in _UNIT_INTERVAL:
        v = getattr(r, name)
        if not 0.0 <= v <= 1.0:
            out.append(f"retrieval.{name}: must be between 0 and 1 — got {v}")
    for name in _AT_LEAST_ONE:
        if getattr(r, name) < 1:
            out.append(f"retrieval.{name}: must be at least 1 — got {getattr(r, name)}")
    for name in _NOT_NEGATIVE:
        if getattr(r, name) < 0:
            out.append(f"retrieval.{name}: must be 0 or more — got {getattr(r, name)}")
    if r.today is not None:
        try:
            datetime.date.fromisoformat(r.today)
        except ValueError:
            out.append(f"retrieval.today: must be a date YYYY-MM-DD — got {r.today!r}")
    return out


def _limits(settings: Settings) -> list[str]:
    sk, srv, emb = settings.hub, settings.server, settings.embedding
    out: list[str] = []
    at_least: tuple[tuple[str, float, float], ...] = (
        ("reranker.pool", settings.reranker.pool, 1),
        ("reranker.max_chars", settings.reranker.max_chars, 1),
        ("reranker.max_length", settings.reranker.max_length, 8),
        ("reranker.budget_ms", settings.reranker.budget_ms, 1),
        ("index.max_file_bytes", settings.index.max_file_bytes, 1),
        ("index.max_tokens", settings.index.max_tokens, 32),
        ("index.window_overlap", settings.index.window_overlap, 0),
        ("server.max_body_bytes", srv.max_body_bytes, 1),
        ("server.rate_limit_per_minute", srv.rate_limit_per_minute, 0),
        ("server.artifact_poll_s", srv.artifact_poll_s, 0),
        ("hub.rrf_k", sk.rrf_k, 1),
        ("hub.llm_top", sk.llm_top, 1),
        ("hub.read_max_chars", sk.read_max_chars, 1),
        ("embedding.breaker_failures", emb.breaker_failures, 1),
    )
    for key, value, low in at_least:
        if value < low:
            out.append(f"{key}: must be at least {low} — got {value}")
    overlap = settings.index.window_overlap
    if settings.index.embed_windows and 2 * overlap >= emb.max_tokens:
        out.append(
            f"index.window_overlap: must be below half of embedding.max_tokens "
            f"({emb.max_tokens}) — got {overlap}; lower it, or set index.embed_windows: false"
        )
    for key, seconds in (
        ("embedding.timeout_s", emb.timeout_s),
        ("embedding.query_timeout_s", emb.query_timeout_s),
        ("embedding.breaker_cooldown_s", emb.breaker_cooldown_s),
        ("hub.llm_timeout_s", sk.llm_timeout_s),
        ("hub.clone_timeout_s", sk.clone_timeout_s),
        ("hub.discover_timeout_s", sk.discover_timeout_s),
    ):
        if not seconds > 0:
            out.append(f"{key}: must be a number of seconds above 0 — got {seconds}")
    for key, bound in (("header_timeout_s", "headers"), ("body_timeout_s", "body")):
        value = getattr(srv, key)
        if not 0 < value <= MAX_HEADER_TIMEOUT_S:
            out.append(
                f"server.{key}: must be a number of seconds above 0 and at most "
                f"{MAX_HEADER_TIMEOUT_S:g} (the bound on a slow client's {bound}) — got {value}"
            )
    return out


def _one_of(choices: Sequence[str]) -> str:
    return ", ".join(choices[:-1]) + " or " + choices[-1] if len(choices) > 1 else "".join(choices)


def _server_and_packs(settings: Settings, pack_kinds: Sequence[str]) -> list[str]:
    srv = settings.server
    out = _choice("server.transport", srv.transport, Transport)
    if srv.log_level.upper() not in LOG_LEVELS:
        hint = did_you_mean(srv.log_level.upper(), LOG_LEVELS)
        out.append(f"server.log_level: must be one of {', '.join(LOG_LEVELS)}{hint}")
    if not 0 < srv.port < 65536:
        out.append(f"server.port: must be 1..65535 — got {srv.port}")
    out += _choice("index.vector_engine", settings.index.vector_engine, VectorEngine)
    out += _choice("index.engine", settings.index.engine, IndexEngine)
    idx = settings.index
    if idx.engine == IndexEngine.POSTGRES and not (idx.dsn or idx.dsn_file):
        out.append(
            "index.engine: postgres needs index.dsn (a libpq DSN such as "
            "'host=127.0.0.1 dbname=ep') or index.dsn_file (a file holding one)"
        )
    if idx.dsn and idx.dsn_file:
        out.append("index.dsn_file: give index.dsn or index.dsn_file, not both")
    if not 10 <= idx.pg_ef_search <= 1000:
        out.append(f"index.pg_ef_search: must be 10..1000 — got {idx.pg_ef_search}")
    build_mb = memory_mb(idx.pg_build_memory)
    if idx.pg_build_memory != "auto" and not (
        build_mb is not None and MIN_BUILD_MB <= build_mb <= MAX_BUILD_MB
    ):
        out.append(
            "index.pg_build_memory: auto, or a size from 64MB to 64GB such as 512MB or 4GB — "
            f"got {str(idx.pg_build_memory)[:40]!r}"
        )
    slugs = [p.slug for p in settings.packs if p.slug]
    dupes = {s for s in slugs if slugs.count(s) > 1}
    if dupes:
        out.append(
            f"packs: duplicate slug(s) {', '.join(sorted(dupes))} — give each pack a unique slug"
        )
    for i, p in enumerate(settings.packs):
        if p.kind is not None and p.kind not in pack_kinds:
            out.append(
                f"packs[{i}].kind: must be {_one_of(pack_kinds)} — got {p.kind!r}"
                + did_you_mean(p.kind, pack_kinds)
            )
    return out


def _reranker(settings: Settings) -> list[str]:
    """What each kind of reranker needs, checked only when the reranker is on."""
    r = settings.reranker
    out = _choice("reranker.kind", r.kind, RerankerKind)
    if r.api_style not in ("cohere", "tei"):
        out.append(
            f"reranker.api_style: must be cohere or tei — got {r.api_style!r}"
            + did_you_mean(r.api_style, ("cohere", "tei"))
        )
    if not r.enabled or out:
        return out
    kind = RerankerKind(r.kind)
    needs = {
        RerankerKind.HTTP: ("endpoint",),
        RerankerKind.CHAT: ("endpoint",),
        RerankerKind.ONNX: ("onnx_model", "tokenizer"),
    }.get(kind, ())
    named = kind is RerankerKind.CHAT or (kind is RerankerKind.HTTP and r.api_style == "cohere")
    if named and r.model == DEFAULT_RERANK_MODEL:
        out.append(
            f"reranker.model: name the model the {r.kind} server serves (the default names a "
            "local cross-encoder)"
        )
    for name in needs:
        if getattr(r, name) is None:
            out.append(
                f"reranker.{name}: reranker.kind {r.kind} needs it — set it or "
                "reranker.enabled: false"
            )
    return out


# signature algorithms a token may use (never `none`, never a shared-secret HS*)
TOKEN_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
MAX_CLOCK_SKEW_S = 300.0
# a revoked opaque token is still accepted until its kept answer ends: at most this long
MAX_INTROSPECTION_TTL_S = 300.0
OAUTH_INSTALL = "pip install 'ep-mcp[oauth]'"


def _url_problem(key: str, value: str, *, origin: bool = False) -> str | None:
    """An absolute http(s) URL (https unless on a loopback host), no query or fragment; an
    ``origin`` has no path either."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
    except ValueError:
        parts = None
    example = "https://kb.example.com" if origin else "https://auth.example.com"
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{key}: must be an absolute https URL such as {example} — got {value!r}"
    if parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return f"{key}: must use https (http only on 127.0.0.1 or localhost) — got {value!r}"
    if parts.query or parts.fragment or "#" in value:
        return f"{key}: must have no query or fragment — got {value!r}"
    if origin and parts.path not in ("", "/"):
        return (
            f"{key}: must be this server's public origin, e.g. {example} (no path) — got {value!r}"
        )
    return None


def _oauth_installed() -> bool:
    try:
        import cryptography  # noqa: F401
        import jwt  # noqa: F401
    except ImportError:
        return False
    return True


def _oauth(settings: Settings) -> list[str]:
    """`server.auth`: what a resource server needs, checked only once an issuer is named."""
    a = settings.server.auth
    key = "server.auth"
    if not a.enabled:
        named = [
            name
            for name in ("resource", "jwks_url", "introspection_endpoint", "client_id")
            if getattr(a, name) is not None
        ]
        if named:
            return [
                f"{key}.{named[0]}: set but server.auth.issuers is empty — name the "
                "authorization server's issuer there (OAuth is off without it)"
            ]
        return []
    if not _oauth_installed():
        return [f"{key}: OAuth needs PyJWT with cryptography — {OAUTH_INSTALL}"]
    out: list[str] = []
    for i, issuer in enumerate(a.issuers):
        problem = _url_problem(f"{key}.issuers[{i}]", issuer)
        if problem:
            out.append(problem)
    if a.resource is None:
        out.append(
            f"{key}.resource: name this server's public origin (the tokens' audience), "
            "e.g. https://kb.example.com"
        )
    else:
        problem = _url_problem(f"{key}.resource", a.resource, origin=True)
        if problem:
            out.append(problem)
    for name in ("jwks_url", "introspection_endpoint"):
        value = getattr(a, name)
        problem = _url_problem(f"{key}.{name}", value) if value is not None else None
        if problem:
            out.append(problem)
    if a.jwks_url is not None and len(a.issuers) > 1:
        out.append(
            f"{key}.jwks_url: with several issuers leave it out — each issuer's metadata "
            "names its own keys"
        )
    if not a.algorithms:
        out.append(f"{key}.algorithms: name at least one, e.g. [RS256, ES256, EdDSA]")
    for alg in a.algorithms:
        if alg not in TOKEN_ALGORITHMS:
            why = (
                " (never none, never a shared-secret HS*: tokens are signed by the "
                "authorization server's private key)"
                if alg.lower() == "none" or alg.upper().startswith("HS")
                else did_you_mean(alg, TOKEN_ALGORITHMS)
            )
            out.append(
                f"{key}.algorithms: {alg!r} is not allowed{why} — use {', '.join(TOKEN_ALGORITHMS)}"
            )
    if not a.scope_claim.strip():
        out.append(f"{key}.scope_claim: name the claim holding the scopes, e.g. scope")
    if not 0 <= a.clock_skew_s <= MAX_CLOCK_SKEW_S:
        out.append(
            f"{key}.clock_skew_s: must be between 0 and {MAX_CLOCK_SKEW_S:g} seconds — got "
            f"{a.clock_skew_s}"
        )
    if not a.timeout_s > 0:
        out.append(f"{key}.timeout_s: must be a number of seconds above 0 — got {a.timeout_s}")
    for name in ("jwks_ttl_s", "jwks_refetch_s", "introspection_ttl_s"):
        if getattr(a, name) < 0:
            out.append(f"{key}.{name}: must be 0 or more seconds — got {getattr(a, name)}")
    if a.introspection_ttl_s > MAX_INTROSPECTION_TTL_S:
        out.append(
            f"{key}.introspection_ttl_s: at most {MAX_INTROSPECTION_TTL_S:g} seconds (a revoked "
            f"token works until its kept answer ends) — got {a.introspection_ttl_s}"
        )
    if a.client_secret_file is not None and a.client_secret_env is not None:
        out.append(f"{key}.client_secret_file: set it or client_secret_env, not both")
    has_secret = a.client_secret_file or a.client_secret_env or a.client_secret
    if a.client_id is not None and not has_secret:
        out.append(
            f"{key}.client_id: the introspection client needs its secret — set "
            "client_secret_file or client_secret_env"
        )
    if a.client_id is None and (has_secret or a.introspection_endpoint is not None):
        out.append(
            f"{key}.client_id: introspection needs ep-mcp's client id at the authorization "
            "server — set it, or drop the introspection settings"
        )
    return out


def provider_problem(
    provider: str, known: Sequence[str], key: str = "embedding.provider"
) -> str | None:
    """The problem of an embedding provider name not among ``known`` (the registry's names,
    passed in by the loader: the settings model imports no provider), else None."""
    if provider in known:
        return None
    close = difflib.get_close_matches(provider, known, n=1, cutoff=0.6)
    hint = f" — did you mean {close[0]!r}?" if close else ""
    return f"{key}: unknown provider {provider!r}{hint} (known: {', '.join(known)})"


def check_settings(
    settings: Settings, *, providers: Sequence[str], pack_kinds: Sequence[str]
) -> list[str]:
    """Every range and choice problem of ``settings``, each with its key path; ``providers``
    and ``pack_kinds`` are what the registries hold (`config.load` asks them)."""
    problem = provider_problem(settings.embedding.provider, providers)
    return [
        *_retrieval(settings),
        *_limits(settings),
        *_reranker(settings),
        *_server_and_packs(settings, pack_kinds),
        *_oauth(settings),
        *([problem] if problem else []),
    ]
