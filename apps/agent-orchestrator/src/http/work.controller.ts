// The public work API (http-api.md): submit, read status and receipt, abort. Each route
// declares who may call it; reads and aborts are scoped to the caller in the query itself.
import { Body, Controller, Get, Headers, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { SubmitWorkDto } from '@tally/contracts';
import { Access, Caller, SubjectSigned, type Principal } from '@tally/platform-auth';
import { randomUUID } from 'node:crypto';
import { idempotentWorkId } from '../gateway/drop-in-gateway.js';
import { WorkReads, type WorkStatusBody } from '../work/work-reads.js';
import { WorkSubmission, type WorkOwner } from '../work/work-submission.js';
import { notFound, problemOf } from './rejections.js';
import { workScopeOf } from './work-scope.js';
import { ProblemException } from '@tally/platform-app';

/** The token the unit runs with: the credential; a body token, when also sent, must be the same one. */
export function ownerOf(caller: Principal, bodyToken: string | undefined): WorkOwner {
  if (caller.kind !== 'capability') throw new Error('the access guard admits only capability tokens here');
  if (bodyToken !== undefined && bodyToken !== caller.token)
    throw new ProblemException(400, 'validation', 'The request is invalid', [
      { field: 'token', message: 'token differs from the capability token the request is authorized with' },
    ]);
  return { token: caller.token, tenant_id: caller.tenant_id };
}

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * Without a work_id, an Idempotency-Key names the unit (ADR 0023): the work id derives from
 * the tenant, the capability, the endpoint and the key, and the work ledger keeps one unit per
 * id, comparing a resubmission with what it holds. Two tenants' keys never meet.
 */
function keyedWorkId(caller: Principal, key: string | undefined): string | undefined {
  if (key === undefined || caller.kind !== 'capability') return undefined;
  if (!IDEMPOTENCY_KEY.test(key))
    throw new ProblemException(400, 'validation', 'The request is invalid', [
      { field: 'Idempotency-Key', message: 'must be 1 to 255 printable ASCII characters' },
    ]);
  return idempotentWorkId(caller.tenant_id, caller.capability_id, 'work', key);
}

function idempotencyConflict(key: string): ProblemException {
  const message = `Idempotency-Key ${JSON.stringify(key)} was already used with a different request`;
  return new ProblemException(409, 'idempotency_conflict', message, [{ field: 'Idempotency-Key', message }], message);
}

@Controller('v1/work')
export class WorkController {
  constructor(
    @Inject(WorkSubmission) private readonly submission: WorkSubmission,
    @Inject(WorkReads) private readonly reads: WorkReads,
  ) {}

  @Post()
  @HttpCode(202)
  @Access('capability')
  @SubjectSigned()
  async submit(
    @Body() body: SubmitWorkDto,
    @Caller() caller: Principal,
    @Headers('idempotency-key') key: string | undefined,
  ): Promise<{ work_id: string; status: 'queued' }> {
    const owner = ownerOf(caller, body.token);
    const workId = body.work_id ?? keyedWorkId(caller, key) ?? randomUUID();
    const outcome = await this.submission.submit(body, workId, owner);
    if (!outcome.ok && outcome.rejection.code === 'already_submitted' && body.work_id === undefined && key)
      throw idempotencyConflict(key);
    if (!outcome.ok) throw problemOf(outcome.rejection, workId);
    return { work_id: outcome.work_id, status: outcome.status };
  }

  @Get(':id')
  @Access('reader', 'capability')
  async status(@Param('id') id: string, @Caller() caller: Principal): Promise<WorkStatusBody> {
    const status = await this.reads.status(id, workScopeOf(caller));
    if (!status) throw notFound('work', id);
    return status;
  }

  @Get(':id/receipt')
  @Access('reader', 'capability')
  async receipt(@Param('id') id: string, @Caller() caller: Principal): Promise<Record<string, unknown>> {
    const receipt = await this.reads.receipt(id, workScopeOf(caller));
    if (!receipt) throw notFound('work', id);
    return receipt;
  }

  /** The token the unit was submitted with, or an issuer of its tenant. */
  @Post(':id/abort')
  @HttpCode(202)
  @Access('issuer', 'capability')
  async abort(@Param('id') id: string, @Caller() caller: Principal): Promise<{ work_id: string; abort: 'requested' }> {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) throw notFound('work', id);
    // Visibility only: a quarantined unit can still be aborted (the ledger decides, not its stale rows).
    if (!(await this.reads.visible(id, workScopeOf(caller)))) throw notFound('work', id);
    const outcome = await this.submission.abort(id);
    if (!outcome.ok) throw problemOf(outcome.rejection, id);
    return { work_id: id, abort: 'requested' };
  }
}
