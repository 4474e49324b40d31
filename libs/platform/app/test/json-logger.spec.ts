// Proves the pino-backed JSON logs keep the shape operators rely on (time, level, service, msg,
// then fields) and that no credential reaches a line: secret-named fields, URLs with
// userinfo or secret query parameters, bearer values, operator, admin and capability keys, JWTs.
import { describe, expect, it } from '@jest/globals';
import { JsonLogger } from '../src/json-logger.js';
import { isSecretKey, redactText, redactValue } from '../src/log-redaction.js';

function capture(level: 'debug' | 'info' = 'debug') {
  const lines: string[] = [];
  const logger = new JsonLogger('test-service', level, (line) => lines.push(line));
  return { logger, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>), lines };
}

const OPERATOR_KEY = `tally_key_0123456789abcdef_${'A'.repeat(43)}`;
const ADMIN_KEY = `tally_admin_${'s'.repeat(40)}`;
const CAPABILITY = 'c1.eyJpZCI6ImNhcCJ9.c2lnbmF0dXJl';
const JWT = 'eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2ln';

describe('JSON logs through pino', () => {
  it('issue 12 item 6: one JSON object a line with time, level name, service and msg, then the fields', () => {
    const { logger, records, lines } = capture();
    logger.event('info', 'started', { port: 7401, amount: 12n });
    logger.log('mapped a route', 'RoutesResolver');
    logger.warn('careful');
    logger.error(new Error('it broke'));
    expect(lines).toHaveLength(4);
    const [started, mapped, warned, failed] = records();
    expect(Object.keys(started!).slice(0, 3)).toEqual(['level', 'time', 'service']);
    expect(started).toMatchObject({ level: 'info', service: 'test-service', msg: 'started', port: 7401, amount: '12' });
    expect(new Date(String(started!['time'])).toISOString()).toBe(started!['time']);
    expect(mapped).toMatchObject({ level: 'info', context: 'RoutesResolver', msg: 'mapped a route' });
    expect(warned).toMatchObject({ level: 'warn', msg: 'careful' });
    expect(failed).toMatchObject({ level: 'error', msg: 'it broke', error: 'it broke' });
    expect(String(failed!['stack'])).toContain('json-logger.spec.ts');
    expect(started).not.toHaveProperty('trace_id');
  });

  it('issue 12 item 6: below the minimum level nothing is written', () => {
    const { logger, lines } = capture('info');
    logger.debug('hidden');
    logger.event('debug', 'hidden too');
    expect(lines).toEqual([]);
  });

  it('issue 12 item 6: secrets in fields, nested fields, child bindings, errors and the message are redacted', () => {
    const { logger, lines, records } = capture();
    logger.event('info', `connecting to nats://tally:hunter2@nats:4222 with Bearer ${ADMIN_KEY}`, {
      authorization: `Bearer ${OPERATOR_KEY}`,
      'x-api-key': CAPABILITY,
      headers: { Authorization: 'Bearer abc', cookie: 'session=1' },
      config: { password: 'hunter2', nats_token: 'tok', webhook_secret: 'whsec_abc', api_key_env: 'OPENAI_API_KEY' },
      url: 'https://idp.example/cb?code=xyz&state=1&access_token=at123',
      subject_public_key: 'public-is-fine',
      key_id: 'key_0123456789abcdef',
      note: `the key ${OPERATOR_KEY} and token ${CAPABILITY} and jwt ${JWT}`,
    });
    logger.pino.child({ req: { url: '/v1/keys?token=qs-secret' } }).info('child');
    logger.error(new Error(`refused ${ADMIN_KEY} at postgres://app:pgpass@db/tally`));
    const text = lines.join('\n');
    for (const secret of [
      'hunter2',
      ADMIN_KEY,
      OPERATOR_KEY,
      CAPABILITY,
      JWT,
      'abc"',
      'session=1',
      'tok"',
      'whsec_abc',
      'xyz',
      'at123',
      'qs-secret',
      'pgpass',
    ])
      expect(text).not.toContain(secret);
    const [first] = records();
    expect(first).toMatchObject({
      authorization: '[redacted]',
      'x-api-key': '[redacted]',
      headers: { Authorization: '[redacted]', cookie: '[redacted]' },
      config: { password: '[redacted]', nats_token: '[redacted]', api_key_env: 'OPENAI_API_KEY' },
      url: 'https://idp.example/cb?code=[redacted]&state=1&access_token=[redacted]',
      subject_public_key: 'public-is-fine',
      key_id: 'key_0123456789abcdef',
    });
    expect(first!['msg']).toBe('connecting to nats://[redacted]@nats:4222 with Bearer [redacted]');
    expect(first!['note']).toContain('tally_key_0123456789abcdef_[redacted]');
  });

  it('issue 12 item 6: the redaction is bounded and survives cycles', () => {
    const cyclic: Record<string, unknown> = { name: 'a' };
    cyclic['self'] = cyclic;
    expect(redactValue(cyclic)).toEqual({ name: 'a', self: '[circular]' });
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 20; i++) deep = { deep };
    expect(JSON.stringify(redactValue(deep))).toContain('[truncated]');
    expect((redactValue(Array.from({ length: 5_000 }, (_, i) => i)) as unknown[]).slice(-1)).toEqual(['[truncated]']);
  });

  it.each([
    ['authorization', true],
    ['x-api-key', true],
    ['refresh_token', true],
    ['client_secret', true],
    ['db_password', true],
    ['signing_key', true],
    ['key', true],
    ['key_id', false],
    ['subject_public_key', false],
    ['token_fingerprint', false],
    ['api_key_env', false],
    ['tokens_used', false],
  ])('issue 12 item 6: the field %s is a secret: %s', (key, secret) => {
    expect(isSecretKey(key)).toBe(secret);
  });

  it('issue 12 item 6: text redaction leaves ordinary URLs and words alone', () => {
    expect(redactText('GET /v1/work/abc?limit=10 from http://127.0.0.1:7401')).toBe(
      'GET /v1/work/abc?limit=10 from http://127.0.0.1:7401',
    );
  });
});
