/**
 * Custom approval drivers and in-process targets, both loaded from modules.
 *
 * A driver module exports `approve(authorizeUrl, { deny, fetch }) => Promise<URL>` (or a default export with
 * that method, or a default function). An in-process module exports a fetch handler: `fetch`, or a default
 * export that is a function or an object with a `fetch` method (a top-level `await` may build it). The caller
 * imports the module ({@link ImportModule}); these functions check its shape.
 *
 * @module
 */
import type { FetchLike } from "../http.ts";
import { type ApprovalDriver, type ApproveOptions, DriverError } from "./driver.ts";

type Approve = (authorizeUrl: URL, options: ApproveOptions) => Promise<URL | string> | URL | string;

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;

/** Wraps a module's `approve` function as a driver; `name` appears in error messages. */
export function driverFromModule(module: unknown, name: string): ApprovalDriver {
  if (!isObj(module)) throw new TypeError(`Cannot load driver "${name}": not a module`);
  const fallback = module.default;
  const approve = typeof module.approve === "function"
    ? module.approve
    : isObj(fallback) && typeof fallback.approve === "function"
    ? fallback.approve.bind(fallback)
    : typeof fallback === "function"
    ? fallback
    : undefined;
  if (approve === undefined) {
    throw new TypeError(`Cannot load driver "${name}": it must export approve(authorizeUrl, { deny, fetch })`);
  }
  return {
    async approve(authorizeUrl, options) {
      const result: unknown = await (approve as Approve)(new URL(authorizeUrl), options);
      if (result instanceof URL) return result;
      if (typeof result === "string" && URL.canParse(result)) return new URL(result);
      throw new DriverError(`Driver "${name}" returned ${JSON.stringify(result)} instead of the redirect URL`);
    },
  };
}

/** The fetch handler a module exports, bound to its object. */
export function fetchFromModule(module: unknown, name: string): FetchLike {
  if (!isObj(module)) throw new TypeError(`Cannot load "${name}": not a module`);
  for (const candidate of [module.fetch, module.default, module.app]) {
    if (typeof candidate === "function") return (request) => Promise.resolve(candidate(request));
    if (isObj(candidate) && typeof candidate.fetch === "function") {
      const handler = candidate.fetch.bind(candidate) as (request: Request) => Response | Promise<Response>;
      return (request) => Promise.resolve(handler(request));
    }
  }
  throw new TypeError(`Cannot load "${name}": it must export a fetch handler (fetch, default or app)`);
}

/**
 * How a module named by a target file or a flag is loaded: the caller's own `import()`, e.g.
 * `(specifier) => import(specifier)`. The library takes it as an argument instead of importing itself, so the
 * published package holds no import that a registry cannot analyse; the command line passes the runtime's.
 */
export type ImportModule = (specifier: string) => Promise<unknown>;
