// Proves the pure half of ADR 0019: which replies go by reference, what their events keep,
// and the hard bound past which a reply is cut with a marker naming its size and digest.
import { describe, expect, it } from '@jest/globals';
import {
  boundOutcome,
  outputLimitsOf,
  referencedOutcome,
  sha256Hex,
  utf8Prefix,
  workEventRegistry,
} from '@tally/orchestrator-application';
import type { AttemptOutcome } from '@tally/orchestrator-domain';

const MIB = 1024 * 1024;
const ok = (output: string): AttemptOutcome => ({
  domain: 'unknown',
  settlement: 'ok',
  latency_ms: 1,
  output,
  usage: { input_tokens: 1, output_tokens: 1 },
});

describe('Issue 9: output kept by reference (pure rules)', () => {
  const limits = outputLimitsOf(MIB, 8 * MIB);

  it('Issue 9: two copies of the inline limit (settlement and completion) fit in one commit', () => {
    expect(2 * limits.inlineBytesMax).toBeLessThan(MIB - 16 * 1024);
    expect(limits.previewBytes).toBeLessThanOrEqual(limits.inlineBytesMax);
  });

  it('Issue 9: a reply within the inline limit is recorded as before; a larger one is returned to store', () => {
    expect(boundOutcome(ok('short'), limits)).toEqual({ outcome: ok('short') });
    const big = 'x'.repeat(limits.inlineBytesMax + 1);
    const { blob } = boundOutcome(ok(big), limits);
    expect(blob).toEqual({ output: big });
  });

  it('Issue 9: a referenced outcome keeps a prefix that ends on a character, and the reference', () => {
    const text = 'é'.repeat(limits.previewBytes);
    const ref = { stream: 'S', subject: 's', bytes: 1, sha256: sha256Hex('x'), chunks: 1, output_bytes: 1 };
    const o = referencedOutcome(ok(text), ref, limits);
    expect(o.output_ref).toEqual(ref);
    expect(Buffer.byteLength(o.output!, 'utf8')).toBeLessThanOrEqual(limits.previewBytes);
    expect(text.startsWith(o.output!)).toBe(true);
    expect(utf8Prefix('aé', 2)).toBe('a');
  });

  it('Issue 9: past output_bytes_max the reply is cut with a marker naming its size and digest, and still completes', () => {
    const huge = 'y'.repeat(9 * MIB);
    const { outcome, blob } = boundOutcome(ok(huge), limits);
    expect(outcome.settlement).toBe('ok');
    expect(Buffer.byteLength(blob!.output, 'utf8')).toBeLessThanOrEqual(limits.bytesMax);
    expect(blob!.output).toContain(`of ${9 * MIB} bytes kept, sha256 ${sha256Hex(huge)}`);
  });

  it('Issue 9: an AttemptSettled of version 1 reads without output_ref, with a valid one, and is refused with a bad one', () => {
    const registry = workEventRegistry();
    const settled = (extra: Record<string, unknown>) =>
      registry.decodeEnvelope(
        Object.assign(Object.create(null) as object, {
          event_id: 'e1',
          type: 'AttemptSettled',
          schema_version: 1,
          aggregate_id: 'w1',
          occurred_at: '2026-01-01T00:00:00.000Z',
          payload: {
            work_id: 'w1',
            at: '2026-01-01T00:00:00.000Z',
            ordinal: 0,
            domain: 'unknown',
            settlement: 'ok',
            latency_ms: 1,
            output: 'prefix',
            ...extra,
          },
        }) as never,
      );
    const ref = {
      stream: 'S',
      subject: 'ns.work.out.w1.0',
      bytes: 10,
      sha256: sha256Hex('x'),
      chunks: 1,
      output_bytes: 8,
    };
    expect(settled({}).ok).toBe(true);
    expect(settled({ output_ref: ref }).ok).toBe(true);
    const bad = settled({ output_ref: { ...ref, sha256: 'nope' } });
    expect(bad.ok).toBe(false);
    expect(JSON.stringify(bad)).toContain('sha256');
  });
});
