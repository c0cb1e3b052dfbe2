"""Range and choice checks of the settings that types alone cannot express.

Allowed values come from the config's enums (``Fusion``, ``VectorEngine``), never a list here.
"""

from __future__ import annotations

from enum import StrEnum

from ep_mcp.config import Fusion, Settings, Transport, VectorEngine
from ep_mcp.errors import ConfigError

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _check_choice(key: str, value: object, choices: type[StrEnum]) -> None:
    """A value set in code rather than read from YAML is checked against its enum too."""
    allowed = [m.value for m in choices]
    if value not in allowed:
        raise ConfigError(f"{key}: must be one of {', '.join(allowed)} — got {value!r}")


def validate(settings: Settings) -> None:
    """Range and choice checks that types alone cannot express."""
    r = settings.retrieval
    _check_choice("retrieval.fusion", r.fusion, Fusion)
    for name in (
        "mmr_lambda",
        "graph_decay",
        "score_ratio",
        "vector_weight",
        "text_weight",
        "lexical_coverage_floor",
        "length_penalty",
        "freshness_penalty",
    ):
        v = getattr(r, name)
        if not 0.0 <= v <= 1.0:
            raise ConfigError(f"retrieval.{name}: must be between 0 and 1 — got {v}")
    for name in (
        "rrf_k",
        "candidate_multiplier",
        "min_candidates",
        "lexical_time_limit_ms",
        "query_deadline_ms",
        "requires_max_atoms",
        "requires_token_budget",
    ):
        if getattr(r, name) < 1:
            raise ConfigError(f"retrieval.{name}: must be at least 1 — got {getattr(r, name)}")
    for name in (
        "graph_depth",
        "graph_reserved_slots",
        "requires_max_depth",
        "max_chunks_per_file",
        "length_penalty_chars",
    ):
        if getattr(r, name) < 0:
            raise ConfigError(f"retrieval.{name}: must be 0 or more — got {getattr(r, name)}")
    if r.today is not None:
        import datetime

        try:
            datetime.date.fromisoformat(r.today)
        except ValueError:
            raise ConfigError(
                f"retrieval.today: must be a date YYYY-MM-DD — got {r.today!r}"
            ) from None
    sk, srv = settings.skills, settings.server
    at_least: tuple[tuple[str, float, float], ...] = (
        ("reranker.pool", settings.reranker.pool, 1),
        ("reranker.max_chars", settings.reranker.max_chars, 1),
        ("index.max_file_bytes", settings.index.max_file_bytes, 1),
        ("server.max_body_bytes", srv.max_body_bytes, 1),
        ("server.rate_limit_per_minute", srv.rate_limit_per_minute, 0),
        ("server.artifact_poll_s", srv.artifact_poll_s, 0),
        ("skills.rrf_k", sk.rrf_k, 1),
        ("skills.llm_top", sk.llm_top, 1),
        ("skills.read_max_chars", sk.read_max_chars, 1),
    )
    for key, value, low in at_least:
        if value < low:
            raise ConfigError(f"{key}: must be at least {low} — got {value}")
    emb = settings.embedding
    if emb.breaker_failures < 1:
        raise ConfigError(
            f"embedding.breaker_failures: must be at least 1 — got {emb.breaker_failures}"
        )
    for key, seconds in (
        ("embedding.timeout_s", emb.timeout_s),
        ("embedding.query_timeout_s", emb.query_timeout_s),
        ("embedding.breaker_cooldown_s", emb.breaker_cooldown_s),
        ("skills.llm_timeout_s", sk.llm_timeout_s),
        ("skills.clone_timeout_s", sk.clone_timeout_s),
        ("skills.discover_timeout_s", sk.discover_timeout_s),
    ):
        if not seconds > 0:
            raise ConfigError(f"{key}: must be a number of seconds above 0 — got {seconds}")
    _check_choice("server.transport", settings.server.transport, Transport)
    if settings.server.log_level.upper() not in LOG_LEVELS:
        raise ConfigError("server.log_level: must be one of DEBUG, INFO, WARNING, ERROR")
    if not 0 < settings.server.port < 65536:
        raise ConfigError(f"server.port: must be 1..65535 — got {settings.server.port}")
    if settings.index.max_tokens < 32:
        raise ConfigError("index.max_tokens: must be at least 32")
    _check_choice("index.vector_engine", settings.index.vector_engine, VectorEngine)
    slugs = [p.slug for p in settings.packs if p.slug]
    dupes = {s for s in slugs if slugs.count(s) > 1}
    if dupes:
        raise ConfigError(
            f"packs: duplicate slug(s) {', '.join(sorted(dupes))} — give each pack a unique slug"
        )
    kinds = (None, "expertpack", "skills", "markdown")
    for i, p in enumerate(settings.packs):
        if p.kind not in kinds:
            raise ConfigError(
                f"packs[{i}].kind: must be expertpack, skills or markdown — got {p.kind!r}"
            )
