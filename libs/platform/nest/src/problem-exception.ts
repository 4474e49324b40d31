// An HTTP error rendered as application/problem+json (RFC 9457) by the services' problem
// filter. It lives here, below the service host, so that every platform library (the
// access guard included) can throw one without depending on the host.
import { HttpException } from '@nestjs/common';
import type { FieldError } from '@tally/contracts';

export class ProblemException extends HttpException {
  constructor(
    status: number,
    readonly problemType: string,
    readonly title: string,
    readonly errors: readonly FieldError[] = [],
    readonly detail?: string,
    /** Response headers the problem needs, such as WWW-Authenticate on a 401. */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(title, status);
  }
}
