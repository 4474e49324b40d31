// The event stream tests and benchmarks create for themselves: every limit explicit, as
// production sets them, with a size bound that suits a throwaway namespace.
// The shape is the platform's StreamSpec, written out so this library does not depend on
// the platform libraries whose tests use it (that would be a dependency cycle).
export interface TestStreamSpec {
  readonly name: string;
  readonly subjects: readonly string[];
  readonly retention: 'limits';
  readonly storage: 'file';
  readonly replicas: number;
  readonly duplicateWindowMs: number;
  readonly maxAgeMs: number;
  readonly maxBytes: number;
  readonly maxMsgSizeBytes: number;
  readonly discard: 'new';
  readonly denyDelete: boolean;
  readonly denyPurge: boolean;
}

export function testEventStreamSpec(
  name: string,
  subjects: readonly string[],
  maxBytes = 256 * 1024 * 1024,
  denyDelete = true,
): TestStreamSpec {
  return {
    name,
    subjects,
    retention: 'limits',
    storage: 'file',
    replicas: 1,
    duplicateWindowMs: 120_000,
    maxAgeMs: 0,
    maxBytes,
    maxMsgSizeBytes: 1024 * 1024,
    discard: 'new',
    denyDelete,
    denyPurge: false,
  };
}
