// Proves that who may call a route is part of its declaration: the route table lists every
// route with its rule, an undeclared route stops the boot, and credentials are told apart.
import { describe, expect, it } from '@jest/globals';
import { Controller, Delete, Get, Module, Post } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, NestFactory } from '@nestjs/core';
import {
  Access,
  assertEveryRouteDeclared,
  newAdminKey,
  newOperatorKey,
  operatorKeyId,
  presentedCredential,
  routeTable,
} from '../src/index.js';

@Controller('v1/things')
class DeclaredController {
  @Get(':id')
  @Access('reader', 'capability')
  read() {}

  @Post()
  @Access('issuer')
  create() {}
}

@Controller('v1/open')
class UndeclaredController {
  @Get()
  @Access('public')
  fine() {}

  @Delete(':id')
  forgotten() {}
}

describe('the route table', () => {
  it('lists every route with its method, full path and declared access', () => {
    expect(routeTable([DeclaredController])).toEqual([
      {
        controller: 'DeclaredController',
        handler: 'read',
        method: 'GET',
        path: 'v1/things/:id',
        access: ['reader', 'capability'],
      },
      { controller: 'DeclaredController', handler: 'create', method: 'POST', path: 'v1/things', access: ['issuer'] },
    ]);
  });

  it('a route without @Access is refused by name: the service cannot boot with it', async () => {
    @Module({ imports: [DiscoveryModule], controllers: [DeclaredController, UndeclaredController] })
    class AppModule {}
    const app = await NestFactory.create(AppModule, { logger: false });
    try {
      const controllers = app
        .get(DiscoveryService)
        .getControllers()
        .map((w) => w.metatype as abstract new (...args: never[]) => unknown);
      expect(() => assertEveryRouteDeclared(routeTable(controllers))).toThrow(
        /DELETE \/v1\/open\/:id \(UndeclaredController\.forgotten\)/,
      );
      expect(() => assertEveryRouteDeclared(routeTable([DeclaredController]))).not.toThrow();
    } finally {
      await app.close();
    }
  });

  it('public cannot be combined with another rule', () => {
    expect(() => Access('public', 'admin')).toThrow(/public cannot be combined/);
  });
});

describe('credentials', () => {
  const req = (headers: Record<string, string>, body?: unknown) => ({ headers, body });

  it('an operator key carries its key id, and 256 random bits', () => {
    const key = newOperatorKey();
    expect(operatorKeyId(key.key)).toBe(key.key_id);
    expect(key.key_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(key.key).not.toContain(key.key_hash);
    expect(Buffer.from(key.key.split('_').slice(3).join('_'), 'base64url').length).toBe(32);
    expect(newOperatorKey().key).not.toBe(key.key);
  });

  it('Authorization: Bearer, then x-api-key, then (where a capability is taken) the body token', () => {
    const op = newOperatorKey().key;
    expect(presentedCredential(req({ authorization: `Bearer ${op}` }), false)).toMatchObject({
      credential: { kind: 'operator_key' },
    });
    expect(presentedCredential(req({ 'x-api-key': 'c1.abc.def' }), false)).toEqual({
      credential: { kind: 'capability', token: 'c1.abc.def' },
    });
    expect(presentedCredential(req({}, { token: 'c1.abc.def' }), true)).toEqual({
      credential: { kind: 'capability', token: 'c1.abc.def' },
    });
    expect(presentedCredential(req({}, { token: 'c1.abc.def' }), false)).toBeUndefined();
    const jwt = `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.e30.sig`;
    expect(presentedCredential(req({ authorization: `Bearer ${jwt}` }), false)).toMatchObject({
      credential: { kind: 'jwt' },
    });
    expect(presentedCredential(req({ authorization: `Bearer ${newAdminKey()}` }), false)).toMatchObject({
      credential: { kind: 'opaque' },
    });
    expect(presentedCredential(req({ authorization: 'Basic abc' }), false)).toEqual({
      malformed: 'Authorization must be "Bearer <credential>"',
    });
  });
});
