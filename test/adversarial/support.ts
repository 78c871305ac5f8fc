/**
 * Shared pieces of the adversarial suite: run budgets, the one-line figures each file prints, oracles for
 * RFC 6749 §5.2 error bodies and for leaked internals, and a fault-injecting {@link Storage} wrapper.
 *
 * Everything here checks responses from the outside (status, headers, body); nothing reads lib/ internals,
 * so a bug in lib/ cannot hide itself by being used on both sides.
 */
import type { Storage } from "../../mod.ts";
import { STORAGE_METHODS } from "../../lib/storage/types.ts";

/** An environment variable, on every runtime the suite runs on. */
export function env(name: string): string | undefined {
  const process = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return process?.env?.[name];
}

/** A positive whole number from the environment, or the fallback. */
export function envInt(name: string, fallback: number): number {
  const raw = env(name);
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive whole number: "${raw}"`);
  return value;
}

/**
 * Prints one line of figures for the CI log, e.g. `fuzz: 20480 requests, 0 failures`. The README's "Security and
 * reliability" section quotes these lines.
 */
export function figures(line: string): void {
  console.log(line);
}

/** RFC 6749 §5.2: `error` and `error_description` may only hold %x20-21 / %x23-5B / %x5D-7E. */
export const ERROR_CHARSET: RegExp = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** The error codes of RFC 6749 §5.2, and the registered extensions a token endpoint may also send. */
export const TOKEN_ERROR_CODES: readonly string[] = [
  "invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type",
  "invalid_scope",
  // RFC 8628 §3.5 (OAuth Extensions Error Registry): throttling of failed client authentication.
  "slow_down",
];

/** What a response must never show: stack frames, source paths, exception names, runtime internals. */
const INTERNALS: readonly [string, RegExp][] = [
  ["a stack frame", /\bat (?:async )?[\w$.<>[\] ]+ \(|\bat (?:file|node):|\n\s+at /],
  ["a source position", /\.(?:ts|js|mjs|cjs):\d+(?::\d+)?/],
  ["a file path", /(?:\/work\/|node_modules|\/lib\/|file:\/\/)/],
  ["an exception name", /\b(?:TypeError|ReferenceError|RangeError|SyntaxError|URIError|AggregateError|DOMException)\b/],
  ["an internal name", /(?:is not a function|is not an object|is not iterable|Cannot read propert|\[object \w+\])/],
];

/** The first sign of an internal detail in a response text, or undefined. */
export function internalDetail(text: string): string | undefined {
  for (const [what, pattern] of INTERNALS) {
    const match = pattern.exec(text);
    if (match) return `${what}: ${JSON.stringify(text.slice(Math.max(0, match.index - 40), match.index + 60))}`;
  }
  return undefined;
}

/** A response, read once, in the shape the oracles check. */
export interface Seen {
  status: number;
  headers: Headers;
  body: string;
}

/** Reads a response (status, headers, body text) so that oracles can check it more than once. */
export async function see(response: Response): Promise<Seen> {
  return { status: response.status, headers: response.headers, body: await response.text() };
}

/**
 * Problems with a token-endpoint error response, judged by RFC 6749 §5.2 (JSON object with `error` from the
 * list, optional `error_description`/`error_uri`, both in the allowed character set), §5.1 (no-store) and §5.2's
 * 401 rule (a challenge with `invalid_client`). Empty when the response is a valid error.
 */
export function oauthErrorProblems(seen: Seen, codes: readonly string[] = TOKEN_ERROR_CODES): string[] {
  const problems: string[] = [];
  const type = seen.headers.get("content-type") ?? "";
  if (!/^application\/json\b/i.test(type)) problems.push(`content-type is ${JSON.stringify(type)}`);
  if (seen.headers.get("cache-control") !== "no-store") problems.push("no Cache-Control: no-store");
  if (seen.headers.get("pragma") !== "no-cache") problems.push("no Pragma: no-cache");
  let body: unknown;
  try {
    body = JSON.parse(seen.body);
  } catch {
    problems.push(`body is not JSON: ${JSON.stringify(seen.body.slice(0, 80))}`);
    return problems;
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    problems.push("body is not a JSON object");
    return problems;
  }
  const members = body as Record<string, unknown>;
  for (const key of Object.keys(members)) {
    if (!["error", "error_description", "error_uri"].includes(key)) problems.push(`unexpected member "${key}"`);
    else if (typeof members[key] !== "string") problems.push(`"${key}" is not a string`);
  }
  const error = members.error;
  if (typeof error !== "string" || !codes.includes(error)) problems.push(`error ${JSON.stringify(error)} is not one of ${codes.join(", ")}`);
  for (const key of ["error", "error_description"]) {
    const value = members[key];
    if (typeof value === "string" && !ERROR_CHARSET.test(value)) {
      problems.push(`${key} has characters outside RFC 6749 §5.2's set: ${JSON.stringify(value)}`);
    }
  }
  if (seen.status === 401 && seen.headers.get("www-authenticate") === null) problems.push("401 without WWW-Authenticate");
  if (error === "invalid_client" && seen.status !== 401 && seen.status !== 400) problems.push(`invalid_client with ${seen.status}`);
  if (error === "slow_down" && (seen.status !== 429 || seen.headers.get("retry-after") === null)) {
    problems.push("slow_down without 429 and Retry-After");
  }
  return problems;
}

/** A token, code or secret as this server mints them: 256 bits, base64url. */
export const TOKEN_SHAPE: RegExp = /[A-Za-z0-9_-]{43}/;

/** SHA-256, base64url: how the store keeps every secret. Computed here, not with lib/crypto.ts. */
export async function sha256(value: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(value)));
  let binary = "";
  for (const byte of digest) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** How the fault injector breaks the k-th store call. */
export type FaultMode =
  /** The call rejects with an Error; the store is not touched. */
  | "reject"
  /** The call throws synchronously, and not even an Error (a string); the store is not touched. */
  | "throw"
  /** The call never settles; the store is not touched. Only the server's storageTimeout ends the request. */
  | "hang"
  /** The store does the work, then the call rejects: the write happened but its caller never learns so. */
  | "commit-then-reject"
  /** The call settles only after twice the timeout, and does its work then: a write lands after the 503. */
  | "late"
  /** This call and every later one reject until the fault is cleared: an outage. */
  | "outage";

/** Every fault mode. */
export const FAULT_MODES: readonly FaultMode[] = ["reject", "throw", "hang", "commit-then-reject", "late", "outage"];

/** One store call as the injector saw it. */
export interface StoreCall {
  index: number;
  method: string;
  faulted: boolean;
}

/**
 * Wraps any {@link Storage}: counts every call and, once armed, breaks the k-th call (1-based, counted from
 * `arm`) in the chosen {@link FaultMode}. `inner` stays reachable for fault-free look-ups.
 */
export class FaultInjector {
  readonly inner: Storage;
  readonly storage: Storage;
  calls: StoreCall[] = [];
  /** Faults that fired, in all. */
  fired = 0;
  #k = 0;
  #mode: FaultMode = "reject";
  #armed = false;
  #outage = false;
  #late: Promise<unknown>[] = [];
  readonly #lateDelay: number;

  constructor(inner: Storage, lateDelay = 100) {
    this.inner = inner;
    this.#lateDelay = lateDelay;
    const wrapped: Record<string, unknown> = {};
    for (const method of STORAGE_METHODS) wrapped[method] = (...args: unknown[]) => this.#call(method, args);
    this.storage = wrapped as unknown as Storage;
  }

  /** Breaks the k-th call from now on (k ≥ 1); the count restarts. */
  arm(k: number, mode: FaultMode): void {
    this.calls = [];
    this.#k = k;
    this.#mode = mode;
    this.#armed = true;
    this.#outage = false;
  }

  /** Counts calls from now on without breaking any. */
  count(): void {
    this.calls = [];
    this.#armed = false;
    this.#outage = false;
  }

  /** The fault clears: every later call goes through. */
  clear(): void {
    this.#armed = false;
    this.#outage = false;
  }

  /** Waits until every late call has landed in the store. */
  async settled(): Promise<void> {
    await Promise.allSettled(this.#late);
  }

  #call(method: keyof Storage, args: unknown[]): unknown {
    const index = this.calls.length + 1;
    const hit = this.#outage || (this.#armed && index === this.#k);
    this.calls.push({ index, method, faulted: hit });
    const run = () => (this.inner[method] as (...a: unknown[]) => Promise<unknown>).apply(this.inner, args);
    if (!hit) return run();
    this.fired++;
    switch (this.#mode) {
      case "reject":
        return Promise.reject(new Error(`Injected fault: store connection reset during ${method}`));
      case "throw":
        throw `injected fault in ${method}`;
      case "hang":
        return new Promise(() => {});
      case "commit-then-reject":
        return run().then(() => Promise.reject(new Error(`Injected fault: ${method} committed, then the connection dropped`)));
      case "late": {
        const landed = new Promise((resolve) => setTimeout(resolve, this.#lateDelay)).then(run);
        this.#late.push(landed);
        return landed;
      }
      case "outage":
        this.#outage = true;
        return Promise.reject(new Error(`Injected fault: store unavailable (${method})`));
    }
  }
}
