/**
 * The timeline, interactive: wheel zooms about the cursor (shift+wheel or a
 * horizontal wheel pans), drag pans, +/−/arrows/0 from the keyboard, hover
 * shows the action under the pointer. Drawing happens in requestAnimationFrame
 * straight from refs, so zooming never re-renders React.
 */
import { useCallback, useEffect, useId, useMemo, useRef, useState } from 'react';
import { laneCount, laneLabel, mesh, type Interval, type Timeline } from '../../schedule/index.ts';
import { COLLECTIVE_NAMES, COMM_NAMES, OP_NAMES } from './colors.ts';
import { canvasHeightFor, drawTimeline, laneAt, layoutLanes, type TimelineLayout } from './draw-timeline.ts';
import { buildLaneIndex, hitTest, type LaneIndex } from './lane-index.ts';
import { clampViewport, fitViewport, openingBounds, panBy, timeAt, wheelZoomFactor, zoomAbout, type Bounds, type Viewport } from './viewport.ts';

export interface TimelineCanvasProps {
  timeline: Timeline | null;
  /** Drawn as dashed outlines over `timeline` (already on its time scale). */
  overlay?: Timeline | null;
  /** Accessible name, e.g. "Measured timeline, 4 ranks". */
  label: string;
  /** Force the data extent (compare view: every timeline on one scale). */
  extent?: Bounds;
  /** Canvas height in CSS pixels; by default it follows the rank count. */
  height?: number;
  /** Shown in the plot when there is nothing to draw. */
  emptyText?: string;
  /** Open the view on the actions of micro-batches below this (a long stream's first steps) rather than on all; Fit shows all. */
  openOn?: number;
}

interface Hovered {
  x: number;
  y: number;
  iv: Interval;
}

function fmt(t: number, unit: 'ms' | 'unit'): string {
  const abs = Math.abs(t);
  const digits = abs >= 100 ? 1 : abs >= 10 ? 2 : 3;
  return unit === 'ms' ? `${t.toFixed(digits)} ms` : `${t.toFixed(digits)}`;
}

function tooltipLines(iv: Interval, unit: 'ms' | 'unit'): [string, string][] {
  const peer = iv.peer !== undefined ? ` (peer ${iv.op === 'collective' ? 'worker' : 'rank'} ${iv.peer})` : '';
  const what =
    iv.op === 'collective' ? `${COLLECTIVE_NAMES[iv.coll ?? 'reduce-scatter']}${peer}` : iv.op === 'comm' ? `${COMM_NAMES[iv.comm ?? 'send']}${peer}` : `${iv.op}: ${OP_NAMES[iv.op]}`;
  const lines: [string, string][] = [];
  if (iv.replica !== undefined) lines.push(['replica', String(iv.replica)]);
  if (iv.tpRank !== undefined) lines.push(['tp rank', String(iv.tpRank)]);
  lines.push(['rank', String(iv.rank)], ['stage', String(iv.stage)], ['op', what]);
  if (iv.op === 'collective') {
    lines.push(['exchange', String(iv.mb)]);
    if (iv.bytes !== undefined) lines.push(['bytes', iv.bytes.toLocaleString('en-US')]);
    if (iv.wait !== undefined) lines.push(['waiting', `${fmt(iv.wait, unit)} for the ep group’s slowest member`]);
  } else lines.push(['micro-batch', String(iv.mb)]);
  lines.push(['start', fmt(iv.start, unit)], ['duration', fmt(iv.end - iv.start, unit)]);
  if (iv.gpuMs !== undefined) lines.push(['GPU time', `${fmt(iv.gpuMs, 'ms')} (timestamp queries)`]);
  return lines;
}

export function TimelineCanvas({ timeline, overlay, label, extent, height, emptyText, openOn }: TimelineCanvasProps) {
  const wrapRef = useRef<HTMLDivElement>(null);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const [width, setWidth] = useState(0);
  const [hovered, setHovered] = useState<Hovered | null>(null);
  const helpId = useId();

  const index = useMemo<LaneIndex | null>(() => (timeline ? buildLaneIndex(timeline) : null), [timeline]);
  const overlayIndex = useMemo<LaneIndex | null>(() => (overlay ? buildLaneIndex(overlay) : null), [overlay]);
  const shown = timeline ?? overlay;
  // Pipeline ranks per replica (chunk shading) and lanes: one per worker, dp × ranks.
  const ranks = shown?.ranks ?? 0;
  const lanes = shown ? laneCount(shown) : 0;
  const dp = shown?.dp ?? 1;
  const tp = shown?.tp ?? 1;
  const ep = shown?.ep ?? 1;
  const cssHeight = height ?? canvasHeightFor(Math.max(lanes, 1));
  const bounds = useMemo<Bounds>(() => {
    if (extent) return extent;
    const t0 = Math.min(index?.t0 ?? Infinity, overlayIndex?.t0 ?? Infinity);
    const t1 = Math.max(index?.t1 ?? -Infinity, overlayIndex?.t1 ?? -Infinity);
    return Number.isFinite(t0) && Number.isFinite(t1) && t1 > t0 ? { t0, t1 } : { t0: 0, t1: 1 };
  }, [extent, index, overlayIndex]);

  const opening = useMemo(() => (timeline && openOn !== undefined ? openingBounds(timeline.intervals, openOn, bounds) : null), [timeline, openOn, bounds]);
  const viewRef = useRef<Viewport>(fitViewport(opening ?? bounds));
  const userMovedRef = useRef(false);
  const hoverRef = useRef<Interval | null>(null);
  const layoutRef = useRef<TimelineLayout | null>(null);
  const frameRef = useRef(0);
  const sceneRef = useRef({ index, overlayIndex, bounds, ranks, dp, tp, ep, unit: timeline?.unit ?? 'unit' as 'ms' | 'unit' });
  sceneRef.current = { index, overlayIndex, bounds, ranks, dp, tp, ep, unit: timeline?.unit ?? overlay?.unit ?? 'unit' };

  const draw = useCallback(() => {
    frameRef.current = 0;
    const canvas = canvasRef.current;
    const layout = layoutRef.current;
    const { index: idx, overlayIndex: ov, ranks: r, dp: d, tp: tpn, ep: epn, unit } = sceneRef.current;
    if (!canvas || !layout) return;
    const ctx = canvas.getContext('2d');
    if (!ctx) return;
    const dpr = window.devicePixelRatio || 1;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const base = idx ?? ov;
    if (!base) {
      ctx.clearRect(0, 0, layout.width, layout.height);
      return;
    }
    const t0 = performance.now();
    drawTimeline(ctx, {
      index: idx ?? base,
      overlay: idx ? ov : null,
      view: viewRef.current,
      layout,
      ranks: r,
      unit,
      hover: hoverRef.current,
      laneLabel: d > 1 || tpn > 1 || epn > 1 ? (w) => laneLabel(mesh(d, r, tpn, epn), w) : undefined,
    });
    // How long the last frame took to draw, for the tests and the curious.
    if (wrapRef.current) wrapRef.current.dataset.drawMs = (performance.now() - t0).toFixed(2);
  }, []);

  const requestDraw = useCallback(() => {
    if (frameRef.current === 0) frameRef.current = requestAnimationFrame(draw);
  }, [draw]);

  // Reset the handle too: React (StrictMode in dev) may mount again after this cleanup,
  // and a stale non-zero handle would make requestDraw think a frame is still pending.
  useEffect(
    () => () => {
      cancelAnimationFrame(frameRef.current);
      frameRef.current = 0;
    },
    [],
  );

  // Width follows the container.
  useEffect(() => {
    const el = wrapRef.current;
    if (!el) return;
    const ro = new ResizeObserver((entries) => {
      const w = Math.floor(entries[0]?.contentRect.width ?? 0);
      setWidth(w);
    });
    ro.observe(el);
    setWidth(Math.floor(el.getBoundingClientRect().width));
    return () => ro.disconnect();
  }, []);

  // Canvas size (device pixels) and layout.
  useEffect(() => {
    const canvas = canvasRef.current;
    if (!canvas || width <= 0) return;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(cssHeight * dpr);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${cssHeight}px`;
    layoutRef.current = layoutLanes(lanes, width, cssHeight, (index ?? overlayIndex)?.hasComm ?? false);
    requestDraw();
  }, [width, cssHeight, lanes, index, overlayIndex, requestDraw]);

  // New data: refit unless the person has zoomed or panned.
  useEffect(() => {
    viewRef.current = userMovedRef.current ? clampViewport(viewRef.current, bounds) : clampViewport(fitViewport(opening ?? bounds), bounds);
    hoverRef.current = null;
    setHovered(null);
    requestDraw();
  }, [bounds, opening, index, overlayIndex, requestDraw]);

  const setView = useCallback(
    (v: Viewport) => {
      viewRef.current = v;
      userMovedRef.current = true;
      requestDraw();
    },
    [requestDraw],
  );

  const fit = useCallback(() => {
    userMovedRef.current = false;
    viewRef.current = fitViewport(sceneRef.current.bounds);
    requestDraw();
  }, [requestDraw]);

  const zoomCenter = useCallback(
    (factor: number) => {
      const v = viewRef.current;
      setView(zoomAbout(v, (v.a + v.b) / 2, factor, sceneRef.current.bounds));
    },
    [setView],
  );

  // Wheel: must be non-passive to keep the page from scrolling while zooming.
  useEffect(() => {
    const canvas = canvasRef.current;
    if (!canvas) return;
    const onWheel = (e: WheelEvent) => {
      const layout = layoutRef.current;
      if (!layout) return;
      e.preventDefault();
      const v = viewRef.current;
      const b = sceneRef.current.bounds;
      const rect = canvas.getBoundingClientRect();
      const x = e.clientX - rect.left - layout.plotX;
      const horizontal = Math.abs(e.deltaX) > Math.abs(e.deltaY) || e.shiftKey;
      if (horizontal) {
        const d = Math.abs(e.deltaX) > Math.abs(e.deltaY) ? e.deltaX : e.deltaY;
        setView(panBy(v, (d / layout.plotW) * (v.b - v.a), b));
      } else {
        setView(zoomAbout(v, timeAt(v, x, layout.plotW), wheelZoomFactor(e.deltaY), b));
      }
    };
    canvas.addEventListener('wheel', onWheel, { passive: false });
    return () => canvas.removeEventListener('wheel', onWheel);
  }, [setView]);

  const dragRef = useRef<{ x: number; view: Viewport; moved: boolean } | null>(null);

  const pick = useCallback((clientX: number, clientY: number): Hovered | null => {
    const canvas = canvasRef.current;
    const layout = layoutRef.current;
    const idx = sceneRef.current.index ?? sceneRef.current.overlayIndex;
    if (!canvas || !layout || !idx) return null;
    const rect = canvas.getBoundingClientRect();
    const x = clientX - rect.left;
    const y = clientY - rect.top;
    const at = laneAt(layout, x, y);
    if (!at) return null;
    const v = viewRef.current;
    const t = timeAt(v, x - layout.plotX, layout.plotW);
    const slack = (3 / layout.plotW) * (v.b - v.a);
    const lane = at.part === 'compute' ? idx.compute[at.rank] : idx.comm[at.rank];
    const iv = lane ? hitTest(lane, t, slack) : null;
    return iv ? { x, y, iv } : null;
  }, []);

  const onPointerDown = (e: React.PointerEvent<HTMLCanvasElement>) => {
    if (e.button !== 0) return;
    e.currentTarget.setPointerCapture(e.pointerId);
    dragRef.current = { x: e.clientX, view: viewRef.current, moved: false };
  };

  const onPointerMove = (e: React.PointerEvent<HTMLCanvasElement>) => {
    const drag = dragRef.current;
    const layout = layoutRef.current;
    if (drag && layout) {
      const dx = e.clientX - drag.x;
      if (Math.abs(dx) > 2) drag.moved = true;
      if (drag.moved) {
        const span = drag.view.b - drag.view.a;
        setView(panBy(drag.view, (-dx / layout.plotW) * span, sceneRef.current.bounds));
        if (hoverRef.current) {
          hoverRef.current = null;
          setHovered(null);
        }
        return;
      }
    }
    const h = pick(e.clientX, e.clientY);
    if (h?.iv !== hoverRef.current) {
      hoverRef.current = h?.iv ?? null;
      requestDraw();
    }
    setHovered(h);
  };

  const onPointerUp = (e: React.PointerEvent<HTMLCanvasElement>) => {
    if (e.currentTarget.hasPointerCapture(e.pointerId)) e.currentTarget.releasePointerCapture(e.pointerId);
    dragRef.current = null;
  };

  const onPointerLeave = () => {
    if (dragRef.current) return;
    hoverRef.current = null;
    setHovered(null);
    requestDraw();
  };

  const onKeyDown = (e: React.KeyboardEvent<HTMLDivElement>) => {
    const v = viewRef.current;
    const b = sceneRef.current.bounds;
    const span = v.b - v.a;
    switch (e.key) {
      case '+':
      case '=':
        zoomCenter(0.7);
        break;
      case '-':
      case '_':
        zoomCenter(1 / 0.7);
        break;
      case 'ArrowLeft':
        setView(panBy(v, -span * 0.15, b));
        break;
      case 'ArrowRight':
        setView(panBy(v, span * 0.15, b));
        break;
      case '0':
      case 'Home':
        fit();
        break;
      default:
        return;
    }
    e.preventDefault();
  };

  const unit = timeline?.unit ?? overlay?.unit ?? 'unit';
  const empty = !timeline && !overlay;

  return (
    <div className="timeline">
      <div className="timeline-toolbar" role="toolbar" aria-label={`${label}: zoom`}>
        <button type="button" onClick={() => zoomCenter(0.7)} aria-label="Zoom in" title="Zoom in (+)">+</button>
        <button type="button" onClick={() => zoomCenter(1 / 0.7)} aria-label="Zoom out" title="Zoom out (−)">−</button>
        <button type="button" onClick={fit} title="Fit the whole step (0)">Fit</button>
      </div>
      <div
        ref={wrapRef}
        className="timeline-plot"
        tabIndex={0}
        role="group"
        aria-label={label}
        aria-describedby={helpId}
        onKeyDown={onKeyDown}
        data-intervals={timeline?.intervals.length ?? 0}
        data-ranks={ranks}
        data-lanes={lanes}
      >
        <span id={helpId} className="visually-hidden">
          Wheel or plus and minus keys zoom, drag or arrow keys pan, 0 fits the whole step. Hover an action for its details.
        </span>
        <canvas
          ref={canvasRef}
          aria-hidden="true"
          onPointerDown={onPointerDown}
          onPointerMove={onPointerMove}
          onPointerUp={onPointerUp}
          onPointerCancel={onPointerUp}
          onPointerLeave={onPointerLeave}
          style={{ height: cssHeight }}
        />
        {empty && <div className="timeline-empty">{emptyText ?? 'Nothing to draw yet.'}</div>}
        {hovered && (
          <div
            className="timeline-tooltip"
            role="tooltip"
            style={{ left: Math.min(hovered.x + 14, Math.max(0, width - 220)), top: hovered.y + 14 }}
          >
            {tooltipLines(hovered.iv, unit).map(([k, v]) => (
              <div key={k} className="row">
                <span>{k}</span>
                <b>{v}</b>
              </div>
            ))}
          </div>
        )}
      </div>
    </div>
  );
}
