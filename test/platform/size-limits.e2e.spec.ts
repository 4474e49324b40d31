// Proves issue 9 item 7 against a real budget-authority and real JetStream streams: the size
// limits nest (a body fits in an event, an event in a message, a dead letter in a message);
// a 2 MiB body is refused unread, naming its size and the limit, and still dead-lettered; a
// dead letter of a message as large as the stream allows is cut to fit, with the full size
// and digest, instead of failing; NUL bytes, unpaired surrogates and over-deep parameters
// are refused at the boundary (HTTP and NATS commands) naming the field, and nothing is stored.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { sizeLimitsOf, tallyNames } from '@tally/contracts';
import { fitDeadLetter, publishDeadLetter, provisionTallyStreams, tallyStreamSpecs } from '@tally/platform-jetstream';
import { deleteNamespaceStreams, sharedNatsUrl, uniqueNamespace } from '@tally/testing';
import {
  admitPayload,
  AuthorityStack,
  eventually,
  monetaryGrant,
  type Json,
} from '../budget/support/authority-stack.js';

const MIB = 1024 * 1024;
let stack: AuthorityStack;
beforeAll(async () => {
  stack = await AuthorityStack.create('size');
  await stack.start();
}, 180_000);
afterAll(async () => stack?.dispose(), 60_000);

describe('Issue 9: size limits that agree', () => {
  it('Issue 9: every limit derives from the message size and fits inside the one it must fit in', () => {
    for (const size of [64 * 1024, MIB, 8 * MIB]) {
      const l = sizeLimitsOf(size);
      expect(l.eventBytesMax).toBeLessThan(l.messageBytesMax);
      expect(l.httpBodyBytesMax).toBeLessThan(l.eventBytesMax);
      expect(l.outputInlineBytesMax).toBeLessThan(l.eventBytesMax);
      expect(Math.ceil((l.deadLetterDataBytesMax * 4) / 3)).toBeLessThan(l.messageBytesMax);
    }
    expect(() => sizeLimitsOf(1_000)).toThrow(/at least/);
  });

  it('Issue 9: a 2 MiB bad body is refused unread with 413 naming its size and the limit, and dead-lettered', async () => {
    const limit = sizeLimitsOf(MIB).httpBodyBytesMax;
    const res = await stack.http('POST', '/v1/admissions', { request_id: 'big', padding: 'x'.repeat(2 * MIB) });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ type: 'payload_too_large', status: 413 });
    const error = (res.body['errors'] as Json[])[0]!;
    expect(error['field']).toBe('$');
    expect(String(error['message'])).toContain(`above the limit of ${limit} bytes`);
    const letter = await eventually(
      () => stack.deadLetters(),
      (l) => l.some((d) => (d['errors'] as Json[]).some((e) => String(e['message']).includes('above the limit'))),
      30_000,
      'the 413 dead letter',
    );
    expect(letter.length).toBeGreaterThan(0);
    // The authority is still well and answers the next request.
    expect((await stack.http('GET', '/v1/keys')).status).toBe(200);
  });

  it('Issue 9: a NUL inside an id is refused naming the field, over HTTP (body and path) and over NATS, and nothing is stored', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    const body = await stack.http('POST', '/v1/admissions', {
      ...admitPayload(cap['token'], 'nul\u0000id', 'standalone'),
    });
    expect(body.status).toBe(400);
    expect(body.body['errors']).toContainEqual({
      field: 'request_id',
      message: 'request_id must not contain NUL (U+0000)',
    });
    const path = await stack.http('GET', `/v1/capabilities/${encodeURIComponent('cap\u0000x')}`);
    expect(path.status).toBe(400);
    expect(path.body['errors']).toContainEqual({ field: 'id', message: 'id must not contain NUL (U+0000)' });
    const lone = await stack.http('POST', '/v1/admissions', {
      ...admitPayload(cap['token'], 'lone', 'standalone'),
      parameters: { text: 'half \ud800 a pair' },
    });
    expect(lone.status).toBe(400);
    expect((lone.body['errors'] as Json[])[0]).toMatchObject({ field: 'parameters.text' });
    const reply = await stack.send(
      'admit',
      admitPayload(cap['token'], 'nats\u0000nul', 'standalone'),
      stack.nextCommandId('nul'),
    );
    expect(reply.ok).toBe(false);
    expect((reply as { error: Json }).error['errors']).toContainEqual({
      field: 'request_id',
      message: 'request_id must not contain NUL (U+0000)',
    });
    expect(await stack.usage(cap['id'])).toMatchObject({ invocation_count: 0 });
    expect(await stack.events(cap['id'])).toEqual([]);
  });

  it('Issue 9: parameters nested deeper than the bound are refused before they are hashed', async () => {
    const cap = await stack.issue([monetaryGrant()]);
    let deep: Json = { leaf: 1 };
    for (let i = 0; i < 40; i++) deep = { a: deep };
    const res = await stack.http('POST', '/v1/admissions', {
      ...admitPayload(cap['token'], 'deep', 'standalone'),
      parameters: deep,
    });
    expect(res.status).toBe(400);
    const error = (res.body['errors'] as Json[])[0]!;
    expect(String(error['field'])).toMatch(/^parameters(\.a)+$/);
    expect(String(error['message'])).toContain('deeper than 32 levels');
    expect(await stack.usage(cap['id'])).toMatchObject({ invocation_count: 0 });
  });
});

describe('Issue 9: a dead letter always fits', () => {
  it('Issue 9: a refused message as large as the stream allows is dead-lettered cut to fit, with its full size and digest', async () => {
    const namespace = uniqueNamespace('dlfit');
    const names = tallyNames(namespace);
    const limits = {
      storage: 'file' as const,
      replicas: 1,
      duplicateWindowMs: 60_000,
      maxMsgSizeBytes: MIB,
      eventMaxBytes: -1,
      queueMaxBytes: 8 * MIB,
      deadLetterMaxBytes: 16 * MIB,
      deadLetterMaxAgeMs: 86_400_000,
    };
    const nc = await connect({ servers: sharedNatsUrl() });
    try {
      const jsm = await jetstreamManager(nc);
      await provisionTallyStreams(jsm, names, limits);
      expect(tallyStreamSpecs(names, limits).every((s) => s.maxMsgSizeBytes === MIB)).toBe(true);
      const data = randomBytes(MIB - 4096);
      await publishDeadLetter(
        jetstream(nc),
        names,
        {
          source: 'size-test',
          reason: 'validation_failed',
          detail: 'x'.repeat(100_000),
          errors: [{ field: '$', message: 'too large to keep whole' }],
          originalSubject: 'size.test',
          data,
        },
        5_000,
        MIB,
      );
      const stored = await jsm.streams.getMessage(names.deadLetterStream, {
        last_by_subj: names.deadLetterSubject('size-test'),
      });
      expect(stored!.data.length).toBeLessThanOrEqual(MIB);
      const record = stored!.json<Json>();
      const kept = Buffer.from(String(record['data_base64']), 'base64');
      expect(record['truncated']).toEqual({
        data_bytes: data.length,
        data_sha256: createHash('sha256').update(data).digest('base64url'),
        kept_bytes: kept.length,
      });
      expect(kept.equals(data.subarray(0, kept.length))).toBe(true);
      expect(String(record['detail']).length).toBeLessThan(5_000);
      // A record that fits is left whole.
      const small = fitDeadLetter(
        {
          source: 's',
          reason: 'decode_failed',
          detail: 'd',
          errors: [],
          original_subject: 'x',
          original_stream: null,
          original_sequence: null,
          deliveries: null,
          data_base64: 'AAAA',
          headers: {},
          redacted: [],
        },
        MIB,
      );
      expect(small).not.toHaveProperty('truncated');
    } finally {
      await nc.close();
      await deleteNamespaceStreams(sharedNatsUrl(), namespace);
    }
  }, 60_000);
});
