// Issue 23 item 0: the README's quickstart is run as it is written, so it never rots. The
// commands are read from README.md (the ```sh blocks after a `<!-- quickstart -->` comment)
// and run in one bash, in a fresh checkout-like directory, against a real local stack and a
// scripted OpenAI stand-in. Only the environment differs from a newcomer's terminal: the
// provider's base_url, the ports, the namespace, and the shared NATS server.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deleteNamespaceStreams, freePort, ScriptedProvider, sharedNatsUrl, uniqueNamespace } from '@tally/testing';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ANSWER = 'Hello from the stand-in provider.';
const COMMANDS_MAX = 5;
const COMMAND_TIMEOUT_MS = 30_000;

interface Quickstart {
  /** The command that keeps running (`npm start`). */
  readonly background: string;
  readonly commands: readonly string[];
}

/** The marked blocks of README.md, in order; a marker without its block is an error. */
function quickstartOf(readme: string): Quickstart {
  const blocks = [...readme.matchAll(/<!-- quickstart(: background)? -->\n```sh\n([\s\S]*?)```/g)];
  const markers = readme.match(/<!-- quickstart(: background)? -->/g) ?? [];
  if (markers.length !== blocks.length) throw new Error('README: a quickstart marker is not followed by a ```sh block');
  const background = blocks.filter((b) => b[1] !== undefined).map((b) => b[2]!);
  if (background.length !== 1) throw new Error('README: the quickstart needs exactly one background block');
  return { background: background[0]!, commands: blocks.filter((b) => b[1] === undefined).map((b) => b[2]!) };
}

/** A directory that looks like a fresh checkout: every top-level entry linked, but no .tally/ of its own. */
function freshCheckout(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tally-quickstart-'));
  for (const entry of readdirSync(ROOT)) {
    if (entry === '.tally' || entry === '.git') continue;
    symlinkSync(join(ROOT, entry), join(dir, entry));
  }
  return dir;
}

/** One bash for every command, so variables set by one are there for the next, as in a terminal. */
class Shell {
  private readonly bash: ChildProcessWithoutNullStreams;
  private buffered = '';
  private waiting: (() => void) | undefined;
  private count = 0;

  constructor(
    private readonly cwd: string,
    env: NodeJS.ProcessEnv,
  ) {
    // pipefail is stricter than a terminal: a failing curl in a pipeline fails its command.
    this.bash = spawn('bash', ['--noprofile', '--norc', '-o', 'pipefail'], { cwd, env });
    this.bash.stdout.on('data', (c: Buffer) => {
      this.buffered += c.toString();
      this.waiting?.();
    });
  }

  /** Runs `text` exactly (sourced from a file), stdin closed; its exit code and combined output. */
  async run(text: string): Promise<{ code: number; output: string }> {
    const n = ++this.count;
    const file = join(this.cwd, `.quickstart-${n}.sh`);
    const out = join(this.cwd, `.quickstart-${n}.out`);
    writeFileSync(file, text);
    const sentinel = `quickstart-exit-${n}:`;
    this.bash.stdin.write(`source '${file}' >'${out}' 2>&1 </dev/null; echo "${sentinel}$?"\n`);
    const deadline = Date.now() + COMMAND_TIMEOUT_MS;
    while (!this.buffered.includes(sentinel)) {
      if (Date.now() > deadline) throw new Error(`quickstart command ${n} did not finish:\n${text}`);
      await new Promise<void>((done) => {
        this.waiting = done;
        setTimeout(done, 200);
      });
    }
    const code = Number(new RegExp(`${sentinel}(\\d+)`).exec(this.buffered)![1]);
    return { code, output: readFileSync(out, 'utf8') };
  }

  close(): void {
    this.bash.stdin.end();
  }
}

const provider = { current: undefined as ScriptedProvider | undefined };
const namespace = uniqueNamespace('quickstart');
let checkout: string;
let stack: ReturnType<typeof spawn> | undefined;
let stackOutput = '';
let shell: Shell;
const quickstart = quickstartOf(readFileSync(join(ROOT, 'README.md'), 'utf8'));

async function environment(): Promise<NodeJS.ProcessEnv> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // A newcomer's terminal has none of the settings a test run may carry.
  for (const name of Object.keys(env)) if (/^TALLY/.test(name) || name === 'DATABASE_URL') delete env[name];
  const [authority, orchestrator, authorityMetrics, orchestratorMetrics] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  return {
    ...env,
    NATS_URL: sharedNatsUrl(),
    TALLY_NAMESPACE: namespace,
    // The example config's only provider, pointed at the stand-in instead of api.openai.com.
    TALLY__PROVIDERS__0__BASE_URL: provider.current!.url,
    OPENAI_API_KEY: 'quickstart-provider-key',
    AUTHORITY_HTTP_PORT: String(authority),
    ORCHESTRATOR_HTTP_PORT: String(orchestrator),
    AUTHORITY_METRICS_PORT: String(authorityMetrics),
    ORCHESTRATOR_METRICS_PORT: String(orchestratorMetrics),
    // The `tally` command line finds this stack through its own variables.
    TALLY_AUTHORITY_URL: `http://127.0.0.1:${authority}`,
    TALLY_ORCHESTRATOR_URL: `http://127.0.0.1:${orchestrator}`,
    // Queues reserve their byte limit on the shared server; the ledger streams keep their default.
    TALLY__STREAMS__QUEUE_MAX_BYTES: String(64 * 1024 * 1024),
    TALLY__STREAMS__DEAD_LETTER_MAX_BYTES: String(64 * 1024 * 1024),
    LOG_LEVEL: 'warn',
  };
}

async function waitFor(probe: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${stackOutput}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function stopStack(): Promise<void> {
  const child = stack;
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once('exit', done));
  // Ctrl-C to the whole group (bash, npm, tally up), as a terminal sends it.
  process.kill(-child.pid, 'SIGINT');
  const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

beforeAll(async () => {
  provider.current = await ScriptedProvider.start();
  provider.current.setDefault({
    kind: 'stream',
    chunks: ['Hello from ', 'the stand-in provider.'],
    usage: { input_tokens: 14, output_tokens: 7 },
  });
  checkout = freshCheckout();
  const env = await environment();
  stack = spawn('bash', ['--noprofile', '--norc', '-c', quickstart.background], {
    cwd: checkout,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  stack.stdout!.on('data', (c: Buffer) => (stackOutput += c.toString()));
  stack.stderr!.on('data', (c: Buffer) => (stackOutput += c.toString()));
  await waitFor(
    () => {
      if (stack!.exitCode !== null) throw new Error(`npm start exited with ${stack!.exitCode}:\n${stackOutput}`);
      return stackOutput.includes('Tally is up.');
    },
    90_000,
    'the stack',
  );
  shell = new Shell(checkout, env);
}, 120_000);

afterAll(async () => {
  shell?.close();
  await stopStack();
  await provider.current?.stop();
  await deleteNamespaceStreams(sharedNatsUrl(), namespace).catch(() => 0);
  if (checkout) rmSync(checkout, { recursive: true, force: true });
}, 60_000);

describe('the README quickstart', () => {
  it(`Issue 23 item 0 has at most ${COMMANDS_MAX} commands after npm start, and npm start with the example config brings the stack up`, () => {
    expect(quickstart.background).toContain('npm start');
    expect(quickstart.background).toContain('examples/quickstart.yaml');
    expect(quickstart.commands.length).toBeGreaterThanOrEqual(4);
    expect(quickstart.commands.length).toBeLessThanOrEqual(COMMANDS_MAX);
    expect(stackOutput).toContain('Tally is up.');
  });

  it("Issue 23 item 0 every command runs as written and exits 0: a capability from the admin key, the provider's answer through curl and through the OpenAI SDK, and an audit that shows the attempt", async () => {
    const [issue, curlCall, sdkCall, audit] = quickstart.commands;
    const issued = await shell.run(issue!);
    expect(issued).toMatchObject({ code: 0 });
    const token = await shell.run('printf %s "$TOKEN"');
    expect(token.output).toMatch(/^[A-Za-z0-9_.-]{20,}$/);

    const viaCurl = await shell.run(curlCall!);
    expect(viaCurl).toMatchObject({ code: 0 });
    expect(JSON.parse(viaCurl.output)).toMatchObject({ choices: [{ message: { content: ANSWER } }] });

    const viaSdk = await shell.run(sdkCall!);
    expect(viaSdk).toMatchObject({ code: 0 });
    expect(viaSdk.output).toContain(ANSWER);
    expect(viaSdk.output).toMatch(/\(work [^\s)]+\)/);

    const audited = await shell.run(audit!);
    expect(audited).toMatchObject({ code: 0 });
    const workId = (JSON.parse(viaCurl.output) as { id: string }).id.replace(/^chatcmpl-/, '');
    expect(audited.output).toContain(`work:    ${workId}`);
    expect(audited.output).toMatch(/AttemptStarted +#0, initial, openai\/gpt-4o-mini/);
    expect(audited.output).toMatch(/\n0 +initial +openai\/gpt-4o-mini +allow \(admitted\)/);
    expect(audited.output).toContain('WorkCompleted');

    // Both calls reached the provider with its key, never with the agent's token.
    const seen = provider.current!.requests;
    expect(seen).toHaveLength(2);
    for (const request of seen) {
      expect(request.headers['authorization']).toBe('Bearer quickstart-provider-key');
      expect(request.model).toBe('gpt-4o-mini');
    }
  });
});
