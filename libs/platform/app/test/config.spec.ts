// Proves configuration is typed and validated at boot, naming each bad setting and its source.
import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../src/config.loader.js';
import { oidcVerifierOf } from '../src/oidc-config.js';

const dir = mkdtempSync(join(tmpdir(), 'tally-config-'));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const contractExample = {
  providers: [
    {
      name: 'scripted',
      kind: 'openai',
      base_url: 'http://127.0.0.1:9100/v1',
      api_key_env: 'SCRIPTED_API_KEY',
      models: { 'ok-model': { input_per_mtok_units: 1000000, output_per_mtok_units: 2000000, currency: 'USD' } },
    },
  ],
};

const PRICE = { input_per_mtok_units: 1_000_000_000_000, output_per_mtok_units: 1, currency: 'USD' };

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration', () => {
  it('defaults run the local embedded stack with no file at all', () => {
    const config = loadConfig({});
    expect(config.nats.url).toBe('nats://127.0.0.1:4222');
    expect(config.database.url).toBeUndefined();
    expect(config.authority.http_port).toBe(7401);
    expect(config.orchestrator.http_port).toBe(7402);
  });

  it('the http-api.md provider example loads as it stands, from JSON and from YAML', () => {
    const json = loadConfig({ TALLY_CONFIG: file('example.json', JSON.stringify(contractExample)) });
    expect(json.providers[0]!.models['ok-model']!.output_per_mtok_units).toBe(2000000);
    const yaml = loadConfig({
      TALLY_CONFIG: file(
        'example.yaml',
        'providers:\n  - name: scripted\n    kind: anthropic\n    base_url: http://127.0.0.1:9100/v1\n    api_key_env: SCRIPTED_API_KEY\n    models:\n      m: { input_per_mtok_units: 1, output_per_mtok_units: 2, currency: EUR }\n',
      ),
    });
    expect(yaml.providers[0]!.kind).toBe('anthropic');
  });

  it('environment variables override the file, and a bad value names the setting and the variable', () => {
    const config = loadConfig({
      TALLY_CONFIG: file('p.json', '{"authority":{"http_port":9000}}'),
      AUTHORITY_HTTP_PORT: '9001',
    });
    expect(config.authority.http_port).toBe(9001);
    const problems = problemsOf(() => loadConfig({ AUTHORITY_HTTP_PORT: 'seventy' }));
    expect(problems.join('\n')).toMatch(/authority\.http_port: .*\(from AUTHORITY_HTTP_PORT\)/);
  });

  it('an unknown setting, a bad price and a bad NATS URL are all reported at once', () => {
    const bad = {
      nats: { url: 'http://x' },
      authority: { hold_ttl_msec: 5 },
      providers: [
        {
          ...contractExample.providers[0],
          models: { m: { input_per_mtok_units: -1, output_per_mtok_units: 1, currency: 'usd' } },
        },
      ],
    };
    const problems = problemsOf(() => loadConfig({ TALLY_CONFIG: file('bad.json', JSON.stringify(bad)) })).join('\n');
    expect(problems).toMatch(/nats\.url: url must look like nats:\/\/host:port/);
    expect(problems).toMatch(/authority\.hold_ttl_msec: property hold_ttl_msec should not exist/);
    expect(problems).toMatch(/providers\.0\.models\.m\.input_per_mtok_units/);
    expect(problems).toMatch(/providers\.0\.models\.m\.currency/);
  });

  it('ADR 0044 a price past 10^12 or a byte limit past 2^53-1 is refused, naming the setting and its source', () => {
    const tools = { search: { cost_units_per_call: 1e13, currency: 'USD' } };
    const bad = {
      streams: { max_bytes: 2 ** 60 },
      providers: [{ ...contractExample.providers[0], models: { m: { ...PRICE, output_per_mtok_units: 1e13 } } }],
      tool_servers: [{ name: 't1', url: 'http://127.0.0.1:9/mcp', tools }],
    };
    const problems = problemsOf(() => loadConfig({ TALLY_CONFIG: file('wide.json', JSON.stringify(bad)) })).join('\n');
    expect(problems).toMatch(/streams\.max_bytes: max_bytes must not be greater than 9007199254740991/);
    expect(problems).toMatch(/providers\.0\.models\.m\.output_per_mtok_units: .* 1000000000000 \(from .*wide\.json\)/);
    expect(problems).toMatch(/tool_servers\.0\.tools\.search\.cost_units_per_call: .* 1000000000000/);
    const fine = { ...bad, streams: {}, providers: contractExample.providers, tool_servers: [] };
    expect(() => loadConfig({ TALLY_CONFIG: file('fine.json', JSON.stringify(fine)) })).not.toThrow();
  });

  it("O7 a model's prompt settings load (encoding, accepts_images, image_tokens_max), and a bad one is named", () => {
    const price = { input_per_mtok_units: 1, output_per_mtok_units: 2, currency: 'USD' };
    const models = { m: { ...price, encoding: 'o200k_base', accepts_images: false, image_tokens_max: 48_169 } };
    const config = loadConfig({
      TALLY_CONFIG: file('prompt.json', JSON.stringify({ providers: [{ ...contractExample.providers[0], models }] })),
    });
    expect(config.providers[0]!.models['m']).toMatchObject(models.m);
    expect(config.orchestrator.prompt_tokenize_bytes_max).toBe(32 * 1024);
    const bad = {
      ...contractExample.providers[0],
      models: { m: { ...price, encoding: 'p50k_base', image_tokens_max: 0 } },
    };
    const problems = problemsOf(() =>
      loadConfig({ TALLY_CONFIG: file('prompt-bad.json', JSON.stringify({ providers: [bad] })) }),
    ).join('\n');
    expect(problems).toMatch(/providers\.0\.models\.m\.encoding/);
    expect(problems).toMatch(/providers\.0\.models\.m\.image_tokens_max/);
  });

  it('O7 an encoding on an anthropic-kind model stops the boot: Anthropic publishes no tokenizer', () => {
    const models = {
      m: { input_per_mtok_units: 1, output_per_mtok_units: 2, currency: 'USD', encoding: 'cl100k_base' },
    };
    const provider = { ...contractExample.providers[0], kind: 'anthropic', models };
    const problems = problemsOf(() =>
      loadConfig({ TALLY_CONFIG: file('prompt-anthropic.json', JSON.stringify({ providers: [provider] })) }),
    ).join('\n');
    expect(problems).toMatch(/providers\.0\.models\.m\.encoding: an encoding is only known for openai-kind providers/);
  });

  it('an unreadable or malformed file is named in the error', () => {
    expect(problemsOf(() => loadConfig({ TALLY_CONFIG: join(dir, 'missing.yaml') })).join()).toMatch(
      /cannot read .*missing\.yaml: ENOENT/,
    );
    expect(problemsOf(() => loadConfig({ TALLY_CONFIG: file('broken.json', '{"nats":') })).join()).toMatch(
      /is not valid JSON/,
    );
  });

  it('TALLY__SECTION__KEY overrides any setting', () => {
    expect(loadConfig({ TALLY__CONSUMERS__ACK_WAIT_MS: '45000' }).consumers.ack_wait_ms).toBe(45000);
  });

  it('issue 8 OIDC: an issuer is configured from the file or as TALLY__AUTH__OIDC__<n>__<setting>', () => {
    const env = {
      TALLY__AUTH__OIDC__0__ISSUER: 'https://idp.example',
      TALLY__AUTH__OIDC__0__AUDIENCE: 'tally-api',
      TALLY__AUTH__OIDC__0__JWKS_URL: 'https://idp.example/jwks.json',
      TALLY__AUTH__OIDC__0__ROLE_MAP__OPS: 'admin',
    };
    const [issuer] = loadConfig(env).auth.oidc;
    expect(issuer).toMatchObject({ issuer: 'https://idp.example', role_claim: 'role', role_map: { ops: 'admin' } });
    expect(issuer!.clock_skew_seconds).toBe(60);
  });

  it('issue 8 OIDC: one JWKS source each, https unless loopback, each issuer once, known roles', () => {
    const issuer = { issuer: 'https://idp.example', audience: 'tally-api' };
    const config = file(
      'oidc.json',
      JSON.stringify({
        auth: {
          oidc: [
            issuer,
            { ...issuer, jwks_url: 'http://idp.example/jwks', jwks_file: '/etc/jwks.json' },
            { ...issuer, issuer: 'https://b.example', jwks_url: 'http://idp.example/jwks', role_map: { x: 'root' } },
            { ...issuer, issuer: 'https://c.example', jwks_url: 'http://127.0.0.1:9/jwks', clock_skew_seconds: 3600 },
          ],
        },
      }),
    );
    const problems = problemsOf(() => loadConfig({ TALLY_CONFIG: config })).join('\n');
    expect(problems).toMatch(/auth\.oidc\.0\.jwks_url: set exactly one of jwks_url and jwks_file/);
    expect(problems).toMatch(/auth\.oidc\.1\.jwks_url: set exactly one/);
    expect(problems).toMatch(/auth\.oidc\.1\.issuer: this issuer is configured twice/);
    expect(problems).toMatch(/auth\.oidc\.2\.jwks_url: must be https/);
    expect(problems).toMatch(/auth\.oidc\.2\.role_map\.x: must be one of admin, issuer, reader/);
    expect(problems).toMatch(/auth\.oidc\.3\.clock_skew_seconds/);
    expect(problems).not.toMatch(/auth\.oidc\.3\.jwks_url/);
  });

  it('issue 8 OIDC: an unreadable or malformed JWKS file stops the boot naming the setting', () => {
    const configWith = (jwksFile: string) =>
      loadConfig({
        TALLY__AUTH__OIDC__0__ISSUER: 'https://idp.example',
        TALLY__AUTH__OIDC__0__AUDIENCE: 'tally-api',
        TALLY__AUTH__OIDC__0__JWKS_FILE: jwksFile,
      });
    expect(problemsOf(() => oidcVerifierOf(configWith(join(dir, 'none.json')))).join()).toMatch(
      /auth\.oidc\.0\.jwks_file: cannot read .*none\.json: ENOENT/,
    );
    expect(problemsOf(() => oidcVerifierOf(configWith(file('jwks-bad.json', '{"keys": []}')))).join()).toMatch(
      /auth\.oidc\.0\.jwks_file: .* is not a JWKS/,
    );
    const jwk = { kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: 'k1' };
    expect(oidcVerifierOf(configWith(file('jwks.json', JSON.stringify({ keys: [jwk] }))))).toBeDefined();
    expect(oidcVerifierOf(loadConfig({}))).toBeUndefined();
  });
});
