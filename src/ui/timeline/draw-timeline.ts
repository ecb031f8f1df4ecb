/**
 * Draws a timeline on a 2D canvas: a lane per rank (hatched where the rank is
 * idle: the bubble), a thin communication lane under it, actions filled by op
 * and labelled with their micro-batch when there is room, an optional overlay
 * drawn as outlines, and a time axis. Only intervals in view are visited
 * (binary search per lane); fills are batched per colour and runs narrower
 * than a pixel are merged, so the cost stays bounded by the pixels, not by
 * the number of intervals.
 */
import { isCompute, laneOf, type Interval } from '../../schedule/index.ts';
import { formatTick, niceStep, ticks } from './axis-ticks.ts';
import { PALETTE, THEME } from './colors.ts';
import type { Lane, LaneIndex } from './lane-index.ts';
import { visibleRange } from './lane-index.ts';
import type { Viewport } from './viewport.ts';
import { xOf } from './viewport.ts';

export const GUTTER = 58;
export const AXIS = 22;
const PAD_BOTTOM = 6;

export interface LaneBox {
  /** Compute lane top and height. */
  y: number;
  h: number;
  /** Communication sub-lane top and height (0 when the timeline has none). */
  cy: number;
  ch: number;
}

export interface TimelineLayout {
  width: number;
  height: number;
  plotX: number;
  plotW: number;
  lanes: LaneBox[];
}

/** Row height per rank that keeps lanes readable from 2 to 64+ ranks. */
export function rowHeightFor(ranks: number): number {
  if (ranks <= 4) return 54;
  if (ranks <= 8) return 40;
  if (ranks <= 16) return 26;
  if (ranks <= 32) return 14;
  return 8;
}

export function canvasHeightFor(ranks: number): number {
  return AXIS + Math.max(1, ranks) * rowHeightFor(ranks) + PAD_BOTTOM;
}

export function layoutLanes(ranks: number, width: number, height: number, hasComm: boolean): TimelineLayout {
  const rows = Math.max(1, ranks);
  const row = (height - AXIS - PAD_BOTTOM) / rows;
  const gap = row >= 20 ? 4 : row >= 10 ? 2 : 1;
  const ch = hasComm ? Math.max(2, Math.round(row * 0.18)) : 0;
  const h = Math.max(1, row - gap - ch - (hasComm ? 1 : 0));
  const lanes: LaneBox[] = [];
  for (let r = 0; r < ranks; r++) {
    const y = AXIS + r * row;
    lanes.push({ y, h, cy: y + h + (hasComm ? 1 : 0), ch });
  }
  return { width, height, plotX: GUTTER, plotW: Math.max(1, width - GUTTER - 8), lanes };
}

export interface TimelineScene {
  index: LaneIndex;
  view: Viewport;
  layout: TimelineLayout;
  /** Stages per rank (virtual stages) for chunk shading; 1 for plain schedules. */
  ranks: number;
  unit: 'ms' | 'unit';
  overlay?: LaneIndex | null;
  hover?: Interval | null;
  /** Rank lane labels, e.g. "R0". */
  laneLabel?: (rank: number) => string;
}

/**
 * Rects per palette colour. A rect that starts within half a pixel of the
 * previous rect of the same colour on the same row extends it instead, so
 * thousands of sub-pixel actions become a handful of rects.
 */
class Batcher {
  private readonly rects: number[][] = PALETTE.map(() => []);

  add(color: number, x0: number, y: number, x1: number, h: number): void {
    const r = this.rects[color];
    const n = r.length;
    if (n >= 4 && r[n - 3] === y && r[n - 1] === h && x0 <= r[n - 4] + r[n - 2] + 0.5) {
      const end = r[n - 4] + r[n - 2];
      if (x1 > end) r[n - 2] = x1 - r[n - 4];
      return;
    }
    r.push(x0, y, x1 - x0, h);
  }

  fill(ctx: CanvasRenderingContext2D): void {
    this.rects.forEach((r, color) => {
      if (r.length === 0) return;
      ctx.fillStyle = PALETTE[color];
      ctx.beginPath();
      for (let i = 0; i < r.length; i += 4) ctx.rect(r[i], r[i + 1], r[i + 2], r[i + 3]);
      ctx.fill();
    });
  }
}

let hatchCache: { pattern: CanvasPattern; ctx: CanvasRenderingContext2D } | null = null;

function hatchPattern(ctx: CanvasRenderingContext2D): CanvasPattern | string {
  if (hatchCache && hatchCache.ctx === ctx) return hatchCache.pattern;
  const tile = document.createElement('canvas');
  tile.width = 8;
  tile.height = 8;
  const t = tile.getContext('2d');
  if (!t) return THEME.laneBg;
  t.fillStyle = THEME.laneBg;
  t.fillRect(0, 0, 8, 8);
  t.strokeStyle = THEME.hatch;
  t.lineWidth = 2;
  t.beginPath();
  t.moveTo(-2, 10);
  t.lineTo(10, -2);
  t.moveTo(-2, 2);
  t.lineTo(2, -2);
  t.moveTo(6, 10);
  t.lineTo(10, 6);
  t.stroke();
  const pattern = ctx.createPattern(tile, 'repeat');
  if (!pattern) return THEME.laneBg;
  hatchCache = { pattern, ctx };
  return pattern;
}

let waitCache: { pattern: CanvasPattern; ctx: CanvasRenderingContext2D } | null = null;

/** Light stripes over an interval's colour: the part of an ep all-to-all spent waiting for the slowest member. */
function waitPattern(ctx: CanvasRenderingContext2D): CanvasPattern | string {
  if (waitCache && waitCache.ctx === ctx) return waitCache.pattern;
  const tile = document.createElement('canvas');
  tile.width = 6;
  tile.height = 6;
  const t = tile.getContext('2d');
  if (!t) return THEME.epWait;
  t.strokeStyle = THEME.epWait;
  t.lineWidth = 2;
  t.beginPath();
  t.moveTo(-1, 7);
  t.lineTo(7, -1);
  t.stroke();
  const pattern = ctx.createPattern(tile, 'repeat');
  if (!pattern) return THEME.epWait;
  waitCache = { pattern, ctx };
  return pattern;
}

/** Stripes the waiting part [start, start + wait] of a lane's intervals that carry one (ep all-to-alls). */
function drawWaits(lane: Lane, y: number, h: number, scene: TimelineScene, ctx: CanvasRenderingContext2D): void {
  const { view, layout } = scene;
  const { plotX, plotW } = layout;
  const [from, to] = visibleRange(lane, view.a, view.b);
  for (let i = from; i < to; i++) {
    const wait = lane.items[i].wait;
    if (!wait || wait <= 0) continue;
    const x0 = clipX(plotX + xOf(view, lane.starts[i], plotW), plotX, plotW);
    const x1 = clipX(plotX + xOf(view, lane.starts[i] + wait, plotW), plotX, plotW);
    if (x1 - x0 >= 0.5) ctx.fillRect(x0, y, x1 - x0, h);
  }
}

function clipX(x: number, plotX: number, plotW: number): number {
  return x < plotX - 1 ? plotX - 1 : x > plotX + plotW + 1 ? plotX + plotW + 1 : x;
}

interface Label {
  x: number;
  y: number;
  text: string;
}

/** Per palette colour, the pixel up to which the current lane is already filled. */
const coveredTo = new Float64Array(PALETTE.length);

/** Adds a lane's visible intervals to `fills` (and, when wide enough, their micro-batch to `labels`). */
function drawLane(lane: Lane, y: number, h: number, scene: TimelineScene, fills: Batcher, labels: Label[] | null): void {
  if (h <= 0) return;
  const { view, layout } = scene;
  const { plotX, plotW } = layout;
  const [from, to] = visibleRange(lane, view.a, view.b);
  const k = plotW / (view.b - view.a);
  const off = plotX - view.a * k;
  const { starts, ends, colors } = lane;
  const lo = plotX - 1;
  const hi = plotX + plotW + 1;
  const lastX1 = coveredTo.fill(-Infinity);
  for (let i = from; i < to; i++) {
    let x0 = starts[i] * k + off;
    let x1 = ends[i] * k + off;
    const c = colors[i];
    // Within what this lane's last rect of this colour already covers: nothing to add.
    if (x1 <= lastX1[c]) continue;
    if (x0 < lo) x0 = lo;
    if (x1 > hi) x1 = hi;
    if (x1 - x0 < 0.6) x1 = x0 + 0.6;
    const w = x1 - x0;
    // A hairline gap between neighbours keeps back-to-back actions apart when they are wide enough.
    fills.add(c, x0, y, w > 4 ? x1 - 1 : x1, h);
    lastX1[c] = x1;
    if (labels && w >= 13) labels.push({ x: (x0 + x1) / 2, y: y + h / 2, text: String(lane.items[i].mb) });
  }
}

function drawOverlay(scene: TimelineScene, ctx: CanvasRenderingContext2D): void {
  const overlay = scene.overlay;
  if (!overlay) return;
  const { view, layout } = scene;
  const { plotX, plotW } = layout;
  ctx.save();
  ctx.strokeStyle = THEME.overlay;
  ctx.lineWidth = 1.25;
  ctx.setLineDash([4, 2]);
  ctx.beginPath();
  overlay.compute.forEach((lane, r) => {
    const box = layout.lanes[r];
    if (!box) return;
    const [from, to] = visibleRange(lane, view.a, view.b);
    let lastX = -Infinity;
    for (let i = from; i < to; i++) {
      const x0 = clipX(plotX + xOf(view, lane.starts[i], plotW), plotX, plotW);
      const x1 = clipX(plotX + xOf(view, lane.ends[i], plotW), plotX, plotW);
      if (x1 < lastX + 1) continue;
      lastX = x1;
      ctx.rect(x0 + 0.5, box.y + 1.5, Math.max(0.5, x1 - x0 - 1), Math.max(0.5, box.h - 3));
    }
  });
  ctx.stroke();
  ctx.restore();
}

function drawAxis(scene: TimelineScene, ctx: CanvasRenderingContext2D): void {
  const { view, layout, unit } = scene;
  const { plotX, plotW, height } = layout;
  const maxTicks = Math.max(2, Math.floor(plotW / 90));
  const step = niceStep(view.b - view.a, maxTicks);
  ctx.font = '11px ui-sans-serif, system-ui, sans-serif';
  ctx.textBaseline = 'middle';
  ctx.textAlign = 'center';
  ctx.fillStyle = THEME.axisText;
  ctx.strokeStyle = THEME.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const t of ticks(view.a, view.b, maxTicks)) {
    const x = Math.round(plotX + xOf(view, t, plotW)) + 0.5;
    if (x < plotX || x > plotX + plotW) continue;
    ctx.moveTo(x, AXIS - 4);
    ctx.lineTo(x, height - PAD_BOTTOM);
    ctx.fillText(formatTick(t, step, unit), x, AXIS / 2 - 1);
  }
  ctx.stroke();
}

/** Draws the whole scene; `ctx` is already scaled for devicePixelRatio. */
export function drawTimeline(ctx: CanvasRenderingContext2D, scene: TimelineScene): void {
  const { layout, index } = scene;
  const { width, height, plotX, plotW } = layout;
  ctx.clearRect(0, 0, width, height);

  // Lanes: hatched everywhere, so whatever compute does not cover reads as idle.
  const hatch = hatchPattern(ctx);
  ctx.fillStyle = hatch;
  for (const box of layout.lanes) ctx.fillRect(plotX, box.y, plotW, box.h);
  if (index.hasComm) {
    ctx.fillStyle = THEME.commLaneBg;
    for (const box of layout.lanes) if (box.ch > 0) ctx.fillRect(plotX, box.cy, plotW, box.ch);
  }

  drawAxis(scene, ctx);

  ctx.save();
  ctx.beginPath();
  ctx.rect(plotX, 0, plotW, height);
  ctx.clip();
  const fills = new Batcher();
  const labels: Label[] = [];
  index.compute.forEach((lane, r) => {
    const box = layout.lanes[r];
    if (box) drawLane(lane, box.y, box.h, scene, fills, box.h >= 11 ? labels : null);
  });
  index.comm.forEach((lane, r) => {
    const box = layout.lanes[r];
    if (box) drawLane(lane, box.cy, box.ch, scene, fills, null);
  });
  fills.fill(ctx);
  if (index.hasComm) {
    ctx.fillStyle = waitPattern(ctx);
    index.comm.forEach((lane, r) => {
      const box = layout.lanes[r];
      if (box && box.ch > 0) drawWaits(lane, box.cy, box.ch, scene, ctx);
    });
  }

  if (labels.length > 0) {
    const box0 = layout.lanes[0];
    const size = Math.max(9, Math.min(12, Math.floor((box0?.h ?? 12) * 0.42)));
    ctx.font = `600 ${size}px ui-sans-serif, system-ui, sans-serif`;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    ctx.fillStyle = THEME.label;
    for (const l of labels) ctx.fillText(l.text, l.x, l.y + 0.5);
  }

  drawOverlay(scene, ctx);

  const hover = scene.hover;
  if (hover) {
    const box = layout.lanes[laneOf(scene.index, hover)];
    if (box) {
      const x0 = plotX + xOf(scene.view, hover.start, plotW);
      const x1 = plotX + xOf(scene.view, hover.end, plotW);
      const strip = !isCompute(hover);
      const y = strip ? box.cy : box.y;
      const h = strip ? box.ch : box.h;
      ctx.strokeStyle = THEME.hover;
      ctx.lineWidth = 2;
      ctx.strokeRect(x0 - 1, y - 1, Math.max(2, x1 - x0) + 2, h + 2);
    }
  }
  ctx.restore();

  // Gutter labels.
  ctx.font = '600 11px ui-sans-serif, system-ui, sans-serif';
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  ctx.fillStyle = THEME.gutterText;
  const every = layout.lanes.length > 0 && layout.lanes[0].h + layout.lanes[0].ch < 9 ? 4 : 1;
  layout.lanes.forEach((box, r) => {
    if (r % every !== 0) return;
    const text = scene.laneLabel ? scene.laneLabel(r) : `R${r}`;
    ctx.fillText(text, plotX - 8, box.y + box.h / 2);
  });
}

/** The lane (rank) and part ('compute' | 'comm') under canvas point (x, y), or null. */
export function laneAt(layout: TimelineLayout, x: number, y: number): { rank: number; part: 'compute' | 'comm' } | null {
  if (x < layout.plotX || x > layout.plotX + layout.plotW) return null;
  for (let r = 0; r < layout.lanes.length; r++) {
    const b = layout.lanes[r];
    if (y >= b.y && y < b.y + b.h) return { rank: r, part: 'compute' };
    if (b.ch > 0 && y >= b.cy - 1 && y < b.cy + b.ch + 1) return { rank: r, part: 'comm' };
  }
  return null;
}
