import type { Router } from '@koa/router';
import type { Context } from 'koa';
import type { z } from 'zod';
import type { Admission } from '../billing/index.js';
import type { NewCallGate } from '../overload/index.js';
import type { Config, Logger } from '../config/index.js';
import type { Db } from '../store/index.js';
import type { CallEngine } from '../calls/index.js';

/** What every route module is given. */
export interface RouteDeps {
  db: Db;
  /** Read-only connections for hot reads (the same as `db` on PostgreSQL); never for a read that must see a
   *  write of the same request. */
  readDb: Db;
  config: Config;
  calls: CallEngine;
  admission: Admission;
  /** Overload control: asked first for every new call, before any store work (overload/). */
  overload?: NewCallGate;
  signUrlSecret: string;
  health: () => Promise<{ store: boolean; media: boolean }>;
  log: Logger;
}

export interface RouteSpec {
  method: 'get' | 'post';
  /** Koa-style path (`/api/calls/:uuid`), without a trailing slash; the app accepts one. */
  path: string;
  summary: string;
  /** False for the few public endpoints (health, the OpenAPI document, signed recording media). */
  auth?: boolean;
  query?: z.ZodType;
  body?: z.ZodType;
  /** Accepts an Idempotency-Key header. */
  idempotent?: boolean;
  ok: { status: number; schema?: z.ZodType; description?: string; contentType?: string };
  /** Error statuses this endpoint can answer (body `{ detail, code }`). */
  errors?: number[];
}

/**
 * Routes are declared through this table, which both registers them on the router and keeps their description:
 * the OpenAPI document is made from the very list the router serves.
 */
export class RouteTable {
  readonly specs: RouteSpec[] = [];
  constructor(readonly router: Router) {}

  add(spec: RouteSpec, handler: (ctx: Context) => Promise<void>): void {
    this.specs.push(spec);
    this.router[spec.method](spec.path, async (ctx) => handler(ctx as unknown as Context));
  }
}
