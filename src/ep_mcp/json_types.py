"""The one name for a JSON object as results become JSON at the adapters."""

from __future__ import annotations

JsonObject = dict[str, object]  # a result ready for json.dumps (tools, hub, reading)
