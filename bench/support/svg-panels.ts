/**
 * What every bench chart shares, so the line charts of bench:scale and the bar charts of the
 * other benches look like one family: the palette, the panel size and margins, escaping, the
 * number format, axis ticks, and panels laid out in rows under one title. Plain SVG strings: a
 * bench's plot is a file in bench/results, readable in any browser, with no plotting library.
 */

export const COLORS = [
  "#1f77b4",
  "#d62728",
  "#2ca02c",
  "#ff7f0e",
  "#9467bd",
  "#8c564b",
  "#e377c2",
  "#7f7f7f",
];
export const W = 420;
export const H = 300;
export const M = { left: 62, right: 16, top: 34, bottom: 70 };

export function esc(s: string): string {
  return s.replace(
    /[<>&"]/g,
    (ch) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;" })[ch]!,
  );
}

/** Three significant digits with k / M / G, so tick and value labels stay short. */
export function fmt(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e9) return `${+(v / 1e9).toPrecision(3)}G`;
  if (a >= 1e6) return `${+(v / 1e6).toPrecision(3)}M`;
  if (a >= 1e3) return `${+(v / 1e3).toPrecision(3)}k`;
  return `${+v.toPrecision(3)}`;
}

/** Decades on a log axis (the ends when none falls inside), round steps on a linear one. */
export function ticks(lo: number, hi: number, log: boolean): number[] {
  if (log) {
    const out: number[] = [];
    for (let d = Math.floor(Math.log10(lo)); d <= Math.ceil(Math.log10(hi)); d++)
      if (10 ** d >= lo * 0.999 && 10 ** d <= hi * 1.001) out.push(10 ** d);
    return out.length >= 2 ? out : [lo, hi];
  }
  const step = 10 ** Math.floor(Math.log10((hi - lo) / 4 || 1));
  const n = Math.ceil((hi - lo) / step / 5) * step;
  const out: number[] = [];
  for (let v = Math.ceil(lo / n) * n; v <= hi; v += n) out.push(v);
  return out;
}

/**
 * One SVG document: `panels` (each drawn at x offset 0..W by its caller's `draw(ox)`) in rows of
 * `perRow`, the title above them ("\n" breaks it into lines: a run's settings can be wider than
 * two panels).
 */
export function panelsDocument(
  title: string,
  panels: readonly ((ox: number) => string)[],
  perRow: number,
): string {
  const rows = Math.ceil(panels.length / perRow);
  const lines = title.split("\n");
  const top = 30 + (lines.length - 1) * 18;
  const parts: string[] = lines.map(
    (line, i) =>
      `<text x="10" y="${20 + i * 18}" font-size="${i === 0 ? 15 : 12}"${i === 0 ? ' font-weight="bold"' : ""}>${esc(line)}</text>`,
  );
  panels.forEach((draw, i) => {
    const row = Math.floor(i / perRow);
    parts.push(`<g transform="translate(0 ${top + row * (H + 20)})">${draw((i % perRow) * W)}</g>`);
  });
  const width = Math.min(panels.length, perRow) * W;
  const height = top + rows * (H + 20);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif"><rect width="100%" height="100%" fill="#fff"/>${parts.join("")}</svg>\n`;
}
