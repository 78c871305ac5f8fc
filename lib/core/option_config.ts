/**
 * The option table seen from the config file: snake_case keys, `{ "env": NAME }` for secrets, the JSON Schema,
 * and the way back from an option's path to its config key, so a library error names the key the operator wrote.
 *
 * @module
 */
import { configKey, describe, didYouMean, type OptionSpec, type OptionType } from "./option_table.ts";

/** A problem at one path of the config file. */
export class ConfigFieldError extends Error {
  /** The JSON path, e.g. `registration.initial_access_token` or `clients[2].scopes`. */
  readonly path: string;
  /** A problem at `path`. */
  constructor(path: string, message: string) {
    super(message);
    this.name = "ConfigFieldError";
    this.path = path;
  }
}

/** The config-side type of an option. */
function configType(spec: OptionSpec): OptionType {
  const type = spec.config?.type ?? spec.type;
  return type.kind === "object" ? { ...type, fields: type.fields.filter((f) => f.config !== null) } : type;
}

/** A config object read along its specs: the values under the options' keys, and the file as written. */
export interface ReadConfig {
  /** The values under the options' own (camelCase) keys, converted where the binding says so. */
  options: Record<string, unknown>;
  /** The config object as written, with `{ "env": NAME }` resolved. */
  config: Record<string, unknown>;
}

/**
 * Reads a config object along `specs`: checks each value's config-side type, resolves `{ "env": NAME }` for
 * secrets, and returns it both as options and as written. Throws {@link ConfigFieldError} at the first problem.
 */
export function fromConfig(
  specs: readonly OptionSpec[],
  value: unknown,
  path: string,
  env: (name: string) => string | undefined,
  required: readonly string[] = [],
): ReadConfig {
  const fail = (at: string, message: string): never => {
    throw new ConfigFieldError(at, message);
  };
  if (typeof value !== "object" || value === null || Array.isArray(value)) return fail(path, `must be an object, not ${describe(value)}`);
  const byKey = new Map<string, OptionSpec>();
  for (const spec of specs) {
    const key = configKey(spec);
    if (key !== null) byKey.set(key, spec);
  }
  const options: Record<string, unknown> = {};
  const config: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const at = path === "" ? key : `${path}.${key}`;
    const spec = byKey.get(key);
    if (spec === undefined) return fail(at, `unknown key${didYouMean(key, [...byKey.keys()])}`);
    const read = readValue(configType(spec), item, at, env);
    config[key] = read.config;
    options[spec.key] = spec.config?.convert ? spec.config.convert(read.config) : read.option;
  }
  for (const key of required) if (!(key in (value as object))) fail(path === "" ? key : `${path}.${key}`, "is missing");
  return { options, config };
}

function readValue(type: OptionType, value: unknown, path: string, env: (name: string) => string | undefined): { option: unknown; config: unknown } {
  const fail = (message: string): never => {
    throw new ConfigFieldError(path, message);
  };
  const same = (v: unknown) => ({ option: v, config: v });
  switch (type.kind) {
    case "string": {
      if (type.secret && typeof value === "object" && value !== null && !Array.isArray(value)) {
        const name = (value as { env?: unknown }).env;
        if (Object.keys(value).length !== 1 || typeof name !== "string" || name === "") return fail('must be a string or { "env": "VARIABLE" }');
        const resolved = env(name);
        if (resolved === undefined || resolved === "") return fail(`environment variable "${name}" is not set`);
        return same(resolved);
      }
      if (typeof value !== "string") return fail(`must be a string${type.secret ? ' or { "env": "VARIABLE" }' : ""}, not ${describe(value)}`);
      if (value === "") return fail("must not be empty");
      if (type.minLength !== undefined && value.length < type.minLength) return fail(`must be at least ${type.minLength} characters`);
      if (type.enum && !type.enum.includes(value)) {
        return fail(`must be one of ${type.enum.map((e) => `"${e}"`).join(", ")}, not "${value}"${didYouMean(value, type.enum)}`);
      }
      return same(value);
    }
    case "boolean":
      return typeof value === "boolean" ? same(value) : fail(`must be true or false, not ${describe(value)}`);
    case "integer":
      if (typeof value !== "number" || !Number.isInteger(value)) return fail(`must be a whole number, not ${describe(value)}`);
      if (value < type.min) return fail(`must be at least ${type.min}`);
      return type.max !== undefined && value > type.max ? fail(`must be at most ${type.max}`) : same(value);
    case "list": {
      if (!Array.isArray(value)) return fail(`must be a list, not ${describe(value)}`);
      if (value.length < (type.minItems ?? 0)) return fail(`must hold at least ${type.minItems} item(s)`);
      const items = value.map((item, i) => readValue(type.items, item, `${path}[${i}]`, env));
      return { option: items.map((i) => i.option), config: items.map((i) => i.config) };
    }
    case "object": {
      const read = fromConfig(type.fields, value, path, env, configRequired(type));
      return { option: read.options, config: read.config };
    }
    case "value":
      return fail("cannot be set in the config file");
  }
}

function configRequired(type: Extract<OptionType, { kind: "object" }>): string[] {
  return (type.required ?? []).map((k) => {
    const spec = type.fields.find((f) => f.key === k);
    return spec ? configKey(spec) ?? k : k;
  });
}

/**
 * The config path of an option path (`registration.initialAccessToken` → `registration.initial_access_token`),
 * or undefined when the option has no config key. List indexes pass through.
 */
export function configPathOf(specs: readonly OptionSpec[], optionPath: string): string | undefined {
  const out: string[] = [];
  let fields: readonly OptionSpec[] | undefined = specs;
  for (const part of optionPath.split(".")) {
    const [key, index = ""] = /^([^[]*)(.*)$/.exec(part)!.slice(1) as [string, string];
    const spec: OptionSpec | undefined = fields?.find((f) => f.key === key);
    const name = spec ? configKey(spec) : null;
    if (!spec || name === null) return undefined;
    out.push(name + index);
    const type: OptionType = spec.type.kind === "list" ? spec.type.items : spec.type;
    fields = type.kind === "object" ? type.fields : undefined;
  }
  return out.join(".");
}

/** The JSON Schema (draft 2020-12) of a config object described by `specs`. */
export function configSchema(specs: readonly OptionSpec[], title: string, required: readonly string[] = []): Record<string, unknown> {
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    title,
    ...objectSchema(specs, required),
    $defs: {
      env: {
        description: "Read the value from this environment variable at start.",
        type: "object",
        properties: { env: { type: "string", minLength: 1 } },
        required: ["env"],
        additionalProperties: false,
      },
    },
  };
}

function objectSchema(specs: readonly OptionSpec[], required: readonly string[]): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const spec of specs) {
    const key = configKey(spec);
    if (key === null) continue;
    properties[key] = { description: spec.config?.doc ?? spec.doc, ...typeSchema(configType(spec)) };
  }
  return { type: "object", properties, ...(required.length > 0 ? { required: [...required] } : {}), additionalProperties: false };
}

function typeSchema(type: OptionType): Record<string, unknown> {
  switch (type.kind) {
    case "string": {
      const plain = { type: "string", minLength: 1, ...(type.enum ? { enum: [...type.enum] } : {}) };
      return type.secret ? { anyOf: [plain, { $ref: "#/$defs/env" }] } : plain;
    }
    case "boolean":
      return { type: "boolean" };
    case "integer":
      return { type: "integer", minimum: type.min, ...(type.max === undefined ? {} : { maximum: type.max }) };
    case "list":
      return { type: "array", items: typeSchema(type.items) };
    case "object":
      return objectSchema(type.fields, configRequired(type));
    case "value":
      return {};
  }
}

/** Every config key as a dotted path with its documentation, depth first: the README's key table. */
export function configKeys(specs: readonly OptionSpec[], prefix = ""): { key: string; doc: string }[] {
  const rows: { key: string; doc: string }[] = [];
  for (const spec of specs) {
    const key = configKey(spec);
    if (key === null) continue;
    const path = prefix + key;
    rows.push({ key: path, doc: spec.config?.doc ?? spec.doc });
    const type = configType(spec);
    if (type.kind === "object") rows.push(...configKeys(type.fields, `${path}.`));
  }
  return rows;
}
