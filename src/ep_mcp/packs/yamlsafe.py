"""Bounded YAML parsing: pure-Python SafeLoader with size, depth and alias limits.

The libyaml ``CSafeLoader`` recurses in C once per nesting level and segfaults when the
thread's stack runs out (~25k levels on 8 MB, ~800 on 256 KB), which a tapped repository could
use to crash-loop the server, so it only reads small texts (``C_MAX_BYTES``) that cannot nest
deeper than ``max_depth`` (``_depth_bound``), with no anchor, alias or tag character and none
of the spellings where libyaml and PyYAML disagree (BOMs, `[a? ]`, `|#`; tabs aside) — most
frontmatter, 20x faster. Its result is checked against the same depth and node limits; any
doubt or error goes to the pure-Python loader, whose answer and errors are the reference.
Dates stay strings (``2026-04-21``), so frontmatter round-trips exactly as written; so do
numbers longer than ``MAX_NUMBER_CHARS`` (sexagesimal ``1:0:0:…`` is quadratic to convert and
huge ints cannot be printed) or that Python cannot convert (``0x_``). Only JSON-like values
come back: ``!!binary``, ``!!set``, ``!!omap`` and ``!!pairs`` are refused.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.scanner import ScannerError

from ep_mcp.errors import PackError

logger = logging.getLogger(__name__)

MAX_BYTES = 1_048_576  # manifests, sidecars, graphs, config files
FRONTMATTER_MAX_BYTES = 262_144
FRONTMATTER_MAX_NODES = 10_000  # real frontmatter has tens of nodes; parsing costs ~40 µs each
MAX_DEPTH = 64
MAX_ALIASES = 100
MAX_NODES = 100_000  # nodes, and nodes after alias expansion (a 342-byte bomb has ~4e8)
C_MAX_BYTES = 4096  # libyaml only below this, and only when it cannot nest past max_depth
MAX_NUMBER_CHARS = 100  # longer ints and floats stay strings


class YamlError(PackError):
    """A YAML text could not be parsed. ``line`` is 1-based within the parsed text."""

    def __init__(self, source: str, problem: str, line: int | None = None) -> None:
        self.source = source
        self.problem = problem
        self.line = line
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {problem}")


class YamlLimitError(YamlError):
    """The text exceeds a safety bound (size, nesting, aliases): treat it as hostile."""


class _LimitExceeded(Exception):
    def __init__(self, problem: str, line: int | None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line


def _line_of(node_or_mark: Any) -> int | None:
    mark = getattr(node_or_mark, "start_mark", node_or_mark)
    line = getattr(mark, "line", None)
    return line + 1 if isinstance(line, int) else None


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that counts nesting depth and aliases while composing."""

    def __init__(self, stream: str, *, max_depth: int, max_aliases: int, max_nodes: int) -> None:
        super().__init__(stream)
        self._max_depth = max_depth
        self._max_aliases = max_aliases
        self._max_nodes = max_nodes
        self._depth = 0
        self._nodes = 0
        self.alias_count = 0

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        # Refuse deep flow nesting in the scanner: it looks ahead over every pending `[`,
        # quadratically, before the composer would ever see the depth.
        if self.flow_level >= self._max_depth:
            line = self.get_mark().line + 1
            raise _LimitExceeded(f"YAML nested deeper than {self._max_depth} levels", line)
        super().fetch_flow_collection_start(TokenClass)

    def scan_flow_scalar(self, style: Any) -> Any:
        # PyYAML turns `"\\uD800"` into a lone surrogate (unencodable: SQLite and JSON fail
        # later) and `"\\U00110000"` into a ValueError: both are refused. A JSON-style pair
        # (`"\\uD83D\\uDE80"`, as `json.dumps` writes an emoji) becomes its one character.
        start = self.get_mark()
        try:
            token = super().scan_flow_scalar(style)
        except ValueError:
            token = None
        if token is not None and _SURROGATE.search(token.value):
            try:
                token.value = token.value.encode("utf-16", "surrogatepass").decode("utf-16")
            except UnicodeDecodeError:  # a surrogate without its other half
                token = None
        if token is None:
            problem = "escape outside Unicode (a lone surrogate or past U+10FFFF)"
            raise ScannerError(None, None, f"{problem} — write the character itself", start)
        return token

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(AliasEvent):
            self.alias_count += 1
            if self.alias_count > self._max_aliases:
                line = _line_of(self.peek_event())  # type: ignore[no-untyped-call]
                raise _LimitExceeded(f"more than {self._max_aliases} YAML aliases", line)
        self._nodes += 1
        if self._nodes > self._max_nodes:
            line = _line_of(self.peek_event())  # type: ignore[no-untyped-call]
            raise _LimitExceeded(f"more than {self._max_nodes} YAML nodes", line)
        self._depth += 1
        try:
            if self._depth > self._max_depth:
                line = _line_of(self.peek_event())  # type: ignore[no-untyped-call]
                raise _LimitExceeded(f"YAML nested deeper than {self._max_depth} levels", line)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_SURROGATE = re.compile("[\ud800-\udfff]")


def _timestamp_as_str(loader: yaml.SafeLoader, node: ScalarNode) -> str:
    return loader.construct_scalar(node)


def _bounded_number(base: Any) -> Any:
    """``base``, except that long or unconvertible numbers stay strings as written."""

    def construct(loader: yaml.SafeLoader, node: ScalarNode) -> Any:
        text = loader.construct_scalar(node)
        if len(text) > MAX_NUMBER_CHARS:
            return text
        try:
            return base(loader, node)
        except (ArithmeticError, LookupError, ValueError):
            return text

    return construct


def _refuse(loader: yaml.SafeLoader, node: Node) -> None:
    tag = str(node.tag).replace("tag:yaml.org,2002:", "!!")
    problem = f"YAML tag {tag} is not supported — use a plain string, list or mapping"
    raise ConstructorError(None, None, problem, node.start_mark)


def _restrict(cls: Any) -> None:
    """Dates as strings, bounded numbers, and no value a JSON document could not hold."""
    cls.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_str)
    for kind in ("int", "float"):
        base = yaml.SafeLoader.yaml_constructors[f"tag:yaml.org,2002:{kind}"]
        cls.add_constructor(f"tag:yaml.org,2002:{kind}", _bounded_number(base))
    for kind in ("binary", "set", "omap", "pairs"):
        cls.add_constructor(f"tag:yaml.org,2002:{kind}", _refuse)


class _FastLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's safe loader, dates as strings (only for texts ``_fast_ok`` lets through)."""


_restrict(_BoundedLoader)
_restrict(_FastLoader)

# Anchors, aliases, tags, directives; and spellings libyaml accepts but PyYAML refuses or
# reads otherwise: a BOM after a line break, `|#c`, `[a? ]` (checked below). Tabs stay: YAML
# 1.2 allows them where PyYAML's scanner does not (`a: b\t`, `title: a\tb`), and hand-written
# frontmatter has them; libyaml reads them as YAML says.
_NOT_FAST = re.compile(r"[&*!%\ufeff]|[|>][-+0-9]*#")
_BREAK = re.compile("\r\n?|[\n\x85\u2028\u2029]")
_INDICATOR = re.compile(r"[-?:](?=[ \t]|$)")


def _depth_bound(text: str) -> int:
    """An upper bound on the nesting depth of ``text`` (scalars included), cheap to compute.

    Block collections around a line start at columns no deeper than its indentation, two per
    column at most (a sequence under a key at the key's column); those starting on the line
    follow a `- `, `? ` or `: `; each flow level has its own bracket and at most one `a: b`.
    """
    worst = 0
    for line in _BREAK.split(text):
        indent = len(line) - len(line.lstrip(" "))
        worst = max(worst, 2 * (indent + 1) + len(_INDICATOR.findall(line)))
    return worst + 2 * (text.count("[") + text.count("{")) + 1


def _fast_ok(text: str, max_depth: int) -> bool:
    return (
        len(text) <= C_MAX_BYTES
        and not _NOT_FAST.search(text)
        and not ("?" in text and ("[" in text or "{" in text))
        and _depth_bound(text) <= max_depth
    )


def _shape(value: Any) -> tuple[int, int]:
    """(nesting depth, node count) of a parsed value, scalars included (as the composer counts)."""
    depth, nodes = 0, 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        nodes += 1
        depth = max(depth, level)
        if isinstance(item, dict):
            stack.extend((part, level + 1) for pair in item.items() for part in pair)
        elif isinstance(item, list):
            stack.extend((part, level + 1) for part in item)
    return depth, nodes


def _load_fast(text: str, max_depth: int, max_nodes: int) -> tuple[bool, Any]:
    """(True, value) when libyaml parsed ``text`` within the limits; (False, None) otherwise."""
    if not _fast_ok(text, max_depth):
        return False, None
    try:
        value = yaml.load(text, Loader=_FastLoader)  # a safe loader
    except Exception:
        return False, None  # the pure loader says what is wrong, with its own words
    if value is None:
        return True, None
    depth, nodes = _shape(value)
    return (depth <= max_depth and nodes <= max_nodes), value


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_expanded_size(root: Node, limit: int) -> None:
    """Count nodes as if every alias were expanded; refuse bombs and recursive aliases."""
    sizes: dict[int, int] = {}
    in_progress: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            in_progress.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[key] > limit:
                raise _LimitExceeded(f"YAML aliases expand to more than {limit} nodes", None)
            continue
        if key in sizes:
            continue
        if key in in_progress:
            raise _LimitExceeded("recursive YAML alias", _line_of(node))
        in_progress.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


def _check_size(text: str, source: str, max_bytes: int) -> None:
    if len(text) > max_bytes or len(text.encode("utf-8", "replace")) > max_bytes:
        raise YamlLimitError(source, f"YAML larger than {max_bytes} bytes")


def load_yaml(
    text: str,
    *,
    source: str = "<string>",
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    max_aliases: int = MAX_ALIASES,
    max_nodes: int = MAX_NODES,
) -> Any:
    """Parse one YAML document safely; raise YamlError (YamlLimitError when hostile)."""
    _check_size(text, source, max_bytes)
    fast, value = _load_fast(text, max_depth, max_nodes)
    if fast:
        return value
    loader: _BoundedLoader | None = None
    try:
        loader = _BoundedLoader(
            text, max_depth=max_depth, max_aliases=max_aliases, max_nodes=max_nodes
        )
        node = loader.get_single_node()
        if node is None:
            return None
        if loader.alias_count:
            _check_expanded_size(node, max_nodes)
        return loader.construct_document(node)
    except _LimitExceeded as exc:
        raise YamlLimitError(source, exc.problem, exc.line) from None
    except RecursionError:
        raise YamlLimitError(source, "YAML nested too deeply") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        raise YamlError(source, f"invalid YAML: {problem}", _line_of(mark)) from None
    except yaml.YAMLError as exc:
        raise YamlError(source, f"invalid YAML: {' '.join(str(exc).split())}") from None
    except (ArithmeticError, LookupError, TypeError, ValueError) as exc:  # e.g. `!!bool maybe`
        problem = " ".join(str(exc).split()) or type(exc).__name__
        raise YamlError(source, f"invalid YAML value ({problem}) — fix or quote it") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_yaml_file(path: Path, *, max_bytes: int = MAX_BYTES) -> Any:
    """Read and parse a YAML file. OSError propagates; bad content raises YamlError."""
    source = str(path)
    if path.stat().st_size > max_bytes:
        raise YamlLimitError(source, f"YAML file larger than {max_bytes} bytes")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise YamlError(source, "not valid UTF-8 — save the file as UTF-8", line) from None
    return load_yaml(text, source=source, max_bytes=max_bytes)
