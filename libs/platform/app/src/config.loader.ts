// Loads the configuration: defaults, then the TALLY_CONFIG file (YAML or JSON), then
// environment variables. The result is validated once at boot; a bad setting stops
// the process with a message that names the setting and where it came from.
import { readFileSync } from 'node:fs';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { parse as parseYaml } from 'yaml';
import { flattenValidationErrors, type FieldError } from '@tally/contracts';
import { ModelPrice, TallyConfig, ToolPriceConfig } from './config.schema.js';
import { natsLoginProblems } from './nats-credentials.js';
import { validateOidcIssuers } from './oidc-settings.js';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: readonly string[]) {
    super(`Invalid Tally configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

type Env = Readonly<Record<string, string | undefined>>;

/** Well-known variables from http-api.md and the README's table; the value is the setting's path. */
export const ENV_SETTINGS: Readonly<Record<string, { path: string; type: 'string' | 'int' | 'bool' }>> = {
  NATS_URL: { path: 'nats.url', type: 'string' },
  // The nats CLI's names for the same things.
  NATS_USER: { path: 'nats.user', type: 'string' },
  NATS_PASSWORD: { path: 'nats.password', type: 'string' },
  NATS_TOKEN: { path: 'nats.token', type: 'string' },
  NATS_NKEY: { path: 'nats.nkey_seed_file', type: 'string' },
  NATS_CREDS: { path: 'nats.creds_file', type: 'string' },
  NATS_CA: { path: 'nats.tls.ca_file', type: 'string' },
  NATS_CERT: { path: 'nats.tls.cert_file', type: 'string' },
  NATS_KEY: { path: 'nats.tls.key_file', type: 'string' },
  TALLY_NAMESPACE: { path: 'nats.namespace', type: 'string' },
  DATABASE_URL: { path: 'database.url', type: 'string' },
  TALLY_SQLITE_PATH: { path: 'database.sqlite_path', type: 'string' },
  AUTHORITY_HTTP_PORT: { path: 'authority.http_port', type: 'int' },
  ORCHESTRATOR_HTTP_PORT: { path: 'orchestrator.http_port', type: 'int' },
  AUTHORITY_METRICS_PORT: { path: 'authority.metrics_port', type: 'int' },
  ORCHESTRATOR_METRICS_PORT: { path: 'orchestrator.metrics_port', type: 'int' },
  TALLY_SIGNING_KEY: { path: 'authority.signing_key', type: 'string' },
  TALLY_KEYRING_DIR: { path: 'authority.keyring_dir', type: 'string' },
  TALLY_STREAM_REPLICAS: { path: 'streams.replicas', type: 'int' },
  TALLY_PAYMENT_RAIL: { path: 'authority.payment_rail', type: 'string' },
  TALLY_PAYMENT_RAIL_URL: { path: 'authority.payment_rail_url', type: 'string' },
  TALLY_FAULT_INJECTION: { path: 'authority.fault_injection', type: 'bool' },
  LOG_LEVEL: { path: 'log_level', type: 'string' },
  TALLY_ADMIN_KEY: { path: 'auth.admin_key', type: 'string' },
};

export function loadConfig(env: Env = process.env): TallyConfig {
  const sources = new Map<string, string>();
  const raw: Record<string, unknown> = {};
  const file = env['TALLY_CONFIG'];
  if (file) mergeInto(raw, readConfigFile(file), `${file}`, sources, '');
  for (const [name, setting] of Object.entries(ENV_SETTINGS)) {
    const value = env[name];
    if (value !== undefined && value !== '') setPath(raw, setting.path, coerce(value, setting.type), sources, name);
  }
  // Any setting can be overridden as TALLY__SECTION__KEY=value (Kubernetes-friendly).
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith('TALLY__') || value === undefined) continue;
    setPath(raw, name.slice(7).toLowerCase().split('__').join('.'), coerceLoose(value), sources, name);
  }
  return validateConfig(raw, sources);
}

export function validateConfig(raw: Record<string, unknown>, sources: Map<string, string> = new Map()): TallyConfig {
  const config = plainToInstance(TallyConfig, raw, { exposeDefaultValues: true });
  const errors: FieldError[] = flattenValidationErrors(
    validateSync(config, { whitelist: true, forbidNonWhitelisted: true }),
  );
  errors.push(...validatePrices(config));
  if (errors.every((e) => !e.field.startsWith('nats'))) errors.push(...natsLoginProblems(config.nats));
  if (Array.isArray(config.auth?.oidc)) errors.push(...validateOidcIssuers(config.auth.oidc));
  if (errors.length > 0) {
    throw new ConfigError(errors.map((e) => `${e.field}: ${e.message}${sourceOf(e.field, sources)}`));
  }
  return config;
}

/** Prices are maps keyed by model or tool name, which class-validator cannot nest: each is validated here. */
function validatePrices(config: TallyConfig): FieldError[] {
  const errors: FieldError[] = [];
  config.providers.forEach((provider, index) => {
    for (const [model, price] of Object.entries(provider.models ?? {})) {
      const instance = plainToInstance(ModelPrice, price);
      const where = `providers.${index}.models.${model}`;
      for (const e of flattenValidationErrors(validateSync(instance), where)) errors.push(e);
      // Anthropic publishes no tokenizer: the byte bound is the only bound its prompts have (ADR 0042).
      if (instance.encoding !== undefined && provider.kind !== 'openai')
        errors.push({ field: `${where}.encoding`, message: 'an encoding is only known for openai-kind providers' });
      provider.models[model] = instance;
    }
  });
  (config.tool_servers ?? []).forEach((server, index) => {
    for (const [tool, price] of Object.entries(isRecord(server.tools) ? server.tools : {})) {
      const instance = plainToInstance(ToolPriceConfig, price);
      for (const e of flattenValidationErrors(validateSync(instance), `tool_servers.${index}.tools.${tool}`))
        errors.push(e);
      server.tools[tool] = instance;
    }
  });
  return errors;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError([
      `TALLY_CONFIG: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    ]);
  }
  try {
    const parsed: unknown = /\.json$/i.test(path) ? JSON.parse(text) : parseYaml(text);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new Error('the top level must be an object');
    return parsed as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError([
      `TALLY_CONFIG: ${path} is not valid ${/\.json$/i.test(path) ? 'JSON' : 'YAML'}: ${(error as Error).message}`,
    ]);
  }
}

function mergeInto(
  target: Record<string, unknown>,
  source: Record<string, unknown>,
  origin: string,
  sources: Map<string, string>,
  prefix: string,
) {
  for (const [key, value] of Object.entries(source)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (value && typeof value === 'object' && !Array.isArray(value) && key !== 'models') {
      const child = (target[key] ??= {}) as Record<string, unknown>;
      mergeInto(child, value as Record<string, unknown>, origin, sources, path);
    } else {
      target[key] = value;
      sources.set(path, origin);
    }
  }
}

function setPath(
  target: Record<string, unknown>,
  path: string,
  value: unknown,
  sources: Map<string, string>,
  origin: string,
) {
  const keys = path.split('.');
  let node = target;
  // A numeric segment indexes a list: TALLY__AUTH__OIDC__0__ISSUER sets auth.oidc[0].issuer.
  keys.slice(0, -1).forEach((key, i) => {
    node = (node[key] ??= /^\d+$/.test(keys[i + 1]!) ? [] : {}) as Record<string, unknown>;
  });
  node[keys[keys.length - 1]!] = value;
  sources.set(path, origin);
}

function coerce(value: string, type: 'string' | 'int' | 'bool'): unknown {
  if (type === 'int') return /^-?\d+$/.test(value.trim()) ? Number(value) : value;
  if (type === 'bool') return value === 'true' ? true : value === 'false' ? false : value;
  return value;
}

function coerceLoose(value: string): unknown {
  if (/^-?\d+$/.test(value)) return Number(value);
  if (value === 'true' || value === 'false') return value === 'true';
  return value;
}

function sourceOf(field: string, sources: Map<string, string>): string {
  for (let path = field; path; path = path.includes('.') ? path.slice(0, path.lastIndexOf('.')) : '') {
    const origin = sources.get(path);
    if (origin) return ` (from ${origin})`;
  }
  return '';
}
