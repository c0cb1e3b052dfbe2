"""Range and choice checks of the settings that types alone cannot express.

Allowed values come from the config's enums (``Fusion``, ``VectorEngine``), never a list here.
Every check adds to one list, so a config with three mistakes reports three problems at once.
"""

from __future__ import annotations

import datetime
import difflib
from enum import StrEnum

from ep_mcp.config import (
    DEFAULT_RERANK_MODEL,
    Fusion,
    IndexEngine,
    RerankerKind,
    Settings,
    Transport,
    VectorEngine,
)
from ep_mcp.config_schema import did_you_mean

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
PACK_KINDS = ("expertpack", "skills", "markdown")
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
    sk, srv, emb = settings.skills, settings.server, settings.embedding
    out: list[str] = []
    at_least: tuple[tuple[str, float, float], ...] = (
        ("reranker.pool", settings.reranker.pool, 1),
        ("reranker.max_chars", settings.reranker.max_chars, 1),
        ("reranker.max_length", settings.reranker.max_length, 8),
        ("reranker.budget_ms", settings.reranker.budget_ms, 1),
        ("index.max_file_bytes", settings.index.max_file_bytes, 1),
        ("index.max_tokens", settings.index.max_tokens, 32),
        ("server.max_body_bytes", srv.max_body_bytes, 1),
        ("server.rate_limit_per_minute", srv.rate_limit_per_minute, 0),
        ("server.artifact_poll_s", srv.artifact_poll_s, 0),
        ("skills.rrf_k", sk.rrf_k, 1),
        ("skills.llm_top", sk.llm_top, 1),
        ("skills.read_max_chars", sk.read_max_chars, 1),
        ("embedding.breaker_failures", emb.breaker_failures, 1),
    )
    for key, value, low in at_least:
        if value < low:
            out.append(f"{key}: must be at least {low} — got {value}")
    for key, seconds in (
        ("embedding.timeout_s", emb.timeout_s),
        ("embedding.query_timeout_s", emb.query_timeout_s),
        ("embedding.breaker_cooldown_s", emb.breaker_cooldown_s),
        ("skills.llm_timeout_s", sk.llm_timeout_s),
        ("skills.clone_timeout_s", sk.clone_timeout_s),
        ("skills.discover_timeout_s", sk.discover_timeout_s),
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


def _server_and_packs(settings: Settings) -> list[str]:
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
    slugs = [p.slug for p in settings.packs if p.slug]
    dupes = {s for s in slugs if slugs.count(s) > 1}
    if dupes:
        out.append(
            f"packs: duplicate slug(s) {', '.join(sorted(dupes))} — give each pack a unique slug"
        )
    for i, p in enumerate(settings.packs):
        if p.kind not in (None, *PACK_KINDS):
            out.append(
                f"packs[{i}].kind: must be expertpack, skills or markdown — got {p.kind!r}"
                + did_you_mean(p.kind or "", PACK_KINDS)
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


def provider_problem(provider: str, key: str = "embedding.provider") -> str | None:
    """The problem of an embedding provider name no provider is registered under (the
    built-ins, and any a plugin registered before the settings were read), else None."""
    from ep_mcp.index.embed.base import providers
    from ep_mcp.index.embed.registry import register_builtins

    register_builtins()
    known = providers()
    if provider in known:
        return None
    close = difflib.get_close_matches(provider, known, n=1, cutoff=0.6)
    hint = f" — did you mean {close[0]!r}?" if close else ""
    return f"{key}: unknown provider {provider!r}{hint} (known: {', '.join(known)})"


def check_settings(settings: Settings) -> list[str]:
    """Every range and choice problem of ``settings``, each with its key path."""
    problem = provider_problem(settings.embedding.provider)
    return [
        *_retrieval(settings),
        *_limits(settings),
        *_reranker(settings),
        *_server_and_packs(settings),
        *([problem] if problem else []),
    ]


def validate(settings: Settings) -> None:
    """Raise one ConfigError listing every problem of ``settings`` (none: return)."""
    from ep_mcp.config_schema import config_problems_error

    problems = check_settings(settings)
    if problems:
        raise config_problems_error(problems, None)
