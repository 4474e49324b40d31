// Proves that a dead letter kept as a digest (ADR 0050) holds the data's size and SHA-256, where it came from and why, a few field errors cut short, and no byte of the data or its headers, whatever was sent.
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { headers as natsHeaders } from '@nats-io/nats-core';
import { deadLetterRecord, fitDeadLetter } from '../src/index.js';

describe('ADR 0050 dead letters kept as a digest', () => {
  it('Issue 18 (rule 5): a 1 MiB body with a hundred field errors and long keys becomes a record under a kibibyte naming its size and digest, and keeps none of it', () => {
    const padding = randomBytes(512 * 1024).toString('hex');
    const data = Buffer.from(JSON.stringify({ hold_id: 'h', padding }));
    const longKey = 'k'.repeat(5_000);
    const errors = Array.from({ length: 100 }, (_, i) => ({
      field: i === 0 ? longKey : `field_${i}`,
      message: `property ${i === 0 ? longKey : `field_${i}`} should not exist`,
    }));
    const headers = natsHeaders();
    headers.set('Authorization', 'Bearer secret');
    const record = deadLetterRecord({
      source: 'http-budget-authority',
      reason: 'validation_failed',
      detail: `POST /v1/settlements${'/x'.repeat(10_000)}`,
      errors,
      originalSubject: `http:POST:/v1/settlements${'/x'.repeat(10_000)}`,
      data,
      headers,
      keep: 'digest',
    });
    const stored = JSON.stringify(record);
    expect(Buffer.byteLength(stored)).toBeLessThan(1024);
    expect(fitDeadLetter(record, 1024 * 1024)).toBe(record);
    expect(record).toMatchObject({
      data_base64: '',
      headers: {},
      redacted: ['$'],
      withheld: 'unauthenticated',
      truncated: {
        data_bytes: data.length,
        data_sha256: createHash('sha256').update(data).digest('base64url'),
        kept_bytes: 0,
      },
    });
    expect(record.errors).toHaveLength(4);
    expect(record.errors[3]).toEqual({ field: '$', message: 'and 97 more field errors' });
    expect(record.errors[1]).toEqual(errors[1]);
    expect(record.detail.length).toBeLessThanOrEqual(97);
    expect(stored).not.toContain(padding.slice(0, 32));
    expect(stored).not.toContain('k'.repeat(100));
  });

  it('Issue 18 (rule 5): a digest stays under a kibibyte even when every kept character needs escaping', () => {
    const quoted = '"\u0001'.repeat(5_000);
    const record = deadLetterRecord({
      source: 'http-budget-authority',
      reason: 'validation_failed',
      detail: `POST /${quoted}`,
      errors: [{ field: quoted, message: quoted }],
      originalSubject: `http:POST:/${quoted}`,
      data: Buffer.from(quoted),
      keep: 'digest',
    });
    expect(Buffer.byteLength(JSON.stringify(record))).toBeLessThanOrEqual(1024);
    expect(record.errors).toEqual([{ field: '$', message: 'and 1 more field error' }]);
  });
});
