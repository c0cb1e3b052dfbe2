"""Fitting a pack's own "not covered" floor on its fresh index (``retrieval.packfloor``).

After a build that leaves nothing pending, the pack's probes (titles, headings, frontmatter
questions) and the packaged off-topic questions are asked of the index as a user would ask them
(every hit kept), their ``answerable`` values give the floor, and the floor is written to the
index meta with the generation and the confidence model it was fitted on. A search reads it
back; a floor of another generation or model, an index served elsewhere (PostgreSQL) or a
build without vectors leaves the global ``min_answerable``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import lru_cache
from importlib import resources

from ep_mcp.config import RetrievalSettings
from ep_mcp.index.store import Store
from ep_mcp.packs.models import Pack
from ep_mcp.retrieval.confidence import ConfidenceModel, model_to_dict
from ep_mcp.retrieval.packfloor import (
    PackFloor,
    PackFloorSettings,
    count_under,
    fit_floor,
    floor_from_json,
    model_signature,
    probes,
)
from ep_mcp.retrieval.types import SearchRequest, SearchResult

logger = logging.getLogger(__name__)

META_KEY = "pack_floor"
Ask = Callable[[SearchRequest], SearchResult]


@lru_cache(maxsize=1)
def off_topic_questions() -> tuple[str, ...]:
    text = resources.files("ep_mcp").joinpath("data", "offtopic.txt").read_text(encoding="utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def floor_settings(s: RetrievalSettings) -> PackFloorSettings:
    return PackFloorSettings(s.pack_floor_quantile, s.pack_floor_cap, s.pack_floor_probes)


def _answerable(ask: Ask, query: str) -> float:
    result = ask(SearchRequest(query=query, k=10, include_low_confidence=True))
    return result.answerable or 0.0


def calibrate(
    store: Store,
    pack: Pack,
    ask: Ask,
    model: ConfidenceModel,
    settings: RetrievalSettings,
) -> PackFloor | None:
    """Fit and store the pack's floor (None, and the stored one removed, when it cannot be)."""
    store.set_meta(META_KEY, "")
    if store.pending_count() or not store.has_vectors():
        return None
    questions = probes(pack.documents, settings.pack_floor_probes)
    answered = [_answerable(ask, q) for q in questions]
    off = [_answerable(ask, q) for q in off_topic_questions()]
    rule = floor_settings(settings)
    floor = fit_floor(answered, settings.min_answerable, rule)
    fitted = PackFloor(
        floor=floor,
        model=model_signature(model_to_dict(model)),
        generation=store.get_meta("generation") or "",
        rule=rule.rule(settings.min_answerable),
        probes=len(answered),
        withheld=count_under(answered, floor),
        off_topic=len(off),
        caught=count_under(off, floor),
    )
    store.set_meta(META_KEY, fitted.to_json())
    logger.info(
        "pack %s: not-covered floor %.2f (%d/%d probes under it, %d/%d off-topic)",
        pack.slug,
        floor,
        fitted.withheld,
        fitted.probes,
        fitted.caught,
        fitted.off_topic,
    )
    return fitted


def stored_floor(
    store: Store, model: ConfidenceModel, settings: RetrievalSettings
) -> PackFloor | None:
    """The floor fitted on this index's generation with this model and settings, or None."""
    fitted = floor_from_json(store.get_meta(META_KEY))
    if fitted is None:
        return None
    if fitted.rule != floor_settings(settings).rule(settings.min_answerable):
        return None
    if fitted.generation != (store.get_meta("generation") or ""):
        return None
    if fitted.model != model_signature(model_to_dict(model)):
        return None
    return fitted
