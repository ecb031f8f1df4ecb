/** The trained classifier's decision regions over the plane, with the training points on top. */
import { useEffect, useRef } from 'react';
import type { BoundaryGrid } from '../../state/store/index.ts';

const CLASS_COLORS: readonly [number, number, number][] = [
  [91, 156, 255],
  [255, 159, 67],
  [52, 211, 153],
  [192, 132, 252],
];
const BG: [number, number, number] = [20, 24, 33];

export function DecisionBoundary({ grid, size = 300 }: { grid: BoundaryGrid; size?: number }) {
  const ref = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    const canvas = ref.current;
    if (!canvas) return;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(size * dpr);
    canvas.height = Math.round(size * dpr);
    const ctx = canvas.getContext('2d');
    if (!ctx) return;
    const n = grid.size;
    const img = new ImageData(n, n);
    for (let i = 0; i < n * n; i++) {
      const c = CLASS_COLORS[grid.classes[i] % CLASS_COLORS.length];
      // Confidence from 1/k (undecided) to 1 maps to a faint to a strong tint.
      const k = grid.classCount;
      const a = 0.18 + 0.5 * Math.max(0, (grid.confidence[i] - 1 / k) / (1 - 1 / k));
      img.data[i * 4] = Math.round(BG[0] + (c[0] - BG[0]) * a);
      img.data[i * 4 + 1] = Math.round(BG[1] + (c[1] - BG[1]) * a);
      img.data[i * 4 + 2] = Math.round(BG[2] + (c[2] - BG[2]) * a);
      img.data[i * 4 + 3] = 255;
    }
    const tile = document.createElement('canvas');
    tile.width = n;
    tile.height = n;
    tile.getContext('2d')?.putImageData(img, 0, 0);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.imageSmoothingEnabled = true;
    ctx.drawImage(tile, 0, 0, size, size);
    const toPx = (v: number) => ((v - grid.lo) / (grid.hi - grid.lo)) * size;
    for (let i = 0; i < grid.labels.length; i++) {
      const c = CLASS_COLORS[grid.labels[i] % CLASS_COLORS.length];
      ctx.beginPath();
      ctx.arc(toPx(grid.points[i * 2]), size - toPx(grid.points[i * 2 + 1]), 2.6, 0, Math.PI * 2);
      ctx.fillStyle = `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
      ctx.fill();
      ctx.lineWidth = 0.8;
      ctx.strokeStyle = 'rgba(10, 12, 18, 0.9)';
      ctx.stroke();
    }
  }, [grid, size]);
  return (
    <figure className="boundary">
      <canvas ref={ref} style={{ width: size, height: size }} role="img" aria-label={`Decision boundary of the trained model over the plane, ${grid.classCount} classes; training accuracy ${(grid.accuracy * 100).toFixed(1)}%.`} />
      <figcaption>
        Training accuracy <b>{(grid.accuracy * 100).toFixed(1)}%</b>. Shading: the predicted class, stronger where the model is surer.
      </figcaption>
    </figure>
  );
}
