// How a domain rejection reads over HTTP (problem+json) and over the command transport.
import type { FieldError } from '@tally/contracts';
import type { Rejection } from '@tally/orchestrator-domain';
import { ProblemException } from '@tally/platform-app';

/** The decider names each problem as "<field> must …"; the field leads the sentence. */
export function fieldErrorsOf(rejection: Rejection): FieldError[] {
  return rejection.message.split('; ').map((message) => ({ field: /^[a-z_.]+/.exec(message)?.[0] ?? '$', message }));
}

export function problemOf(rejection: Rejection, workId: string): ProblemException {
  switch (rejection.code) {
    case 'invalid_work':
      return new ProblemException(400, 'validation', 'The work unit is invalid', fieldErrorsOf(rejection));
    case 'not_submitted':
      return notFound('work', workId);
    case 'already_submitted':
      return new ProblemException(409, 'conflict', `Work ${workId} was already submitted with different content`, [
        { field: 'work_id', message: rejection.message },
      ]);
    case 'terminal':
    case 'stale_step':
      return new ProblemException(409, 'conflict', rejection.message, [], rejection.message);
  }
}

export function notFound(what: 'work' | 'session', id: string): ProblemException {
  return new ProblemException(404, 'not_found', `No ${what} ${JSON.stringify(id)}`, [
    { field: what === 'work' ? 'id' : 'session_id', message: `no ${what} with this id` },
  ]);
}
