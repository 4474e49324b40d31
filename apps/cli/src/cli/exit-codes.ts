// The CLI's exit codes (the README lists them) and the one error type a command throws to
// end with a message and what to do about it, never a stack trace.

export const ExitCode = {
  /** Done; for a check, everything checked out. */
  ok: 0,
  /** The work did not succeed, or a check found a problem (a bad receipt, a digest mismatch). */
  failed: 1,
  /** The command was called the wrong way: unknown command, bad option or argument. */
  usage: 2,
  /** A service could not be reached, or answered with something other than what the contract says. */
  unavailable: 3,
  /** The credential was missing, refused or not allowed to do this (HTTP 401 or 403). */
  refused: 4,
  /** What was asked for does not exist, or is not visible to this credential (HTTP 404). */
  notFound: 5,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** An expected failure: printed as `tally <command>: <message>` and, on the next line, what to do. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCodeValue,
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const usageError = (message: string, hint?: string): CliError => new CliError(message, ExitCode.usage, hint);
