/**
 * The benches' plain-text tables: columns two spaces apart, the first left-aligned (names),
 * the others right-aligned (numbers), each as wide as its widest cell.
 */
export function textTable(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [head, ...rows];
  const widths = head.map((_, i) => Math.max(...all.map((r) => (r[i] ?? "").length)));
  const line = (r: readonly string[]) =>
    r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return all.map(line).join("\n");
}
