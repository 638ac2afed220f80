import { useEffect, useRef, useState } from 'preact/hooks';
import type uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Stats } from '../api/api.types';
import type * as ChartModule from './histogram.chart';

type Chart = typeof ChartModule;

/**
 * The chart's code (uPlot, half the page's script) is a file of its own, fetched and run once there
 * is something to draw (the counts, asked for after the list's first page): evaluating it and
 * laying the chart out took the page's main thread for tens of milliseconds, just as the first
 * page's answer arrived.
 */
function useChartModule(wanted: boolean): Chart | null {
  const [chart, setChart] = useState<Chart | null>(null);
  useEffect(() => {
    if (!wanted || chart) return;
    let live = true;
    void import('./histogram.chart').then((module) => live && setChart(module));
    return () => {
      live = false;
    };
  }, [wanted, chart]);
  return chart;
}

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
  const module = useChartModule(stats !== null || message !== null);

  useEffect(() => {
    const el = host.current;
    if (!el || !module) return;
    const chart = new module.UPlot(module.chartOptions(el.clientWidth || 600, (from, to) => select.current(from, to)), [[], [], [], [], []], el);
    plot.current = chart;
    const observer = new ResizeObserver(() => chart.setSize({ width: el.clientWidth, height: chart.height }));
    observer.observe(el);
    return () => {
      observer.disconnect();
      chart.destroy();
      plot.current = null;
    };
  }, [module]);

  useEffect(() => {
    const chart = plot.current;
    if (!chart || !module) return;
    chart.setData(module.chartData(stats), false);
    chart.setScale('x', { min: span.from, max: span.to });
  }, [module, stats, span.from, span.to]);

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
