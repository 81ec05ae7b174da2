/**
 * Grouped bar charts for the benches that compare targets with their references (bench:proxy,
 * bench:tokens, bench:micro): one panel per figure, a group of bars per row of the bench's
 * table, log or linear axis, dashed target lines with their labels (over the whole panel or one
 * group, as bench:micro's targets differ per prompt size), and each run's value as a dot over
 * its median bar, so the spread of a noisy machine is visible beside the median it produced.
 * Values that are missing (a target not run, NaN written as null) are skipped, never drawn.
 * Style and layout are svg-panels.ts's, shared with bench:scale's line charts.
 */
import { COLORS, esc, fmt, H, M, panelsDocument, ticks, W } from "./svg-panels.ts";

export type Maybe = number | null | undefined;

export interface Bar {
  /** Legend key; its position in the panel's `series` picks the colour. */
  readonly series: string;
  readonly value: Maybe;
  /** Each run's value, drawn as dots over the bar. */
  readonly runs?: readonly Maybe[];
}

export interface BarGroup {
  /** Under the axis; "\n" breaks it into lines. */
  readonly label: string;
  readonly bars: readonly Bar[];
}

export interface TargetLine {
  readonly y: Maybe;
  readonly label: string;
  /** Only across this group's bars (a target of that row alone); the whole panel otherwise. */
  readonly group?: string;
}

export interface BarPanel {
  readonly title: string;
  readonly yLabel: string;
  readonly yLog?: boolean;
  /** Colour order, and the legend (shown when there are two or more and `legend` is not false). */
  readonly series: readonly string[];
  readonly legend?: boolean;
  readonly groups: readonly BarGroup[];
  readonly targets?: readonly TargetLine[];
}

const usable = (v: Maybe, log: boolean): v is number =>
  typeof v === "number" && Number.isFinite(v) && (!log || v > 0);

/** The y range: from 0 (linear) or the decade below the smallest value (log), with room above for labels. */
function domain(values: readonly number[], log: boolean): [number, number] {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  if (log) return [10 ** Math.floor(Math.log10(lo / 1.5)), hi * 2];
  return [0, hi * 1.15 || 1];
}

/** svg-panels's ticks, with 2 and 5 between the decades of a log axis that spans fewer than three. */
function axisTicks(lo: number, hi: number, log: boolean): number[] {
  const decades = ticks(lo, hi, log);
  if (!log || decades.length >= 3) return decades;
  const out: number[] = [];
  for (let d = Math.floor(Math.log10(lo)); d <= Math.ceil(Math.log10(hi)); d++) {
    for (const m of [1, 2, 5])
      if (m * 10 ** d >= lo * 0.999 && m * 10 ** d <= hi * 1.001) out.push(m * 10 ** d);
  }
  return out;
}

function textLines(s: string, x: number, y: number, attrs: string): string {
  return s
    .split("\n")
    .map((line, i) => `<text x="${x.toFixed(1)}" y="${y + i * 11}" ${attrs}>${esc(line)}</text>`)
    .join("");
}

/** White halo behind a label, so a target's label stays readable where it crosses bars or dots. */
const HALO = 'stroke="#fff" stroke-width="3" paint-order="stroke"';

function barPanel(p: BarPanel, ox: number): string {
  const log = p.yLog === true;
  const groups = p.groups
    .map((g) => ({ label: g.label, bars: g.bars.filter((b) => usable(b.value, log)) }))
    .filter((g) => g.bars.length > 0);
  const targets = (p.targets ?? []).filter(
    (t) => usable(t.y, log) && (t.group === undefined || groups.some((g) => g.label === t.group)),
  );
  const title = `<text x="${ox + M.left}" y="18" font-size="13" font-weight="bold">${esc(p.title)}</text>`;
  if (groups.length === 0)
    return `${title}<text x="${ox + M.left}" y="${M.top + 20}" font-size="12">no data</text>`;
  const values = [
    ...groups.flatMap((g) =>
      g.bars.flatMap((b) => [
        b.value as number,
        ...(b.runs ?? []).filter((r): r is number => usable(r, log)),
      ]),
    ),
    ...targets.map((t) => t.y as number),
  ];
  const [y0, y1] = domain(values, log);
  const bottom = H - M.bottom;
  const left = ox + M.left;
  const right = ox + W - M.right;
  const sy = (v: number) =>
    M.top +
    (1 -
      (log
        ? (Math.log10(v) - Math.log10(y0)) / (Math.log10(y1) - Math.log10(y0))
        : (v - y0) / (y1 - y0))) *
      (bottom - M.top);
  const band = (right - left) / groups.length;
  const out: string[] = [title];
  for (const t of axisTicks(y0, y1, log))
    out.push(
      `<line x1="${left}" y1="${sy(t)}" x2="${right}" y2="${sy(t)}" stroke="#eee"/><text x="${left - 4}" y="${sy(t) + 3}" font-size="10" text-anchor="end">${fmt(t)}</text>`,
    );
  out.push(
    `<line x1="${left}" y1="${bottom}" x2="${right}" y2="${bottom}" stroke="#333"/><line x1="${left}" y1="${M.top}" x2="${left}" y2="${bottom}" stroke="#333"/>`,
  );
  out.push(
    `<text x="${ox + 14}" y="${(M.top + bottom) / 2}" font-size="11" text-anchor="middle" transform="rotate(-90 ${ox + 14} ${(M.top + bottom) / 2})">${esc(p.yLabel)}</text>`,
  );
  // Value labels go on last, over the target lines, so a line through a label does not hide it.
  const valueLabels: string[] = [];
  groups.forEach((g, gi) => {
    const g0 = left + gi * band;
    const inner = band * 0.7;
    const bw = inner / g.bars.length;
    g.bars.forEach((b, bi) => {
      const v = b.value as number;
      const x = g0 + band * 0.15 + bi * bw;
      const top = sy(v);
      const colour = COLORS[Math.max(0, p.series.indexOf(b.series)) % COLORS.length];
      out.push(
        `<rect class="bar" data-series="${esc(b.series)}" data-group="${esc(g.label)}" x="${x.toFixed(1)}" y="${top.toFixed(1)}" width="${(bw - 1).toFixed(1)}" height="${(bottom - top).toFixed(1)}" fill="${colour}"><title>${esc(`${g.label} ${b.series}: ${fmt(v)}`)}</title></rect>`,
      );
      const runs = (b.runs ?? []).filter((r): r is number => usable(r, log));
      runs.forEach((r, k) => {
        const cx = x + ((k + 1) / (runs.length + 1)) * (bw - 1);
        out.push(
          `<circle class="run" data-series="${esc(b.series)}" cx="${cx.toFixed(1)}" cy="${sy(r).toFixed(1)}" r="2.5" fill="#111" stroke="#fff" stroke-width="1"/>`,
        );
      });
      // The value above the bar and above its highest run, so no dot covers it; upright where
      // bars are too narrow for neighbours' values to sit side by side.
      const labelY = Math.min(top - 3, ...runs.map((r) => sy(r) - 7));
      const cx = x + bw / 2;
      const turn =
        bw < 30
          ? ` text-anchor="start" transform="rotate(-90 ${(cx + 3).toFixed(1)} ${labelY.toFixed(1)})"`
          : ' text-anchor="middle"';
      valueLabels.push(
        `<text x="${(bw < 30 ? cx + 3 : cx).toFixed(1)}" y="${labelY.toFixed(1)}" font-size="9"${turn} ${HALO}>${fmt(v)}</text>`,
      );
    });
    out.push(textLines(g.label, g0 + band / 2, bottom + 14, 'font-size="10" text-anchor="middle"'));
  });
  const legend = p.legend !== false && p.series.length > 1 ? p.series : [];
  legend.forEach((name, i) => {
    const [lx, ly] = [left + (i % 3) * 118, bottom + 46 + Math.floor(i / 3) * 12];
    out.push(
      `<rect class="legend" x="${lx}" y="${ly - 8}" width="10" height="8" fill="${COLORS[i % COLORS.length]}"/><text x="${lx + 14}" y="${ly - 1}" font-size="10">${esc(name)}</text>`,
    );
  });
  // Target labels go under the axis, where no bar or dot can cover them: a panel-wide target's
  // beside a dashed swatch, a group's (short: "p99 ≤ 25 µs") under that group's name.
  let row = bottom + 46 + Math.ceil(legend.length / 3) * 12;
  for (const t of targets) {
    const gi = t.group === undefined ? -1 : groups.findIndex((g) => g.label === t.group);
    const [x1, x2] =
      gi < 0
        ? [left, right]
        : [left + gi * band + band * 0.05, left + (gi + 1) * band - band * 0.05];
    const y = sy(t.y as number).toFixed(1);
    out.push(
      `<line class="target" x1="${x1.toFixed(1)}" y1="${y}" x2="${x2.toFixed(1)}" y2="${y}" stroke="#000" stroke-width="1.2" stroke-dasharray="5,4"/>`,
    );
    if (gi >= 0) {
      const under = bottom + 14 + groups[gi]!.label.split("\n").length * 11;
      out.push(
        `<text class="target-label" x="${(left + (gi + 0.5) * band).toFixed(1)}" y="${under}" font-size="9" font-style="italic" text-anchor="middle">${esc(t.label)}</text>`,
      );
    } else {
      out.push(
        `<line x1="${left}" y1="${row - 4}" x2="${left + 24}" y2="${row - 4}" stroke="#000" stroke-width="1.2" stroke-dasharray="5,4"/>`,
      );
      out.push(
        `<text class="target-label" x="${left + 30}" y="${row - 1}" font-size="10">${esc(t.label)}</text>`,
      );
      row += 12;
    }
  }
  return out.join("") + valueLabels.join("");
}

/** Bar panels in rows of `perRow`, one SVG document. */
export function barChartsSvg(title: string, panels: readonly BarPanel[], perRow = 3): string {
  return panelsDocument(
    title,
    panels.map((p) => (ox: number) => barPanel(p, ox)),
    perRow,
  );
}
