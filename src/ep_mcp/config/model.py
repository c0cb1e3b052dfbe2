"""Settings: resolved once at the edge (flags > env > config file > defaults) into frozen objects.

The YAML schema is derived from the dataclasses below (config_schema.py), so every field is a
valid key; the environment is read once at the edge (config_env.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path


class Transport(StrEnum):
    """What `ep-mcp serve --config` speaks (``server.transport``); `serve PACK...` is stdio."""

    HTTP = "http"
    STDIO = "stdio"


class Fusion(StrEnum):
    """How the two legs' ranked lists become one (``retrieval.fusion``)."""

    WEIGHTED = "weighted"  # min-max normalised, then weighted
    RRF = "rrf"


class VectorEngine(StrEnum):
    """What answers vector queries (``index.vector_engine``)."""

    AUTO = "auto"  # numpy scan; vec0 mirror kept when sqlite-vec loads
    SQLITE_VEC = "sqlite-vec"
    NUMPY = "numpy"


class IndexEngine(StrEnum):
    """Where a served pack's index lives (``index.engine``)."""

    SQLITE = "sqlite"  # the pack's index.db (built in place, or an artifact's)
    POSTGRES = "postgres"  # its current published version on PostgreSQL + pgvector


@dataclass(frozen=True)
class RetrievalSettings:
    """Every constant of the retrieval pipeline (SPEC §4). Defaults are the measured winners
    (docs/bench/retrieval.md: SciFact train split and the golden sets)."""

    fusion: Fusion = Fusion.WEIGHTED
    rrf_k: int = 60
    vector_weight: float = 0.4  # GENERAL intent weights
    text_weight: float = 0.6
    intent_routing: bool = False  # measured: no gain on SciFact or the golden sets
    candidate_multiplier: int = 8
    min_candidates: int = 50
    lexical_time_limit_ms: int = 250
    query_deadline_ms: int = 2000  # an HTTP embedding provider slower than this: lexical answer
    title_weight: float = 3.0  # FTS5 column weights
    heading_weight: float = 2.0
    text_column_weight: float = 1.0
    adaptive_threshold: bool = True
    # activation: best cosine + coverage_weight x lexical term coverage < floor → empty answer
    activation_floor: float = 0.416
    coverage_weight: float = 0.2
    activation_model: str = "local/all-MiniLM-L6-v2-int8"  # prefix of the floor's model; "*" any
    lexical_coverage_floor: float = 0.25  # without vectors: coverage below → empty answer
    score_ratio: float = 0.0  # then keep hits scoring ≥ ratio * best
    confidence: bool = True  # every hit's `confidence`, the answer's `answerable` (data model)
    min_answerable: float = 0.28  # answerable below → no hits (dev + SciFact train, #18 round 8)
    type_match_boost: float = 0.05  # boosts are fractions of the best fused score
    tag_match_boost: float = 0.03
    always_tier_boost: float = 0.03
    length_penalty_chars: int = 80
    length_penalty: float = 0.15
    freshness_penalty: float = 0.0
    profile_weight: float = 0.9  # + weight x cosine(query, file title / skill description)
    one_leg_factor: float = 0.5  # fused x this for a chunk only one leg found (1 = off)
    lexical_gate: float = 0.5  # lexical share x (query coverage) ** this, weighted fusion (0 = off)
    mmr: bool = False  # measured neutral at λ 0.95 (SciFact, golden sets); λ 0.7 costs 0.1
    mmr_lambda: float = 0.95
    max_chunks_per_file: int = 2
    graph_expansion: bool = False
    graph_depth: int = 1
    graph_decay: float = 0.85
    graph_reserved_slots: int = 2
    graph_min_score: float = 0.2
    requires_expansion: bool = True
    requires_max_depth: int = 2
    requires_max_atoms: int = 3
    requires_token_budget: int = 3500
    fallback_coverage_weight: float = 0.4  # lexical fallback signals (no vectors)
    fallback_density_weight: float = 0.1
    fallback_path_weight: float = 0.1
    fallback_length_weight: float = 0.1
    fallback_length_chars: int = 300  # chunks shorter than this lose some of the length signal
    today: str | None = None  # pin "today" (YYYY-MM-DD) for freshness; EP_EVAL_TODAY sets it


DEFAULT_RERANK_MODEL = "cross-encoder/ms-marco-MiniLM-L-6-v2"


class RerankerKind(StrEnum):
    """What scores the rerank pool (``reranker.kind``)."""

    HTTP = "http"  # a /rerank API: TEI, Infinity, Cohere, Jina, Voyage, vLLM
    CHAT = "chat"  # an OpenAI-compatible chat model scores the shortlist
    ONNX = "onnx"  # a cross-encoder exported to ONNX, run with onnxruntime
    SENTENCE_TRANSFORMERS = "sentence-transformers"  # extra `ep-mcp[rerank]`


@dataclass(frozen=True)
class RerankerSettings:
    """Optional rerank of the top ``pool`` before the k cut (off by default)."""

    enabled: bool = False
    kind: RerankerKind = RerankerKind.SENTENCE_TRANSFORMERS  # as the reference's reranker
    model: str = DEFAULT_RERANK_MODEL  # the cross-encoder, or the model named to the server
    pool: int = 20
    max_chars: int = 2000  # the passage sent: the chunk, or its best window of this many chars
    endpoint: str | None = None  # http: the /rerank URL; chat: the API base URL (…/v1)
    api_style: str = "cohere"  # http: "cohere" (documents → results) or "tei" (texts → list)
    api_key_env: str | None = None  # the variable holding the key, if the server wants one
    api_key: str | None = field(default=None, repr=False)  # read from api_key_env at the edge
    onnx_model: Path | None = None  # onnx: model.onnx of a cross-encoder
    tokenizer: Path | None = None  # onnx: its tokenizer.json
    max_length: int = 512  # onnx: tokens per (query, passage) pair
    budget_ms: int = 2000  # past it the pool keeps its order (with a note)


def memory_mb(text: str) -> int | None:
    """Megabytes of a size written ``<n>MB`` or ``<n>GB`` (any case); None for anything else."""
    m = re.fullmatch(r"\s*(\d{1,7})\s*([MG])B\s*", text, re.IGNORECASE)
    if m is None:
        return None
    return int(m.group(1)) * (1024 if m.group(2).upper() == "G" else 1)


@dataclass(frozen=True)
class IndexSettings:
    vector_engine: VectorEngine = VectorEngine.AUTO
    # postgres: packs are served from their version published with `index --to postgres`
    # (docs/SCALING.md); the server is named by a libpq DSN, or a file holding one (a secret)
    engine: IndexEngine = IndexEngine.SQLITE
    dsn: str | None = None  # e.g. "host=db.internal dbname=ep user=ep"
    dsn_file: Path | None = None
    pg_ef_search: int = 400  # HNSW candidates per vector query (well above the pool asked for)
    # `maintenance_work_mem` of a load's HNSW build: "auto" (scaled with the vectors, 64 MB..2 GB)
    # or a size such as "512MB" or "4GB" (docs/SCALING.md)
    pg_build_memory: str = "auto"
    max_tokens: int = 1000  # token ceiling of one atom before it is split at ##/### headings
    context_prefix_template: str = ""  # e.g. "From {title}, section {section}." ("" = sidecar only)
    max_file_bytes: int = 2_000_000  # larger files are skipped with a warning
    # a chunk longer than the local model's window (embedding.max_tokens) is embedded as several
    # windows sharing window_overlap word-pieces; its dense score is the best window's (#18).
    # On: on the 217-question dev split hit@1 0.811 -> 0.853, MRR 0.874 -> 0.902 (SciFact train
    # flat), for 1.54x the word-pieces embedded (docs/BENCHMARKS.md, "Eighth round")
    embed_windows: bool = True
    window_overlap: int = 32


@dataclass(frozen=True)
class PackSettings:
    path: Path
    slug: str | None = None  # detected from the manifest / folder name when None
    kind: str | None = None  # expertpack | skills | markdown; detected when None
    api_keys: tuple[str, ...] = ()
    index_dir: Path | None = None
    read_only: bool = False  # open a prebuilt index read-only, never build
    # a published artifact folder (`ep-mcp index --out`): served read-only, newer versions
    # swapped in as they appear (docs/deploy.md); `path` may then be left out
    artifact: Path | None = None


DEFAULT_TOKEN_ALGORITHMS = ("RS256", "ES256", "EdDSA")


@dataclass(frozen=True)
class OAuthSettings:
    """The OAuth 2.1 resource server (``server.auth``; docs/server.md#oauth-21): off while
    ``issuers`` is empty. Needs the extra `ep-mcp[oauth]` (PyJWT with cryptography)."""

    issuers: tuple[str, ...] = ()  # the authorization servers' issuer identifiers, exactly
    resource: str | None = None  # this server's public origin: the tokens' audience (RFC 8707)
    jwks_url: str | None = None  # else the issuer's metadata names it (RFC 8414 / OIDC)
    introspection_endpoint: str | None = None  # opaque tokens (RFC 7662); else the metadata's
    client_id: str | None = None  # ep-mcp's client at the introspection endpoint
    client_secret_file: Path | None = None  # its secret, read once at start-up
    client_secret_env: str | None = None  # or the variable holding it
    client_secret: str | None = field(default=None, repr=False, metadata={"file": False})
    scope_claim: str = "scope"  # the claim holding `ep:pack:<slug>` / `ep:hub` scopes
    algorithms: tuple[str, ...] = DEFAULT_TOKEN_ALGORITHMS  # pinned: never none, never HS*
    clock_skew_s: float = 30.0
    timeout_s: float = 5.0  # per request to the authorization server
    jwks_ttl_s: float = 300.0  # how long fetched keys are used before a refetch
    jwks_refetch_s: float = 30.0  # an unknown `kid` refetches the keys at most this often
    introspection_ttl_s: float = 30.0  # an introspection answer is reused this long (≤ exp)

    @property
    def enabled(self) -> bool:
        return bool(self.issuers)


@dataclass(frozen=True)
class ServerSettings:
    # `ep-mcp serve --config FILE` speaks this (http unless stdio); `serve PACK...` stays stdio
    transport: Transport = Transport.HTTP
    host: str = "127.0.0.1"
    port: int = 8000
    log_level: str = "INFO"
    mcp_allowed_hosts: tuple[str, ...] = ()
    mcp_allowed_origins: tuple[str, ...] = ()
    query_log_path: Path | None = None
    max_body_bytes: int = 1_000_000
    rate_limit_per_minute: int = 0  # per client address on every route but /health; 0 = off
    # proxies whose X-Forwarded-For / -Proto are believed (e.g. [127.0.0.1] behind nginx on the
    # same host); empty = forwarded headers are ignored and the peer address is the client
    forwarded_allow_ips: tuple[str, ...] = ()
    watch: bool = True
    artifact_poll_s: float = 2.0  # how often artifact packs look for a newer version; 0 = never
    # a request's line and headers must arrive within this many seconds (slowloris): else 408
    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0  # and its body within this many seconds of them: else 408
    auth: OAuthSettings = field(default_factory=OAuthSettings)  # OAuth 2.1 beside API keys


@dataclass(frozen=True)
class TapSettings:
    """A tap listed in config: a git URL / owner/repo (cloned by `ep-mcp update`) or an
    absolute local folder (indexed in place, never cloned)."""

    url: str
    name: str | None = None


@dataclass(frozen=True)
class HubSettings:
    """The skills hub (SPEC §7): config key ``hub:`` (``skills:``, its old name, is still read)."""

    api_keys: tuple[str, ...] = ()  # open the hub over HTTP (also EP_MCP_HUB_KEY); see docs
    llm_rerank: bool = False  # LLM rerank of the shortlist's top by default (`--smart` per query)
    llm_timeout_s: float = 20.0
    llm_top: int = 20  # shortlist head shown to the LLM
    llm_model: str = "claude-haiku-4-5"  # for the Messages API (the claude CLI uses its own)
    llm_endpoint: str | None = None  # Messages API URL override (tests, proxies)
    taps: tuple[TapSettings, ...] = ()
    read_max_chars: int = 12_000  # skill_read budget; longer files are cut and say so
    clone_timeout_s: float = 300.0
    discover_timeout_s: float = 30.0
    # skill_search fusion (docs/bench/skills.md): weighted RRF over per-skill legs
    rrf_k: int = 5
    body_weight: float = 1.0  # BM25 over SKILL.md and supporting-file chunks
    card_weight: float = 1.0  # BM25 over the per-skill card (name, description, headings)
    name_weight: float = 1.0  # name/description term match, independent of each tap's BM25
    vector_weight: float = 2.0  # cosine over all chunks, when the taps have vectors
    support_factor: float = 0.5  # supporting-file BM25 scores count this much
    # "no skill matches" (retrieval.threshold's floor, ep_search's too; chosen on the golden dev
    # queries, docs/BENCHMARKS.md):
    # best cosine + match_coverage_weight x term coverage of the first skills below min_match →
    # no skill; without vectors (or another embedder) term coverage below min_match_lexical
    min_match: float = 0.542
    match_coverage_weight: float = 0.5
    min_match_lexical: float = 0.324
    # minus match_unknown_penalty x the share of the task's terms no tap holds at all (a task
    # for a skill nobody tapped: Kotlin, Solidity, Helm; issue #25, tests/hub/data/)
    match_unknown_penalty: float = 0.5
    match_model: str = "local/all-MiniLM-L6-v2-int8"  # prefix of min_match's embedder; "*" any


@dataclass(frozen=True)
class EmbeddingSpec:
    """What the settings say about the embedder (resolved once at the edge)."""

    provider: str = "local"  # local, none, openai(-compatible), azure-openai, gemini, voyage, …
    model: str | None = None  # provider default when None
    dimension: int | None = None  # provider default when None (MRL truncation where supported)
    batch_size: int = 8
    max_tokens: int = 256  # truncation for the local model
    timeout_s: float = 30.0  # per HTTP request while indexing
    retries: int = 3  # while indexing; a query makes one attempt
    query_timeout_s: float = 1.5  # per HTTP request while a query waits
    breaker_failures: int = 3  # consecutive failures that open the circuit
    breaker_cooldown_s: float = 30.0  # then calls fail at once this long, before one probe
    endpoint: str | None = None  # base URL override (HTTP providers; tests point it at 127.0.0.1)
    api_key_env: str | None = None  # env var holding the key (provider default when None)
    # the key itself, when the config file holds it (reference `azure_api_key`) or the edge read
    # it from ``api_key_env``; never shown (repr, logs, `ep-mcp config`)
    api_key: str | None = field(default=None, repr=False)
    api_version: str | None = None  # Azure OpenAI `api-version` (its default when None)
    cache_dir: Path | None = None  # the local model caches its optimised graph here (<home>/models)


@dataclass(frozen=True)
class EnvKeys:
    """API keys the environment held (``EP_MCP_KEY_{SLUG}``, ``EP_MCP_HUB_KEY``, their ``_FILE``
    files read), by variable name: slugs are known only once packs load. Set at the edge by
    `config_env.resolve_environment`; never read from a config file, never shown."""

    by_variable: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def get(self, variable: str) -> tuple[str, ...]:
        return dict(self.by_variable).get(variable, ())


@dataclass(frozen=True)
class Settings:
    server: ServerSettings = field(default_factory=ServerSettings)
    packs: tuple[PackSettings, ...] = ()
    embedding: EmbeddingSpec = field(default_factory=EmbeddingSpec)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    reranker: RerankerSettings = field(default_factory=RerankerSettings)
    index: IndexSettings = field(default_factory=IndexSettings)
    hub: HubSettings = field(default_factory=HubSettings)
    home: Path | None = None  # $EP_MCP_HOME: taps, caches, per-user indexes
    env_keys: EnvKeys = field(default_factory=EnvKeys, repr=False, metadata={"file": False})
    # what the file said in an old way (``skills:`` for ``hub:``): `ep-mcp config`/`doctor` show it
    deprecations: tuple[str, ...] = field(default=(), metadata={"file": False})


def default_home(env: Mapping[str, str]) -> Path:
    """ep-mcp's per-user folder: $EP_MCP_HOME, else $XDG_DATA_HOME/ep-mcp, else ~/.local/share,
    made absolute (git runs in folders of its own: a relative home would land there)."""
    if env.get("EP_MCP_HOME"):
        return Path(env["EP_MCP_HOME"]).expanduser().absolute()
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return (Path(base) / "ep-mcp").absolute()
