// `tally work submit|show|abort`: durable work units on the agent-orchestrator (POST /v1/work,
// GET /v1/work/{id}, POST /v1/work/{id}/abort). Submit with the capability token as --key;
// a token bound to its subject key (issued with --bind) also needs --sign-with, the subject's
// private key, which signs the request (ADR 0011). There is no listing endpoint yet, so there
// is no `work list`.
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Command, Option } from 'commander';
import { subjectSignatureHeaders } from '@tally/platform-auth';
import { ExitCode, usageError } from '../cli/exit-codes.js';
import { TallyHttp, type RequestSigner } from '../cli/http.js';
import { printFields, printJson } from '../cli/output.js';
import { exitWith, globalsOf } from '../cli/program.js';
import { collect, idValue, intValue } from '../cli/values.js';

type Json = Record<string, unknown>;

const PURPOSES = ['plan', 'execute', 'summarize', 'verify', 'voice_synthesis'];
const WORK_ID = /^[A-Za-z0-9_-]{1,64}$/;
const ROUTE_MAX = 8;

interface SubmitOptions {
  route?: string[];
  prompt: string;
  system?: string;
  purpose: string;
  workId?: string;
  session?: string;
  maxRetries?: string;
  maxTokens?: string;
  timeoutMs?: string;
  signWith?: string;
}

function routeOf(legs: readonly string[]): Json[] {
  if (legs.length === 0 || legs.length > ROUTE_MAX)
    throw usageError(`--route must be given 1 to ${ROUTE_MAX} times`, 'For example --route openai/gpt-4o.');
  return legs.map((leg) => {
    const slash = leg.indexOf('/');
    const provider = leg.slice(0, slash);
    const model = leg.slice(slash + 1);
    if (slash < 1 || model === '' || provider.length > 64 || model.length > 128)
      throw usageError(`--route ${JSON.stringify(leg)} must be PROVIDER/MODEL`);
    return { provider, model };
  });
}

function checkedWorkId(flag: string, id: string): string {
  if (!WORK_ID.test(id)) throw usageError(`${flag} must be 1 to 64 of A-Z a-z 0-9 _ -, got ${JSON.stringify(id)}`);
  return id;
}

export function submitBody(o: SubmitOptions): Json {
  const limits: Json = {
    ...(o.maxRetries === undefined ? {} : { max_retries: intValue('--max-retries', o.maxRetries, 0, 20) }),
    ...(o.maxTokens === undefined ? {} : { max_tokens: intValue('--max-tokens', o.maxTokens, 1, 1_000_000) }),
    ...(o.timeoutMs === undefined ? {} : { timeout_ms: intValue('--timeout-ms', o.timeoutMs, 100, 3_600_000) }),
  };
  return {
    purpose: o.purpose,
    route: routeOf(o.route ?? []),
    messages: [
      ...(o.system === undefined ? [] : [{ role: 'system', content: o.system }]),
      { role: 'user', content: o.prompt },
    ],
    ...(o.workId === undefined ? {} : { work_id: checkedWorkId('--work-id', o.workId) }),
    ...(o.session === undefined ? {} : { session_id: checkedWorkId('--session', o.session) }),
    ...(Object.keys(limits).length === 0 ? {} : { limits }),
  };
}

const workPath = (id: string) => `/v1/work/${encodeURIComponent(idValue('work', id))}`;

export function workCommand(): Command {
  const work = new Command('work').description('durable work units: submit, show, abort');
  work
    .command('submit')
    .description('submit a work unit (the capability token as --key); prints its id, queued')
    .requiredOption('--prompt <text>', 'the user message')
    .option('--route <provider/model>', 'a leg of the route, tried in order; repeat for fallbacks', collect)
    .option('--system <text>', 'a system message before the prompt')
    .addOption(new Option('--purpose <purpose>', 'what the unit is for').choices(PURPOSES).default('execute'))
    .option('--work-id <id>', 'your id for the unit (submitting it again is refused, not run twice)')
    .option('--session <id>', 'the session the unit belongs to')
    .option('--max-retries <n>', 'retries after a failed attempt (0 to 20)')
    .option('--max-tokens <n>', 'output token limit per attempt')
    .option('--timeout-ms <ms>', "the unit's deadline")
    .option(
      '--sign-with <file>',
      "the subject's Ed25519 private key (PKCS #8 PEM): signs the request, for a bound token",
    )
    .action(
      exitWith(async (options: SubmitOptions, command: Command) => {
        const globals = globalsOf(command);
        const body = submitBody(options);
        const sign = options.signWith === undefined ? undefined : await signerOf(options.signWith);
        const out = await new TallyHttp(globals).post<Json>('orchestrator', '/v1/work', body, sign);
        if (globals.json) printJson(out);
        else
          printFields([
            ['work_id', out['work_id'] as string],
            ['status', out['status'] as string],
          ]);
        return ExitCode.ok;
      }),
    );
  work
    .command('show')
    .description("a work unit's status, attempts, cost and result")
    .argument('<id>', 'the work id')
    .action(
      exitWith(async (id: string, _options: unknown, command: Command) => {
        const globals = globalsOf(command);
        const status = await new TallyHttp(globals).get<Json>('orchestrator', workPath(id));
        if (globals.json) printJson(status);
        else printStatus(status);
        return ExitCode.ok;
      }),
    );
  work
    .command('abort')
    .description('ask for a unit to stop: its running attempt is cancelled and settled, no new one starts')
    .argument('<id>', 'the work id')
    .action(
      exitWith(async (id: string, _options: unknown, command: Command) => {
        const globals = globalsOf(command);
        const out = await new TallyHttp(globals).post<Json>('orchestrator', `${workPath(id)}/abort`, {});
        if (globals.json) printJson(out);
        else process.stdout.write(`abort requested for ${id}\n`);
        return ExitCode.ok;
      }),
    );
  return work;
}

/** Signs with the subject key in a PEM file; the key is read here and never printed. */
async function signerOf(file: string): Promise<RequestSigner> {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(await readFile(file));
  } catch {
    throw usageError(`--sign-with ${file} is not a readable private key file (PKCS #8 PEM)`);
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') throw usageError(`--sign-with ${file} must be an Ed25519 key`);
  return (request) => subjectSignatureHeaders({ ...request, privateKey });
}

/** The scalar fields of the status body, in its order; nested ones are for --json. */
function printStatus(status: Json): void {
  printFields(
    Object.entries(status)
      .filter(([, v]) => v === null || ['string', 'number', 'boolean'].includes(typeof v))
      .map(([k, v]) => [k, v as string | number | boolean | null]),
  );
}
