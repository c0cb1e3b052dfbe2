"""Reading the reference implementation's config.yaml (brianhearn/ep-mcp) unchanged.

Its keys that mean the same as ours are renamed (``server.dev_mode_watch`` → ``server.watch``,
``embedding.output_dimensionality`` → ``embedding.dimension`` …); its keys we have no
equivalent for are accepted and named in one warning, never dropped silently. The table is
docs/server.md "Coming from the reference config". Anything else unknown stays an error.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

logger = logging.getLogger(__name__)

OLD_HUB_KEY = (
    "config key `skills:` is now `hub:` — rename it (read as `hub:` for now; "
    "`skills` names a pack kind and SEP-2640 publishing)"
)
_said: set[str] = set()  # deprecation notes already logged by this process


def old_hub_key(
    data: Mapping[str, Any], problems: list[str]
) -> tuple[Mapping[str, Any], tuple[str, ...]]:
    """``skills:`` (the hub's old key) read as ``hub:``, with the deprecation note (logged once
    a process); both at once is a problem."""
    if "skills" not in data:
        return data, ()
    if "hub" in data:
        problems.append("skills: set beside `hub:` — keep `hub:` only (`skills:` is its old name)")
        return {k: v for k, v in data.items() if k != "skills"}, ()
    if OLD_HUB_KEY not in _said:
        _said.add(OLD_HUB_KEY)
        logger.warning("%s", OLD_HUB_KEY)
    renamed = {("hub" if k == "skills" else k): v for k, v in data.items()}
    return renamed, (OLD_HUB_KEY,)


# section → {reference key: our key}
RENAMED: dict[str, dict[str, str]] = {
    "server": {"dev_mode_watch": "watch"},
    "embedding": {
        "output_dimensionality": "dimension",
        "azure_endpoint": "endpoint",
        "azure_api_key": "api_key",
        "azure_api_version": "api_version",
    },
    "retrieval": {
        "mmr_enabled": "mmr",
        "intent_routing_enabled": "intent_routing",
        "length_penalty_threshold": "length_penalty_chars",
        "length_penalty_factor": "length_penalty",
        "graph_expansion_enabled": "graph_expansion",
        "graph_expansion_depth": "graph_depth",
        "graph_expansion_discount": "graph_decay",
        "graph_expansion_min_score": "graph_min_score",
        "graph_expansion_reserved_slots": "graph_reserved_slots",
        "requires_expansion_enabled": "requires_expansion",
        "requires_expansion_max_depth": "requires_max_depth",
        "requires_expansion_max_atoms": "requires_max_atoms",
        "requires_expansion_token_budget": "requires_token_budget",
    },
    "reranker": {"candidate_pool_size": "pool"},
}

# section → reference keys with no equivalent here (accepted, named in one warning)
IGNORED: dict[str, frozenset[str]] = {
    "retrieval": frozenset(
        {
            "min_score",
            "default_max_results",
            "absolute_floor",
            "bm25_cap",
            "bm25_min_token_match_ratio",
            "graph_expansion_confidence_threshold",
            "graph_expansion_structural_bonus",
            "graph_expansion_deep",
            "graph_expansion_deep_max_bonus",
            "graph_widen_enabled",
            "graph_widen_max_seeds",
            "graph_widen_min_seed_score",
            "graph_widen_min_neighbor_score",
            "requires_expansion_score",
        }
    ),
    "reranker": frozenset({"batch_size"}),
    "packs[]": frozenset(
        {
            "graph_expansion_enabled",
            "graph_expansion_confidence_threshold",
            "graph_expansion_min_score",
            "graph_expansion_structural_bonus",
        }
    ),
}

# keys whose name we share but whose scale differs: in a reference file they are ignored
# (our measured defaults stay), in one of ours they are ours
SAME_NAME_OTHER_SCALE = {"retrieval": frozenset({"activation_floor", "score_ratio"})}

# what a text-embedding model's vectors measure, for `azure_deployment` (our model = deployment)
AZURE_DIMENSIONS = {"text-embedding-3-large": 3072, "text-embedding-3-small": 1536}


def _is_reference(data: Mapping[str, Any]) -> bool:
    """A file that uses any key only the reference knows is read as a reference file."""
    for section, renamed in RENAMED.items():
        body = data.get(section)
        if isinstance(body, Mapping) and set(body) & (set(renamed) | IGNORED.get(section, set())):
            return True
    embedding = data.get("embedding")
    if isinstance(embedding, Mapping) and "azure_deployment" in embedding:
        return True
    packs = data.get("packs")
    return isinstance(packs, list) and any(
        isinstance(p, Mapping) and set(p) & IGNORED["packs[]"] for p in packs
    )


def _section(
    name: str, body: Mapping[str, Any], reference: bool, ignored: list[str]
) -> dict[str, Any]:
    renamed, skip = RENAMED.get(name, {}), IGNORED.get(name, frozenset())
    if reference:
        skip = skip | SAME_NAME_OTHER_SCALE.get(name, frozenset())
    out: dict[str, Any] = {}
    for key, value in body.items():
        if key in skip:
            if value is not None:
                ignored.append(f"{name}.{key}")
        elif key in renamed and renamed[key] not in body:
            out[renamed[key]] = value
        else:
            out[key] = value
    return out


def _embedding(body: dict[str, Any]) -> dict[str, Any]:
    deployment = body.pop("azure_deployment", None)
    if deployment:  # our Azure `model` names the deployment
        model = body.get("model")
        if body.get("dimension") is None and model in AZURE_DIMENSIONS:
            body["dimension"] = AZURE_DIMENSIONS[model]
        body["model"] = deployment
    return body


def translate_reference(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with the reference's keys mapped to ours; the ones without an equivalent are
    removed and named in one warning."""
    reference = _is_reference(data)
    ignored: list[str] = []
    out: dict[str, Any] = dict(data)
    for name, body in data.items():
        if name in RENAMED and isinstance(body, Mapping):
            out[name] = _section(name, body, reference, ignored)
    if isinstance(out.get("embedding"), dict):
        out["embedding"] = _embedding(out["embedding"])
    server = out.get("server")
    if isinstance(server, dict) and isinstance(server.get("log_level"), str):
        server["log_level"] = server["log_level"].upper()
    packs = data.get("packs")
    if isinstance(packs, list):
        out["packs"] = [
            _section("packs[]", p, reference, ignored) if isinstance(p, Mapping) else p
            for p in packs
        ]
    if ignored:
        logger.warning(
            "config: accepted but without effect here (the reference's keys with no "
            "equivalent; see docs/server.md 'Coming from the reference config'): %s",
            ", ".join(sorted(set(ignored))),
        )
    return out


def reference_keys(section: str) -> frozenset[str]:
    """The reference's own keys of ``section`` (``packs[]`` for a pack entry), so a typo of
    one is answered "did you mean …?" too."""
    return frozenset(RENAMED.get(section, {})) | IGNORED.get(section, frozenset())
