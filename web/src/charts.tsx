// Charts drawn with uPlot on a canvas. Each chart also renders its figures as a text table
// (visually hidden) so screen readers and keyboard users get the same information.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatHour, formatNumber } from './format';
import type { SeverityCounts, TimelineBucket } from './queries';

export const SEVERITY_COLORS: Record<keyof SeverityCounts, string> = {
  critical: '#b42318',
  high: '#dc6803',
  medium: '#ca8504',
  low: '#4e8ad6',
};

/** The theme's muted text colour (light or dark scheme), for the axes drawn on the canvas. */
function axisColor(): string {
  return getComputedStyle(document.documentElement).getPropertyValue('--muted').trim() || '#475467';
}

function useUPlot(build: (width: number) => uPlot.Options, data: uPlot.AlignedData, key: string) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const width = Math.max(240, el.clientWidth);
    const plot = new uPlot(build(width), data, el);
    const ro = new ResizeObserver(() => plot.setSize({ width: Math.max(240, el.clientWidth), height: plot.height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.destroy();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
  return ref;
}

export function SeverityChart({ counts }: { counts: SeverityCounts }) {
  const names = ['critical', 'high', 'medium', 'low'] as const;
  const values = names.map((n) => counts[n]);
  const colors = names.map((n) => SEVERITY_COLORS[n]);
  const ref = useUPlot(
    (width) => ({
      width,
      height: 200,
      legend: { show: false },
      cursor: { show: false },
      scales: { x: { time: false, range: [-0.5, 3.5] }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      axes: [
        { values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? (names[v] ?? '') : '')), splits: () => [0, 1, 2, 3], stroke: axisColor() },
        { stroke: axisColor(), values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? formatNumber(v) : '')) },
      ],
      series: [
        {},
        {
          label: 'Sessions',
          width: 0,
          fill: '#4e8ad6',
          points: { show: false },
          paths: uPlot.paths.bars!({ size: [0.6, 80], disp: { fill: { unit: 3, values: () => colors } } } as never),
        },
      ],
    }),
    [[0, 1, 2, 3], values],
    values.join(','),
  );
  return (
    <figure class="chart" aria-labelledby="sev-caption">
      <div ref={ref} class="chart-canvas" aria-hidden="true" data-testid="severity-chart" />
      <figcaption id="sev-caption">
        <ul class="legend">
          {names.map((n) => (
            <li key={n}>
              <span class={`swatch swatch-${n}`} aria-hidden="true" />
              {n}: <strong>{formatNumber(counts[n])}</strong>
            </li>
          ))}
        </ul>
      </figcaption>
    </figure>
  );
}

export function TimelineChart({ buckets }: { buckets: TimelineBucket[] }) {
  const xs = buckets.map((b) => new Date(b.hour).getTime() / 1000);
  const ys = buckets.map((b) => b.hits);
  const ref = useUPlot(
    (width) => ({
      width,
      height: 200,
      legend: { show: false },
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      // One more hour on the right: each bar spans its hour, the current one included.
      scales: { x: { range: (_u, min, max) => [min, max + 3600] }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      axes: [
        { stroke: axisColor(), values: (_u, splits) => splits.map((v) => formatHour(new Date(v * 1000).toISOString())) },
        { stroke: axisColor(), values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? formatNumber(v) : '')) },
      ],
      series: [
        {},
        { label: 'Hits', stroke: '#4e8ad6', fill: 'rgba(78,138,214,0.6)', width: 1, points: { show: false }, paths: uPlot.paths.bars!({ size: [0.8, 40], align: 1 }) },
      ],
    }),
    [xs, ys],
    buckets.map((b) => `${b.hour}=${b.hits}`).join(','),
  );
  const total = ys.reduce((a, b) => a + b, 0);
  return (
    <figure class="chart">
      <div ref={ref} class="chart-canvas" aria-hidden="true" data-testid="timeline-chart" />
      <figcaption>
        {formatNumber(total)} hits in the last 24 hours (UTC hours).
        <table class="sr-only">
          <caption>Hits per hour</caption>
          <thead>
            <tr>
              <th scope="col">Hour (UTC)</th>
              <th scope="col">Hits</th>
            </tr>
          </thead>
          <tbody>
            {buckets.map((b) => (
              <tr key={b.hour}>
                <td>{formatHour(b.hour)}</td>
                <td>{b.hits}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </figcaption>
    </figure>
  );
}
