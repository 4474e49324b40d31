// Answering a drop-in caller from its unit's live subject: whole (wait for the end) or as a
// stream (each delta written as it arrives, the end last, with the receipt's usage). Every
// wait is bounded, and re-checks the record in case a notification was lost.
import { deltasOf, type DialectErrorResponse } from '@tally/orchestrator-dialects';
import type { WorkUnitState } from '@tally/orchestrator-domain';
import type { DialectWriter, StreamWriter } from './dialect-writer.js';
import type { LiveReply } from './live-reply.js';

/** The HTTP response, as far as a drop-in answer needs it. */
export interface HttpExchange {
  header(name: string, value: string): void;
  json(status: number, body: unknown): void;
  error(response: DialectErrorResponse): void;
  startStream(): void;
  write(chunk: string): void;
  end(): void;
  /** The caller closed the connection before the answer was complete. */
  readonly gone: boolean;
  onGone(listener: () => void): void;
}

export type Answered = 'answered' | 'caller_gone';

/** How long to wait for a notification before reading the unit's events instead. */
const RECHECK_MS = 1_000;

type Load = () => Promise<WorkUnitState>;

async function nextMessage(live: LiveReply, deadline: number, load: Load) {
  const remaining = deadline - Date.now();
  if (remaining <= 0) return 'timeout' as const;
  const message = await live.next(Math.min(RECHECK_MS, remaining));
  if (message) return message;
  live.endFromState(await load());
  return undefined;
}

function timeoutError(writer: DialectWriter, workId: string, waitMaxMs: number): DialectErrorResponse {
  return writer.error({
    kind: 'upstream',
    code: 'timeout',
    message: `work ${workId} did not end within ${waitMaxMs} ms; it goes on, see GET /v1/work/${workId}`,
  });
}

export async function answerWhole(
  live: LiveReply,
  http: HttpExchange,
  writer: DialectWriter,
  workId: string,
  model: string,
  waitMaxMs: number,
  load: Load,
): Promise<Answered> {
  const deadline = Date.now() + waitMaxMs;
  for (;;) {
    if (http.gone) return 'caller_gone';
    const message = await nextMessage(live, deadline, load);
    if (http.gone) return 'caller_gone';
    if (message === 'timeout') return (http.error(timeoutError(writer, workId, waitMaxMs)), 'answered');
    if (message?.kind !== 'end') continue;
    const end = message.end;
    if (end.status === 'completed') http.json(200, writer.reply(end.reply, workId, model));
    else http.error(writer.error(end.error));
    return 'answered';
  }
}

export async function answerStream(
  live: LiveReply,
  http: HttpExchange,
  writer: DialectWriter,
  workId: string,
  model: string,
  waitMaxMs: number,
  load: Load,
): Promise<Answered> {
  const deadline = Date.now() + waitMaxMs;
  let stream: StreamWriter | undefined;
  let ordinal: number | undefined;
  let sent = 0;
  const open = (): StreamWriter => {
    if (stream) return stream;
    http.startStream();
    stream = writer.stream(workId, model);
    http.write(stream.start());
    return stream;
  };
  for (;;) {
    if (http.gone) return 'caller_gone';
    const message = await nextMessage(live, deadline, load);
    if (http.gone) return 'caller_gone';
    if (message === undefined) continue;
    if (message === 'timeout') return failStream(http, stream, timeoutError(writer, workId, waitMaxMs));
    if (message.kind === 'delta') {
      ordinal ??= message.ordinal;
      // Another attempt's output after this one's: the first failed mid-stream and cannot be unsent.
      if (message.ordinal !== ordinal)
        return failStream(
          http,
          stream,
          writer.error({
            kind: 'upstream',
            code: 'provider_failed_mid_stream',
            message: `the provider failed mid-stream and Tally retried; the complete answer will be at GET /v1/work/${workId}`,
          }),
        );
      http.write(open().delta(message.delta));
      sent++;
      continue;
    }
    const end = message.end;
    if (end.status !== 'completed') return failStream(http, stream, writer.error(end.error));
    const s = open();
    // Answered from the record (a retry of a finished call, or lost deltas): replay the whole reply.
    if (sent === 0) for (const delta of deltasOf(end.reply.parts)) http.write(s.delta(delta));
    http.write(s.end(end.reply.stop_reason, end.reply.usage));
    http.end();
    return 'answered';
  }
}

/** Before the stream began, an error is an ordinary error response; after, it is the dialect's error event. */
function failStream(http: HttpExchange, stream: StreamWriter | undefined, error: DialectErrorResponse): Answered {
  if (!stream) http.error(error);
  else {
    http.write(stream.error(error.body));
    http.end();
  }
  return 'answered';
}
