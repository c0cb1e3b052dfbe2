"""`index.pg_build_memory`: the HNSW build memory of a PostgreSQL load, scaled with the
vectors by default and checked when set."""

from __future__ import annotations

import pytest

from ep_mcp.config.load import load_settings
from ep_mcp.errors import ConfigError
from ep_mcp.index.pgload import build_memory_mb


@pytest.mark.parametrize(
    ("vectors", "dim", "mb"),
    [
        (0, 384, 64),  # PostgreSQL's own default is the floor
        (10_000, 384, 64),
        (100_000, 384, 245),  # ~2.5 KB a 384-d vector, with headroom
        (500_000, 384, 1221),
        (1_000_000, 384, 2048),  # the ceiling of `auto`
        (100_000, 1536, 794),
    ],
)
def test_auto_scales_the_build_memory_with_the_vectors_within_bounds(
    vectors: int, dim: int, mb: int
) -> None:
    assert build_memory_mb("auto", vectors, dim) == mb


@pytest.mark.parametrize(("text", "mb"), [("512MB", 512), ("4GB", 4096), ("3gb", 3072)])
def test_a_configured_build_memory_is_used_as_given(text: str, mb: int) -> None:
    settings = load_settings(data={"index": {"pg_build_memory": text}})
    assert build_memory_mb(settings.index.pg_build_memory, 1_000_000, 384) == mb


@pytest.mark.parametrize("text", ["1GiB", "lots", "10MB", "100GB", "-1GB", "1.5GB", ""])
def test_a_bad_build_memory_is_one_config_line(text: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(data={"index": {"pg_build_memory": text}})
    line = [m for m in str(err.value).splitlines() if "pg_build_memory" in m]
    assert line and "auto, or a size from 64MB to 64GB" in line[0]
