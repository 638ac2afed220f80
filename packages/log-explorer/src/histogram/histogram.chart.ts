import uPlot from 'uplot';

/** uPlot itself, for the component that loads this file on demand. */
export { uPlot as UPlot };
import type { Stats } from '../api/api.types';

/** Bottom to top: errors sit on the axis, where a small count still shows. */
const STACK = ['error', 'warning', 'info', 'debug'] as const;
const COLORS: Record<(typeof STACK)[number], string> = {
  error: '#e5484d',
  warning: '#f5a524',
  info: '#3b82f6',
  debug: '#8b8d98',
};

/**
 * uPlot draws no stacks: each series holds the sum of its level and those below it, and the series
 * are drawn tallest first so each covers only its own band.
 */
export function chartData(stats: Stats | null): uPlot.AlignedData {
  const series = stats?.series ?? [];
  const x = series.map((b) => Math.floor(new Date(b.start).getTime() / 1000));
  const sums = STACK.map(() => [] as number[]);
  for (const bucket of series) {
    let sum = 0;
    STACK.forEach((level, i) => {
      sum += bucket[level] ?? 0;
      sums[i]!.push(sum);
    });
  }
  return [x, ...sums.reverse()];
}

function readColor(name: string, fallback: string): string {
  const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return value || fallback;
}

export function chartOptions(width: number, onSelect: (from: Date, to: Date) => void): uPlot.Options {
  const axisColor = readColor('--muted', '#888');
  const gridColor = readColor('--grid', 'rgba(128,128,128,0.15)');
  const bars = uPlot.paths.bars?.({ size: [0.9, 40], align: 1 });
  const drawOrder = [...STACK].reverse();
  return {
    width,
    height: 120,
    legend: { show: false },
    padding: [8, 8, 0, 0],
    cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
    scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
    axes: [
      { stroke: axisColor, grid: { stroke: gridColor }, ticks: { stroke: gridColor } },
      // Wide enough for a count like 120,000; compact labels past that (1.2M).
      { stroke: axisColor, grid: { stroke: gridColor }, ticks: { stroke: gridColor }, size: 56, values: (_u, ticks) => ticks.map(compactCount) },
    ],
    series: [
      {},
      ...drawOrder.map((level) => ({ label: level, fill: COLORS[level], stroke: COLORS[level], width: 0, paths: bars, points: { show: false } })),
    ],
    hooks: {
      setSelect: [
        (u: uPlot) => {
          if (u.select.width < 4) return;
          const from = u.posToVal(u.select.left, 'x');
          const to = u.posToVal(u.select.left + u.select.width, 'x');
          u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
          onSelect(new Date(from * 1000), new Date(to * 1000));
        },
      ],
    },
  };
}

/** A count for an axis label: 950, 12,000, 1.2M. */
function compactCount(n: number): string {
  if (n >= 1_000_000) return `${(n / 1_000_000).toFixed(n % 1_000_000 === 0 ? 0 : 1)}M`;
  return n.toLocaleString('en');
}
