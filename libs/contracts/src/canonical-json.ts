// Canonical JSON: object keys sorted, no whitespace, bigint as a decimal string, and
// undefined fields left out. Signatures are taken over these bytes, so the same value
// always signs to the same signature (Ed25519 is deterministic).

export function canonicalJson(value: unknown): string {
  return write(value);
}

function write(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'bigint':
      return JSON.stringify(value.toString());
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('canonical JSON has no representation for a non-finite number');
      return JSON.stringify(value);
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'object':
      return Array.isArray(value)
        ? `[${value.map((item) => (item === undefined ? 'null' : write(item))).join(',')}]`
        : writeObject(value as Record<string, unknown>);
    default:
      throw new TypeError(`canonical JSON cannot encode a ${typeof value}`);
  }
}

function writeObject(value: Record<string, unknown>): string {
  const keys = Object.keys(value)
    .filter((key) => value[key] !== undefined)
    .sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${write(value[key])}`).join(',')}}`;
}
