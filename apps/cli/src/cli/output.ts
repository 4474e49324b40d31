// What a command prints: JSON for `--json`, aligned tables and key/value blocks for people.
// Only results go to stdout; progress and messages go to stderr.

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export type Cell = string | number | boolean | null | undefined;

/** A table with a header row; columns as wide as their widest cell, numbers right-aligned. */
export function formatTable(headers: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const text = rows.map((row) => headers.map((_, i) => cellText(row[i])));
  const widths = headers.map((h, i) => Math.max(h.length, ...text.map((row) => row[i]!.length)));
  const numeric = headers.map((_, i) => rows.length > 0 && rows.every((row) => typeof row[i] === 'number'));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (numeric[i] ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...text.map(line)].join('\n');
}

export function printTable(headers: readonly string[], rows: readonly (readonly Cell[])[], empty = '(none)'): void {
  process.stdout.write(rows.length === 0 ? `${empty}\n` : `${formatTable(headers, rows)}\n`);
}

/** `key: value` lines, keys aligned. */
export function printFields(fields: readonly (readonly [string, Cell])[]): void {
  const width = Math.max(0, ...fields.map(([k]) => k.length));
  process.stdout.write(`${fields.map(([k, v]) => `${`${k}:`.padEnd(width + 2)}${cellText(v)}`).join('\n')}\n`);
}

export function printHeading(text: string): void {
  process.stdout.write(`\n${text}\n`);
}

function cellText(cell: Cell): string {
  if (cell === null || cell === undefined) return '-';
  return String(cell);
}
