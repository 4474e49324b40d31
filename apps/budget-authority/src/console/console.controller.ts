// The web console at /console/ (issue 12, ADR 0034): its static files with their content
// types and a strict CSP, and the work timeline read from the agent-orchestrator's API
// through this origin, so the page calls nothing but the authority.
import { Controller, Get, Headers, Inject, Param, Res } from '@nestjs/common';
import { ProblemException, QUARANTINED_PROBLEM_TYPE } from '@tally/platform-app';
import { Access } from '@tally/platform-auth';
import { CONSOLE_CSP, type ConsoleAsset } from './console-assets.js';

export const CONSOLE_ASSETS = Symbol('CONSOLE_ASSETS');
export const CONSOLE_ORCHESTRATOR_URL = Symbol('CONSOLE_ORCHESTRATOR_URL');

/** How long one read of the orchestrator may take before the timeline says it is unavailable. */
const ORCHESTRATOR_READ_TIMEOUT_MS = 10_000;
/** The orchestrator's work ids (its abort route checks the same). */
const WORK_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** Largest answer relayed from one orchestrator read. */
const RELAY_BYTES_MAX = 4 * 1024 * 1024;

interface AssetResponse {
  status(code: number): AssetResponse;
  setHeader(name: string, value: string): unknown;
  end(body?: Buffer | string): unknown;
}

interface OrchestratorRead {
  readonly status: number;
  readonly body: unknown;
}

@Controller()
export class ConsoleController {
  constructor(
    @Inject(CONSOLE_ASSETS) private readonly assets: ReadonlyMap<string, ConsoleAsset>,
    @Inject(CONSOLE_ORCHESTRATOR_URL) private readonly orchestratorUrl: string | undefined,
  ) {}

  /** The page itself holds no data: everything it shows comes from reads that need a credential. */
  @Get('console')
  @Access('public')
  index(@Res() res: AssetResponse): void {
    this.send(res, 'index.html');
  }

  @Get('console/:file')
  @Access('public')
  file(@Param('file') file: string, @Res() res: AssetResponse): void {
    this.send(res, file);
  }

  @Get('console/vendor/:file')
  @Access('public')
  vendor(@Param('file') file: string, @Res() res: AssetResponse): void {
    this.send(res, `vendor/${file}`);
  }

  /**
   * A work unit's timeline from the orchestrator: its status, its receipt with every attempt,
   * its session's log and its events, read with the caller's own credential, so the
   * orchestrator scopes it.
   */
  @Get('v1/console/work/:id')
  @Access('reader', 'capability')
  async work(
    @Param('id') id: string,
    @Headers('authorization') authorization: string | undefined,
    @Headers('x-api-key') apiKey: string | undefined,
  ) {
    if (this.orchestratorUrl === undefined)
      throw new ProblemException(
        404,
        'orchestrator_not_configured',
        'This authority has no orchestrator to read work from (set console.orchestrator_url)',
      );
    if (!WORK_ID.test(id)) throw new ProblemException(404, 'not_found', `work ${id} is unknown`);
    const credential: Record<string, string> = {
      ...(authorization === undefined ? {} : { authorization }),
      ...(apiKey === undefined ? {} : { 'x-api-key': apiKey }),
    };
    const status = await this.read(`/v1/work/${id}`, credential);
    if (status.status === 404) throw new ProblemException(404, 'not_found', `work ${id} is unknown`);
    passQuarantine(status);
    if (status.status !== 200) throw this.unavailable(status.status);
    const unit = status.body as Record<string, unknown>;
    const receipt = await this.read(`/v1/work/${id}/receipt`, credential);
    const sessionId = typeof unit['session_id'] === 'string' ? unit['session_id'] : '';
    const log = await this.read(`/v1/sessions/${encodeURIComponent(sessionId)}/log`, credential);
    // The unit's events with their times (GET /v1/work/{id}/events), where the orchestrator offers them.
    const events = await this.read(`/v1/work/${id}/events`, credential);
    const entries = (log.status === 200 ? ((log.body as Record<string, unknown>)['entries'] ?? []) : []) as Record<
      string,
      unknown
    >[];
    return {
      work: unit,
      receipt: receipt.status === 200 ? receipt.body : null,
      session_log: entries.filter((e) => e['work_id'] === undefined || e['work_id'] === id),
      events: events.status === 200 ? ((events.body as Record<string, unknown>)['events'] ?? []) : null,
    };
  }

  private send(res: AssetResponse, name: string): void {
    const asset = this.assets.get(name);
    res.setHeader('Content-Security-Policy', CONSOLE_CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Cache-Control', 'no-cache');
    if (!asset) {
      res.status(404).setHeader('Content-Type', 'text/plain; charset=utf-8');
      res.end('not found');
      return;
    }
    res.status(200).setHeader('Content-Type', asset.contentType);
    res.end(asset.body);
  }

  private async read(path: string, credential: Record<string, string>): Promise<OrchestratorRead> {
    let res: Response;
    try {
      res = await fetch(new URL(path, this.orchestratorUrl), {
        headers: { accept: 'application/json', ...credential },
        signal: AbortSignal.timeout(ORCHESTRATOR_READ_TIMEOUT_MS),
        redirect: 'error',
      });
    } catch {
      throw this.unavailable(undefined);
    }
    const text = await res.text();
    if (text.length > RELAY_BYTES_MAX) throw this.unavailable(res.status);
    let body: unknown = null;
    try {
      body = text === '' ? null : JSON.parse(text);
    } catch {
      body = null;
    }
    return { status: res.status, body };
  }

  private unavailable(status: number | undefined): ProblemException {
    return new ProblemException(
      502,
      'orchestrator_unavailable',
      status === undefined
        ? 'The orchestrator did not answer'
        : `The orchestrator answered ${status} when the work was read`,
    );
  }
}

/** The orchestrator refused a quarantined unit (ADR 0045): the console says so as it was said. */
function passQuarantine(answer: { status: number | undefined; body: unknown }): void {
  const body = answer.body as { type?: unknown; title?: unknown; detail?: unknown } | undefined;
  if (answer.status !== 503 || body?.type !== QUARANTINED_PROBLEM_TYPE) return;
  throw new ProblemException(503, QUARANTINED_PROBLEM_TYPE, String(body.title), [], String(body.detail ?? ''));
}
