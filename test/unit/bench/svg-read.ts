/**
 * Reads back what the bench plots draw, from the SVG text: bars, run dots, target lines and
 * their labels, by the classes bench/support/bar-chart.ts gives them. Tests assert on these
 * rather than on the raw string, so a change of number formatting does not break them.
 */

const attr = (tag: string, name: string): string | undefined =>
  tag.match(new RegExp(`\\s${name}="([^"]*)"`))?.[1];
const num = (tag: string, name: string): number => Number(attr(tag, name));
const unescape = (s: string) =>
  s
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, "&");
const tags = (svg: string, element: string, cls: string): string[] =>
  svg.match(new RegExp(`<${element} class="${cls}"[^>]*>`, "g")) ?? [];

export interface ReadBar {
  series: string;
  group: string;
  x: number;
  width: number;
  height: number;
}

export function bars(svg: string): ReadBar[] {
  return tags(svg, "rect", "bar").map((t) => ({
    series: unescape(attr(t, "data-series")!),
    group: unescape(attr(t, "data-group")!),
    x: num(t, "x"),
    width: num(t, "width"),
    height: num(t, "height"),
  }));
}

export function dots(svg: string): { series: string }[] {
  return tags(svg, "circle", "run").map((t) => ({ series: unescape(attr(t, "data-series")!) }));
}

export function targetLines(svg: string): { x1: number; x2: number; y: number }[] {
  return tags(svg, "line", "target").map((t) => ({
    x1: num(t, "x1"),
    x2: num(t, "x2"),
    y: num(t, "y1"),
  }));
}

export function targetLabels(svg: string): string[] {
  return [...svg.matchAll(/<text class="target-label"[^>]*>([^<]*)<\/text>/g)].map((m) =>
    unescape(m[1]!),
  );
}

/** Every bar's group (x-axis label), in drawing order, each once. */
export function groupsOf(svg: string, series?: string): string[] {
  return [
    ...new Set(
      bars(svg)
        .filter((b) => series === undefined || b.series === series)
        .map((b) => b.group),
    ),
  ];
}
