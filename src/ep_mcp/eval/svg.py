"""Plots as small inline SVG strings: grouped bars, before/after deltas and a histogram.

No plotting stack: each chart is a few dozen `<rect>` and `<text>` elements. Every label is
escaped, colours are presentation attributes (no `style=`, so a strict Content-Security-Policy
allows them), and the root carries `xmlns` so the same string is a valid standalone `.svg` file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

PALETTE = ("#3b6ea8", "#6a9fd4", "#a9c8ea", "#d9822b", "#7a5195", "#58a55c")
UP, DOWN, INK, MUTED, GRID = "#2e7d32", "#c62828", "#1f2328", "#57606a", "#d0d7de"
FONT = 'font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="12"'


def _t(text: object) -> str:
    return escape(str(text), quote=True)


def _svg(width: int, height: int, title: str, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{_t(title)}" {FONT}>'
        f"<title>{_t(title)}</title>"
        f'<text x="8" y="18" font-size="14" font-weight="600" fill="{INK}">{_t(title)}</text>'
        + "".join(body)
        + "</svg>"
    )


def _legend(series: Sequence[str], x: int, y: int) -> list[str]:
    out = []
    for i, name in enumerate(series):
        cx = x + i * 78
        out.append(
            f'<rect x="{cx}" y="{y - 9}" width="10" height="10" '
            f'fill="{PALETTE[i % len(PALETTE)]}"/>'
            f'<text x="{cx + 14}" y="{y}" fill="{MUTED}">{_t(name)}</text>'
        )
    return out


def grouped_bars(
    title: str,
    groups: Sequence[tuple[str, Mapping[str, float]]],
    series: Sequence[str],
    *,
    width: int = 640,
) -> str:
    """Horizontal bars, one cluster per group (a pack, a category), one bar per series
    (recall@1, MRR, ...); values in 0..1, printed at the bar's end."""
    label_w, bar_h, gap, top = 150, 12, 10, 44
    plot_w = width - label_w - 60
    height = top + len(groups) * (len(series) * bar_h + gap) + 24
    body = _legend(series, label_w, 34)
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = label_w + tick * plot_w
        body.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{height - 18}" stroke="{GRID}"/>'
            f'<text x="{x:.1f}" y="{height - 4}" text-anchor="middle" fill="{MUTED}">'
            f"{tick:g}</text>"
        )
    y = top
    for name, values in groups:
        cluster = len(series) * bar_h
        body.append(
            f'<text x="{label_w - 8}" y="{y + cluster / 2 + 4:.1f}" text-anchor="end" '
            f'fill="{INK}">{_t(name[:24])}</text>'
        )
        for i, key in enumerate(series):
            value = max(0.0, min(1.0, float(values.get(key, 0.0))))
            w = value * plot_w
            body.append(
                f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" '
                f'fill="{PALETTE[i % len(PALETTE)]}"><title>{_t(name)} {_t(key)} '
                f"{value:.3f}</title></rect>"
                f'<text x="{label_w + w + 4:.1f}" y="{y + bar_h - 3}" font-size="10" '
                f'fill="{MUTED}">{value:.2f}</text>'
            )
            y += bar_h
        y += gap
    return _svg(width, height, title, body)


def delta_bars(title: str, rows: Sequence[tuple[str, float, float]], *, width: int = 640) -> str:
    """Before → after per row (e.g. "blender-3d recall@1"): a bar left (worse, red) or right
    (better, green) of zero, scaled to the largest change, with both values printed."""
    label_w, bar_h, top = 210, 16, 40
    plot_w = width - label_w - 190
    mid = label_w + plot_w / 2
    scale = max([abs(after - before) for _, before, after in rows] + [0.05])
    height = top + len(rows) * (bar_h + 4) + 12
    body = [
        f'<line x1="{mid:.1f}" y1="{top - 6}" x2="{mid:.1f}" y2="{height - 8}" stroke="{GRID}"/>'
    ]
    y = top
    for name, before, after in rows:
        delta = after - before
        w = abs(delta) / scale * (plot_w / 2)
        x = mid if delta >= 0 else mid - w
        colour = UP if delta > 0 else DOWN if delta < 0 else MUTED
        body.append(
            f'<text x="{label_w - 8}" y="{y + 12}" text-anchor="end" fill="{INK}">'
            f"{_t(name[:34])}</text>"
            f'<rect x="{x:.1f}" y="{y}" width="{max(w, 1.0):.1f}" height="{bar_h - 2}" '
            f'fill="{colour}"><title>{_t(name)}: {before:.3f} → {after:.3f}</title></rect>'
            f'<text x="{label_w + plot_w + 8}" y="{y + 12}" fill="{MUTED}">'
            f"{before:.3f} → {after:.3f} ({delta:+.3f})</text>"
        )
        y += bar_h + 4
    return _svg(width, height, title, body)


def histogram(title: str, buckets: Sequence[tuple[str, int]], *, width: int = 480) -> str:
    """Vertical bars with a count above each and its label below."""
    top, plot_h, bottom = 36, 120, 34
    n = max(len(buckets), 1)
    slot = (width - 20) / n
    peak = max([c for _, c in buckets] + [1])
    body = [
        f'<line x1="10" y1="{top + plot_h}" x2="{width - 10}" y2="{top + plot_h}" stroke="{GRID}"/>'
    ]
    for i, (label, count) in enumerate(buckets):
        h = count / peak * plot_h
        x = 10 + i * slot + slot * 0.15
        body.append(
            f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{slot * 0.7:.1f}" '
            f'height="{h:.1f}" fill="{PALETTE[0]}"><title>{_t(label)}: {count}</title></rect>'
            f'<text x="{x + slot * 0.35:.1f}" y="{top + plot_h - h - 4:.1f}" '
            f'text-anchor="middle" fill="{INK}">{count}</text>'
            f'<text x="{x + slot * 0.35:.1f}" y="{top + plot_h + 16}" text-anchor="middle" '
            f'fill="{MUTED}">{_t(label)}</text>'
        )
    return _svg(width, top + plot_h + bottom, title, body)


def reliability(title: str, bins: Sequence[tuple[float, float, int]], *, size: int = 320) -> str:
    """Reliability diagram: observed rate against mean predicted probability per bin (a dot
    sized by its count), with the diagonal of perfect calibration."""
    pad, top = 40, 30
    plot = size - pad - 12
    peak = max([n for _, _, n in bins] + [1])

    def xy(p: float, r: float) -> tuple[float, float]:
        return pad + p * plot, top + (1 - r) * plot

    x0, y0 = xy(0, 0)
    x1, y1 = xy(1, 1)
    body = [
        f'<rect x="{pad}" y="{top}" width="{plot}" height="{plot}" fill="none" stroke="{GRID}"/>'
        f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y1}" stroke="{MUTED}" stroke-dasharray="4 3"/>'
        f'<text x="{pad + plot / 2}" y="{size + 14}" text-anchor="middle" fill="{MUTED}">'
        "predicted probability</text>"
        f'<text x="12" y="{top + plot / 2}" fill="{MUTED}" '
        f'transform="rotate(-90 12 {top + plot / 2})" text-anchor="middle">observed rate</text>'
    ]
    for p, r, n in bins:
        x, y = xy(p, r)
        radius = 3 + 7 * (n / peak) ** 0.5
        body.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius:.1f}" fill="{PALETTE[0]}" '
            f'fill-opacity="0.7"><title>predicted {p:.2f}, observed {r:.2f}, n={n}</title>'
            "</circle>"
        )
    return _svg(size, size + 20, title, body)
