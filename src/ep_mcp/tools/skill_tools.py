"""The skills-hub tools: skill_search, skill_list, skill_info, skill_read, skill_discover_github.

Registered with ``group="skills"``; the MCP server lists them when a hub is served, and the CLI's
``ep-mcp skills …`` commands call them through the same registry. Handlers take the hub from
``ToolContext.hub`` and raise ``EpMcpError``s (rendered as ``isError`` results) — never
anything else for bad input or a missing outside tool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ep_mcp.errors import NotFoundError
from ep_mcp.retrieval.lexical import MAX_QUERY_CHARS
from ep_mcp.tools.registry import Arguments, ToolContext, ToolResult, ToolSpec, register
from ep_mcp.tools.schema import (
    arg_bool,
    arg_int,
    arg_opt_bool,
    arg_str,
    input_object,
    output_object,
)

if TYPE_CHECKING:
    from ep_mcp.hub.hub import SkillHub

_NAME = {
    "type": "string",
    "minLength": 1,
    "maxLength": 300,
    "description": "A skill name from skill_list or skill_search. When several taps have a skill "
    "of that name, ask for one as `tap:name` (or use the result's `id`).",
}


_SEARCH_TEXT = """
    Search every tapped skill repository for the skill that fits a task. Describe the task in
    plain words ("my tests fail intermittently", "build an MCP server"). Returns one result per
    skill, best first, with the best-matching section as the snippet (heading and line range)
    and the `ranker` used (hybrid, lexical, dense, frontmatter or llm). When the best evidence
    is too weak (`matched: false`: the task's best cosine and its words in the first skills fall
    under the hub's calibrated floor) it returns no skill and a note "no skill matches this
    task" instead of a confident wrong one; include_low_confidence=true shows the closest
    anyway. An empty list is a real answer: no tapped skill fits. Then read the winner with
    skill_read.
"""
LOW_CONFIDENCE_HINT = "include_low_confidence=true to see the closest anyway"
SEARCH_DESCRIPTION = " ".join(_SEARCH_TEXT.split())


def _hub(ctx: ToolContext) -> SkillHub:
    if ctx.hub is None:
        raise NotFoundError(
            "the skills hub is not enabled here — tap a repository with "
            "`ep-mcp tap owner/repo` and serve with the hub on"
        )
    return ctx.hub


_SKILL_PROPERTIES: dict[str, object] = {
    "id": {"type": "string"},
    "tap": {"type": "string"},
    "name": {"type": "string"},
    "description": {"type": "string"},
    "path": {"type": "string"},
}
_SKILL_ROW = output_object(_SKILL_PROPERTIES, ("id", "tap", "name"))


def _search(ctx: ToolContext, args: Arguments) -> ToolResult:
    reply = _hub(ctx).search(
        arg_str(args, "query"),
        arg_int(args, "limit", 10),
        smart=arg_opt_bool(args, "smart"),
        include_low_confidence=arg_bool(args, "include_low_confidence"),
    )
    return reply.with_hint(LOW_CONFIDENCE_HINT)


def _list(ctx: ToolContext, args: Arguments) -> ToolResult:
    return _hub(ctx).list_skills()


def _info(ctx: ToolContext, args: Arguments) -> ToolResult:
    return _hub(ctx).info(arg_str(args, "name"))


def _read(ctx: ToolContext, args: Arguments) -> ToolResult:
    return _hub(ctx).read(arg_str(args, "name"), offset=arg_int(args, "offset", 0))


def _discover(ctx: ToolContext, args: Arguments) -> ToolResult:
    return _hub(ctx).discover(arg_str(args, "query"), arg_int(args, "limit", 20))


register(
    ToolSpec(
        name="skill_search",
        title="Find the best skill for a task",
        description=SEARCH_DESCRIPTION,
        input_schema=input_object(
            {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_QUERY_CHARS,
                    "description": "The task, in plain words.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 50,
                    "default": 10,
                    "description": "How many skills to return (1-50).",
                },
                "smart": {
                    "type": "boolean",
                    "description": "Ask an LLM to rerank the shortlist (slower; falls back to "
                    "retrieval order). Default: the server's setting.",
                },
                "include_low_confidence": {
                    "type": "boolean",
                    "default": False,
                    "description": "Return the closest skills even when none matches the task "
                    "well (`matched: false`, the match under the hub's floor).",
                },
            },
            ("query",),
        ),
        output_schema=output_object(
            {
                "query": {"type": "string"},
                "ranker": {"type": "string"},
                "results": {"type": "array", "items": _SKILL_ROW},
                "took_ms": {"type": "number"},
                "matched": {"type": "boolean"},
                "match": {"type": "number"},
                "notes": {"type": "array", "items": {"type": "string"}},
            },
            ("query", "ranker", "results"),
        ),
        handler=_search,
        group="skills",
    )
)

register(
    ToolSpec(
        name="skill_list",
        title="List tapped skills",
        description="List every skill of every tapped repository: id (tap:folder), tap, name, "
        "description and the path of its SKILL.md.",
        input_schema=input_object({}),
        output_schema=output_object(
            {"count": {"type": "integer"}, "skills": {"type": "array", "items": _SKILL_ROW}},
            ("skills",),
        ),
        handler=_list,
        group="skills",
    )
)

register(
    ToolSpec(
        name="skill_info",
        title="Describe one skill",
        description="A skill's tap, description, SKILL.md path, supporting files and headings.",
        input_schema=input_object({"name": _NAME}, ("name",)),
        output_schema=_SKILL_ROW,
        handler=_info,
        group="skills",
    )
)

register(
    ToolSpec(
        name="skill_read",
        title="Read a skill's SKILL.md",
        description="The text of a skill's SKILL.md, up to a size budget. When it is longer the "
        "reply says `truncated: true` and gives the `offset` to continue from.",
        input_schema=input_object(
            {
                "name": _NAME,
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": "Character offset to continue a truncated read from.",
                },
            },
            ("name",),
        ),
        output_schema=output_object(
            {
                **_SKILL_PROPERTIES,
                "text": {"type": "string"},
                "truncated": {"type": "boolean"},
                "total_chars": {"type": "integer"},
            },
            ("id", "text", "truncated"),
        ),
        handler=_read,
        group="skills",
    )
)

register(
    ToolSpec(
        name="skill_discover_github",
        title="Discover skill repositories on GitHub",
        open_world=True,
        description="Search GitHub for SKILL.md files matching a query (needs the `gh` CLI, logged "
        "in). Each result names the repository and the command that taps it. Without `gh` the "
        "error says how to get it.",
        input_schema=input_object(
            {
                "query": {"type": "string", "maxLength": 300, "description": "Words to look for."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
            },
            ("query",),
        ),
        output_schema=output_object(
            {
                "query": {"type": "string"},
                "results": {"type": "array", "items": {"type": "object"}},
            },
            ("results",),
        ),
        handler=_discover,
        group="skills",
    )
)
