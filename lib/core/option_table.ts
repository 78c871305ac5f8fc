/**
 * The option table's machinery. Every option of the library is one {@link OptionSpec}: its key, its type, one
 * line of documentation, and its name in the reference server's config file. From the table come the checks of
 * `createAuthorizationServer`'s options (an error names the option's path), the config file's checks and its
 * JSON Schema, and the README's key table, so none of them can drift from the others.
 *
 * @module
 */
import { ConfigurationError } from "../errors.ts";

/** The type of an option's value. */
export type OptionType =
  | { kind: "string"; enum?: readonly string[]; minLength?: number; secret?: boolean }
  | { kind: "boolean" }
  | { kind: "integer"; min: number; max?: number }
  | { kind: "list"; items: OptionType; minItems?: number }
  | { kind: "object"; fields: readonly OptionSpec[]; required?: readonly string[] }
  /** A value the library checks with `test` (a function, a store, a map); never in the config file. */
  | { kind: "value"; expect: string; test: (value: unknown) => boolean };

/** How an option appears in the config file, when not as the snake_case of its key with the same type. */
export interface ConfigBinding {
  /** The config key; default the option key in snake_case. */
  key?: string;
  /** The config value's type, when it differs from the option's. */
  type?: OptionType;
  /** Turns a checked config value into the option's value. */
  convert?: (value: unknown) => unknown;
  /** Documentation of the config key, when it differs. */
  doc?: string;
}

/** One option. */
export interface OptionSpec {
  /** The option's key in the library (camelCase). */
  readonly key: string;
  readonly type: OptionType;
  /** One line, for the docs, the schema and the README's key table. */
  readonly doc: string;
  /** The config file's binding; `null`: a library-only option (a hook, a store object). */
  readonly config?: ConfigBinding | null;
  /** A further check of a well-typed value: returns the problem, or undefined. */
  readonly check?: (value: never) => string | undefined;
}

/** The snake_case config key of a camelCase option key. */
export function snakeCase(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** The config key of an option, or null when it has none. */
export function configKey(spec: OptionSpec): string | null {
  return spec.config === null ? null : spec.config?.key ?? snakeCase(spec.key);
}

/** Builds the {@link ConfigurationError} of a bad option: `Cannot create server: "a.b" must be …`. */
export function optionError(path: string, problem: string): ConfigurationError {
  return new ConfigurationError(`Cannot create server: "${path}" ${problem}`, path);
}

/**
 * Checks `value` (the options object, or a part of it at `path`) against `specs`; throws a
 * {@link ConfigurationError} naming the first bad option's path. Unknown keys are refused with a suggestion.
 */
export function checkOptions(specs: readonly OptionSpec[], value: unknown, path = ""): void {
  if (path === "" && (typeof value !== "object" || value === null || Array.isArray(value))) {
    throw new ConfigurationError("Cannot create server: options must be an object");
  }
  const problem = objectProblem(specs, value, path, []);
  if (problem !== undefined) throw optionError(problem[0], problem[1]);
}

type Problem = [path: string, problem: string] | undefined;

function objectProblem(specs: readonly OptionSpec[], value: unknown, path: string, required: readonly string[]): Problem {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return [path, `must be an object, not ${describe(value)}`];
  const byKey = new Map(specs.map((s) => [s.key, s]));
  for (const [key, item] of Object.entries(value)) {
    const at = path === "" ? key : `${path}.${key}`;
    const spec = byKey.get(key);
    if (spec === undefined) return [at, `is not an option${didYouMean(key, [...byKey.keys()])}`];
    if (item === undefined) continue;
    const problem = typeProblem(spec.type, item, at);
    if (problem !== undefined) return problem;
    const further = spec.check?.(item as never);
    if (further !== undefined) return [at, further];
  }
  for (const key of required) {
    if ((value as Record<string, unknown>)[key] === undefined) return [path === "" ? key : `${path}.${key}`, "is required"];
  }
  return undefined;
}

/** The first problem of `value` against `type`, or undefined. */
function typeProblem(type: OptionType, value: unknown, path: string): Problem {
  switch (type.kind) {
    case "string":
      if (typeof value !== "string") return [path, `must be a string, not ${describe(value)}`];
      if (type.enum && !type.enum.includes(value)) {
        return [path, `must be one of ${type.enum.map((e) => `"${e}"`).join(", ")}, not "${value}"${didYouMean(value, type.enum)}`];
      }
      if (value.length < (type.minLength ?? 1)) {
        return [path, type.minLength ? `must be at least ${type.minLength} characters` : "must not be empty"];
      }
      return undefined;
    case "boolean":
      return typeof value === "boolean" ? undefined : [path, `must be true or false, not ${describe(value)}`];
    case "integer":
      if (typeof value !== "number" || !Number.isInteger(value)) return [path, `must be a whole number, not ${describe(value)}`];
      if (value < type.min) return [path, `must be at least ${type.min}`];
      if (type.max !== undefined && value > type.max) return [path, `must be at most ${type.max}`];
      return undefined;
    case "list": {
      if (!Array.isArray(value)) return [path, `must be a list, not ${describe(value)}`];
      if (value.length < (type.minItems ?? 0)) return [path, `must hold at least ${type.minItems} item(s)`];
      for (const [i, item] of value.entries()) {
        const problem = typeProblem(type.items, item, `${path}[${i}]`);
        if (problem) return problem;
      }
      return undefined;
    }
    case "object":
      return objectProblem(type.fields, value, path, type.required ?? []);
    case "value":
      return type.test(value) ? undefined : [path, `must be ${type.expect}`];
  }
}

/** How a value is named in an error: its type, and a short quote of a string. */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return `${typeof value} ${String(value)}`;
}

/** ` (did you mean "x"?)` for the closest known name, or nothing when none is close. */
export function didYouMean(name: string, known: readonly string[]): string {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    // Case-blind, so clientSecret and CLIENT_SECRET are one edit from client_secret.
    const d = distance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(name.length / 3)) ? ` (did you mean "${best}"?)` : "";
}

function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length]!;
}
