"""The report's pictures: a partition's timeline, the cluster's health, the brokers' fencing lanes (PNG).

Plain data in (the small series of ``replay.audit.health``), a matplotlib ``Figure`` out. Figures are made with the
object-oriented API and saved through the Agg canvas, never through ``pyplot``: no GUI backend is needed, no
global figure state leaks between calls, and a notebook can display the returned figures as they are.
Offsets run along the x axis (the log's own clock); the top axis labels the same positions with the records'
append times (UTC), interpolated between the known ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from replay.audit.health import (
    BROKER_STATES,
    FENCED,
    SHUTTING_DOWN,
    UNFENCED,
    UNREGISTERED,
    BrokerSpan,
    HealthPoint,
    TimelinePoint,
)

WIDTH_IN, DPI = 11.0, 100
COLORS = {"offline": "#c0392b", "under_replicated": "#e67e22", "fenced_brokers": "#8e44ad", "leader": "#2c3e50",
          "epoch": "#2980b9", "isr": "#27ae60", "replicas": "#7f8c8d", FENCED: "#c0392b", UNFENCED: "#27ae60",
          SHUTTING_DOWN: "#f1c40f", UNREGISTERED: "#bdc3c7"}
Anchor = tuple[int, int]  # (offset, append time in epoch ms)


def _time_label(millis: float, span_ms: float) -> str:
    moment = datetime.fromtimestamp(millis / 1000, tz=UTC)
    if span_ms < 60_000:
        return moment.strftime("%H:%M:%S.") + f"{int(millis) % 1000:03d}"
    return moment.strftime("%H:%M:%S" if span_ms < 86_400_000 else "%m-%d %H:%M")


def _time_axis(ax: Axes, anchors: Sequence[Anchor]) -> None:
    """A top axis naming the append time (UTC) at the bottom axis's offset ticks."""
    known = sorted({(o, t) for o, t in anchors if t is not None})
    if not known:
        return
    offsets = np.array([o for o, _ in known], dtype=float)
    times = np.maximum.accumulate(np.array([t for _, t in known], dtype=float))  # append times never go back
    low, high = ax.get_xlim()
    ticks = [x for x in ax.get_xticks() if low <= x <= high]
    top = ax.twiny()
    top.set_xlim(low, high)
    top.set_xticks(ticks)
    stamps = np.interp(ticks, offsets, times)
    span = float(times[-1] - times[0]) if len(times) > 1 else 0.0
    top.set_xticklabels([_time_label(s, span) for s in stamps], fontsize=8)
    day = datetime.fromtimestamp(times[0] / 1000, tz=UTC).strftime("%Y-%m-%d")
    top.set_xlabel(f"append time (UTC, from {day})", fontsize=8)


def _steps(points: Sequence[tuple[int, float]], end: int) -> tuple[list[float], list[float]]:
    """x, y of a step function that holds each value until the next point, the last one until ``end``."""
    xs = [float(x) for x, _ in points]
    ys = [float(y) for _, y in points]
    if xs and end > xs[-1]:
        xs.append(float(end))
        ys.append(ys[-1])
    return xs, ys


def _no_data(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#7f8c8d")


def _figure(rows: int, height: float) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=(WIDTH_IN, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    return fig, list(axes)


def partition_timeline_figure(points: Sequence[TimelinePoint], *, title: str, start: int, end: int,
                              anchors: Sequence[Anchor] = ()) -> Figure:
    """Leader, leader epoch and ISR size (with the replica count) of one partition across offsets; spans
    without a leader are shaded."""
    fig, (lead, epoch, isr) = _figure(3, 7.5)
    fig.suptitle(title)
    if not points:
        _no_data(lead, "no version of this partition in the range")
    shown = [(max(p.offset, start), p) for p in points]
    xs, ys = _steps([(x, p.leader) for x, p in shown], end)
    lead.step(xs, ys, where="post", color=COLORS["leader"], marker="o", markersize=3)
    for point in points:
        if point.leader == -1:
            lead.axvspan(max(point.offset, start), point.to_offset if point.to_offset is not None else end,
                         color=COLORS["offline"], alpha=0.15, lw=0)
    lead.set_ylabel("leader (broker id)")
    lead.yaxis.set_major_locator(MaxNLocator(integer=True))
    lead.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: "none" if value == -1 else f"{value:g}"))
    xs, ys = _steps([(x, p.leader_epoch) for x, p in shown], end)
    epoch.step(xs, ys, where="post", color=COLORS["epoch"], marker="o", markersize=3)
    epoch.set_ylabel("leader epoch")
    epoch.yaxis.set_major_locator(MaxNLocator(integer=True))
    xs, ys = _steps([(x, p.isr_size) for x, p in shown], end)
    isr.step(xs, ys, where="post", color=COLORS["isr"], label="ISR size", lw=2)
    xs, ys = _steps([(x, p.replicas_size) for x, p in shown], end)
    isr.step(xs, ys, where="post", color=COLORS["replicas"], ls="--", label="replicas")
    isr.set_ylabel("replicas")
    isr.set_ylim(bottom=0)
    isr.yaxis.set_major_locator(MaxNLocator(integer=True))
    isr.legend(loc="lower right", fontsize=8)
    isr.set_xlabel("offset")
    for ax in (lead, epoch, isr):
        ax.grid(alpha=0.3)
    isr.set_xlim(start, max(end, start + 1))
    _time_axis(lead, [*anchors, *((p.offset, p.time_ms) for p in points if p.time_ms is not None)])
    return fig


def cluster_health_figure(points: Sequence[HealthPoint], *, start: int, end: int,
                          anchors: Sequence[Anchor] = (), title: str = "cluster health") -> Figure:
    """Offline partitions, under-replicated partitions and fenced brokers as step series over the offsets."""
    fig, axes = _figure(3, 7.5)
    fig.suptitle(title)
    labels = {"offline": "offline partitions\n(leader -1)", "under_replicated": "under-replicated\n(ISR < replicas)",
              "fenced_brokers": "fenced brokers"}
    first = [HealthPoint(start, None, 0, 0, 0)] if not points or points[0].offset > start else []
    series = [*first, *points]
    for ax, metric in zip(axes, labels, strict=True):
        xs, ys = _steps([(p.offset, getattr(p, metric)) for p in series], end)
        ax.fill_between(xs, ys, step="post", color=COLORS[metric], alpha=0.3)
        ax.step(xs, ys, where="post", color=COLORS[metric], lw=1.5)
        ax.set_ylabel(labels[metric], fontsize=9)
        ax.set_ylim(bottom=0, top=max([1.0, *ys]) * 1.15)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("offset")
    axes[-1].set_xlim(start, max(end, start + 1))
    _time_axis(axes[0], [*anchors, *((p.offset, p.time_ms) for p in points if p.time_ms is not None)])
    return fig


def broker_fencing_figure(spans: Sequence[BrokerSpan], *, start: int, end: int,
                          anchors: Sequence[Anchor] = (), title: str = "broker fencing") -> Figure:
    """One lane per broker: unfenced, in controlled shutdown, fenced, unregistered."""
    brokers = sorted({s.broker_id for s in spans})
    fig, (ax,) = _figure(1, max(3.0, 1.2 + 0.45 * len(brokers)))
    fig.suptitle(title)
    if not brokers:
        _no_data(ax, "no broker registered in the range")
    lane = {b: i for i, b in enumerate(brokers)}
    narrowest = max(end - start, 1) * 0.004  # a span of a few offsets in a long log stays visible
    for span in spans:
        left = max(span.from_offset, start)
        right = min(span.to_offset if span.to_offset is not None else end, end)
        if right < left:
            continue
        ax.broken_barh([(left, max(right - left, narrowest))], (lane[span.broker_id] - 0.4, 0.8),
                       facecolors=COLORS[span.state], edgecolor="white", linewidth=0.5)
    ax.set_yticks(range(len(brokers)))
    ax.set_yticklabels([f"broker {b}" for b in brokers])
    ax.set_ylim(-0.6, max(len(brokers), 1) - 0.4)
    ax.invert_yaxis()
    ax.set_xlim(start, max(end, start + 1))
    ax.set_xlabel("offset")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(handles=[Patch(facecolor=COLORS[s], label=s) for s in BROKER_STATES], loc="upper center",
              bbox_to_anchor=(0.5, -0.18 if len(brokers) > 3 else -0.3), ncol=len(BROKER_STATES), fontsize=8,
              frameon=False)
    _time_axis(ax, [*anchors, *((s.from_offset, s.from_time_ms) for s in spans if s.from_time_ms is not None)])
    return fig


def save_png(fig: Figure, path: Path) -> Path:
    """Write the figure as PNG (Agg), creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=DPI)
    return path


__all__ = ["broker_fencing_figure", "cluster_health_figure", "partition_timeline_figure", "save_png"]
