import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Stats } from '../api/api.types';
import { chartData, chartOptions } from './histogram.chart';

interface Props {
  stats: Stats | null;
  /** Range of the x axis in epoch seconds, so an empty range still shows its span. */
  span: { from: number; to: number };
  message: string | null;
  onSelect: (from: Date, to: Date) => void;
}

/** Log volume by level over the range, as stacked bars; dragging across it picks a custom range. */
export function Histogram({ stats, span, message, onSelect }: Props) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const select = useRef(onSelect);
  select.current = onSelect;

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const chart = new uPlot(chartOptions(el.clientWidth || 600, (from, to) => select.current(from, to)), [[], [], [], [], []], el);
    plot.current = chart;
    const observer = new ResizeObserver(() => chart.setSize({ width: el.clientWidth, height: chart.height }));
    observer.observe(el);
    return () => {
      observer.disconnect();
      chart.destroy();
      plot.current = null;
    };
  }, []);

  useEffect(() => {
    const chart = plot.current;
    if (!chart) return;
    chart.setData(chartData(stats), false);
    chart.setScale('x', { min: span.from, max: span.to });
  }, [stats, span.from, span.to]);

  return (
    <section class="histogram" data-testid="histogram" aria-label="Log volume by level">
      <div class="histogram-plot" ref={host} />
      <div class="histogram-legend">
        <span class="legend level-error">error</span>
        <span class="legend level-warning">warning</span>
        <span class="legend level-info">info</span>
        <span class="legend level-debug">debug</span>
        {message && <span class="histogram-message">{message}</span>}
      </div>
    </section>
  );
}
