/**
 * Small SVG line charts for bench:scale (no plotting library: the bench's output is a file in
 * bench/results, readable in any browser): panels side by side, each with log or linear axes,
 * one line per series and dashed horizontal target lines. Palette, sizes and layout are
 * bench/support/svg-panels.ts's, shared with the bar charts of the other benches.
 */
import { COLORS, esc, fmt, H, M, panelsDocument, ticks, W } from "../support/svg-panels.ts";

export interface Series {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
  readonly dashed?: boolean;
  /** Palette index (default: the series' position), so related lines can share a colour. */
  readonly color?: number;
}

export interface Panel {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly xLog?: boolean;
  readonly yLog?: boolean;
  readonly series: readonly Series[];
  readonly targets?: readonly { readonly y: number; readonly label: string }[];
}

function panel(p: Panel, ox: number): string {
  const xs = p.series.flatMap((s) => s.points.map((q) => q[0]));
  const ys = [
    ...p.series.flatMap((s) => s.points.map((q) => q[1])),
    ...(p.targets ?? []).map((t) => t.y),
  ].filter((v) => Number.isFinite(v) && (!p.yLog || v > 0));
  if (xs.length === 0 || ys.length === 0)
    return `<text x="${ox + M.left}" y="${M.top + 20}" font-size="12">${esc(p.title)}: no data</text>`;
  let [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (p.yLog) [y0, y1] = [y0 / 1.5, y1 * 1.5];
  else [y0, y1] = [Math.min(0, y0), y1 * 1.1 || 1];
  if (x0 === x1) [x0, x1] = [x0 / 2, x1 * 2];
  const sx = (v: number) =>
    ox +
    M.left +
    (p.xLog
      ? (Math.log10(v) - Math.log10(x0)) / (Math.log10(x1) - Math.log10(x0))
      : (v - x0) / (x1 - x0)) *
      (W - M.left - M.right);
  const sy = (v: number) =>
    M.top +
    (1 -
      (p.yLog
        ? (Math.log10(v) - Math.log10(y0)) / (Math.log10(y1) - Math.log10(y0))
        : (v - y0) / (y1 - y0))) *
      (H - M.top - M.bottom);
  const out: string[] = [
    `<text x="${ox + M.left}" y="18" font-size="13" font-weight="bold">${esc(p.title)}</text>`,
  ];
  const bottom = H - M.bottom;
  out.push(
    `<line x1="${ox + M.left}" y1="${bottom}" x2="${ox + W - M.right}" y2="${bottom}" stroke="#333"/><line x1="${ox + M.left}" y1="${M.top}" x2="${ox + M.left}" y2="${bottom}" stroke="#333"/>`,
  );
  for (const t of ticks(x0, x1, p.xLog === true))
    out.push(
      `<line x1="${sx(t)}" y1="${bottom}" x2="${sx(t)}" y2="${bottom + 4}" stroke="#333"/><text x="${sx(t)}" y="${bottom + 16}" font-size="10" text-anchor="middle">${fmt(t)}</text>`,
    );
  for (const t of ticks(y0, y1, p.yLog === true))
    out.push(
      `<line x1="${ox + M.left}" y1="${sy(t)}" x2="${ox + W - M.right}" y2="${sy(t)}" stroke="#eee"/><text x="${ox + M.left - 4}" y="${sy(t) + 3}" font-size="10" text-anchor="end">${fmt(t)}</text>`,
    );
  out.push(
    `<text x="${ox + (M.left + W - M.right) / 2}" y="${bottom + 32}" font-size="11" text-anchor="middle">${esc(p.xLabel)}</text>`,
  );
  out.push(
    `<text x="${ox + 14}" y="${(M.top + bottom) / 2}" font-size="11" text-anchor="middle" transform="rotate(-90 ${ox + 14} ${(M.top + bottom) / 2})">${esc(p.yLabel)}</text>`,
  );
  for (const t of p.targets ?? []) {
    out.push(
      `<line x1="${ox + M.left}" y1="${sy(t.y)}" x2="${ox + W - M.right}" y2="${sy(t.y)}" stroke="#000" stroke-dasharray="5,4"/><text x="${ox + W - M.right - 2}" y="${sy(t.y) - 3}" font-size="9" text-anchor="end">${esc(t.label)}</text>`,
    );
  }
  p.series.forEach((s, i) => {
    const c = COLORS[(s.color ?? i) % COLORS.length];
    const pts = s.points
      .filter((q) => Number.isFinite(q[1]) && (!p.yLog || q[1] > 0))
      .map((q) => `${sx(q[0]).toFixed(1)},${sy(q[1]).toFixed(1)}`);
    if (pts.length > 1)
      out.push(
        `<polyline fill="none" stroke="${c}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6,3"' : ""} points="${pts.join(" ")}"/>`,
      );
    for (const q of pts)
      out.push(`<circle cx="${q.split(",")[0]}" cy="${q.split(",")[1]}" r="3" fill="${c}"/>`);
    const lx = ox + M.left + (i % 3) * 118;
    const ly = bottom + 46 + Math.floor(i / 3) * 12;
    out.push(
      `<rect x="${lx}" y="${ly - 8}" width="10" height="3" fill="${c}"/><text x="${lx + 14}" y="${ly - 4}" font-size="10">${esc(s.name)}</text>`,
    );
  });
  return out.join("");
}

/** Panels in rows of `perRow`, one SVG document. */
export function chartsSvg(title: string, panels: readonly Panel[], perRow = 3): string {
  return panelsDocument(
    title,
    panels.map((p) => (ox: number) => panel(p, ox)),
    perRow,
  );
}
