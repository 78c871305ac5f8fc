/**
 * The spec's body-field table (§4.2) as data, and the cases generated from it: one per cell. A `required`
 * cell omits the field and expects the RFC error; a `not sent` cell runs the column's request, which leaves
 * the field out, and expects tokens. Cases elsewhere that send a `not sent` field anyway are tagged with the
 * cell too (for example SEC-PKCE-DOWNGRADE on code_verifier × authorization_code (confidential)).
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { expectError, expectTokens } from "../checks.ts";
import type { CaseContext, Fields } from "../context.ts";
import type { FeatureId } from "../features.ts";
import { type Area, type Column, COLUMNS, type Row, ROWS } from "../types.ts";
import { ALL, CONTROL, SPEC } from "./profiles.ts";

/** The positive case of each column: its valid request, the control of the column's negative cases. */
const COLUMN_CONTROL: Record<Column, string> = {
  "AC-PUB": CONTROL.codePublic,
  "AC-CONF": CONTROL.codeConfidential,
  "RT-PUB": CONTROL.refreshPublic,
  "RT-CONF": CONTROL.refreshConfidential,
  "CC": CONTROL.clientCredentials,
};

/** The table, verbatim: a fixed value, "required" or "not sent". */
export const BODY_FIELDS: Record<Row, Record<Column, string>> = {
  grant_type: {
    "AC-PUB": "authorization_code",
    "AC-CONF": "authorization_code",
    "RT-PUB": "refresh_token",
    "RT-CONF": "refresh_token",
    "CC": "client_credentials",
  },
  client_id: { "AC-PUB": "required", "AC-CONF": "required", "RT-PUB": "required", "RT-CONF": "required", "CC": "required" },
  client_secret: { "AC-PUB": "not sent", "AC-CONF": "required", "RT-PUB": "not sent", "RT-CONF": "required", "CC": "required" },
  redirect_uri: { "AC-PUB": "required", "AC-CONF": "required", "RT-PUB": "not sent", "RT-CONF": "not sent", "CC": "not sent" },
  code: { "AC-PUB": "required", "AC-CONF": "required", "RT-PUB": "not sent", "RT-CONF": "not sent", "CC": "not sent" },
  code_verifier: { "AC-PUB": "required", "AC-CONF": "not sent", "RT-PUB": "not sent", "RT-CONF": "not sent", "CC": "not sent" },
  refresh_token: { "AC-PUB": "not sent", "AC-CONF": "not sent", "RT-PUB": "required", "RT-CONF": "required", "CC": "not sent" },
  scope: { "AC-PUB": "not sent", "AC-CONF": "not sent", "RT-PUB": "not sent", "RT-CONF": "not sent", "CC": "required (one scope)" },
};

/** The errors a request without each field may get, and the RFC rule that says so. */
const MISSING: Record<Row, { codes: readonly string[]; ref: string }> = {
  grant_type: { codes: ["invalid_request"], ref: "RFC 6749 §5.2" },
  // Without client_id there is no client authentication either: RFC 6749 §5.2 invalid_client.
  client_id: { codes: ["invalid_request", "invalid_client"], ref: "RFC 6749 §4.1.3, §5.2" },
  client_secret: { codes: ["invalid_client"], ref: "RFC 6749 §3.2.1, §5.2" },
  // A missing redirect_uri also "does not match" the one of the authorization request: invalid_grant.
  redirect_uri: { codes: ["invalid_request", "invalid_grant"], ref: "RFC 6749 §4.1.3, §5.2" },
  code: { codes: ["invalid_request"], ref: "RFC 6749 §4.1.3, §5.2" },
  code_verifier: { codes: ["invalid_request", "invalid_grant"], ref: "RFC 7636 §4.5, §4.6" },
  refresh_token: { codes: ["invalid_request"], ref: "RFC 6749 §6, §5.2" },
  // The spec's one-scope rule makes a missing scope an invalid scope too.
  scope: { codes: ["invalid_request", "invalid_scope"], ref: "spec §8; RFC 6749 §3.3, §5.2" },
};

/** How a column's valid request is made. */
export interface ColumnSetup {
  column: Column;
  area: Area;
  /** The features the column's grant needs (none: the authorization code flow every server has). */
  features?: readonly FeatureId[];
  /** A valid request of the column, with exactly the table's fields (fresh code or refresh token). */
  prepare(ctx: CaseContext): Promise<Fields>;
}

/** The RFC 6749 section of each column's token request: what a request without the "not sent" fields follows. */
const COLUMN_RFC: Record<Column, string> = {
  "AC-PUB": "RFC 6749 §4.1.3; RFC 7636 §4.5",
  "AC-CONF": "RFC 6749 §4.1.3",
  "RT-PUB": "RFC 6749 §6",
  "RT-CONF": "RFC 6749 §6",
  "CC": "RFC 6749 §4.4.2",
};

/** The case id of a cell: `TOKEN-AC-PUB-CODE_VERIFIER-REQUIRED`, `TOKEN-CC-REDIRECT_URI-NOT-SENT`. */
export function cellId(column: Column, row: Row): string {
  const kind = BODY_FIELDS[row][column] === "not sent" ? "NOT-SENT" : "REQUIRED";
  return `TOKEN-${column}-${row.toUpperCase()}-${kind}`;
}

/** The eight cases of one column. */
export function cellCases(setup: ColumnSetup): CaseDef[] {
  const { column, area } = setup;
  const name = COLUMNS[column];
  return ROWS.map((row): CaseDef => {
    const value = BODY_FIELDS[row][column];
    const cells = [{ column, row }];
    const where = `spec §4.2 table, ${row} × ${name}`;
    if (value === "not sent") {
      return {
        id: cellId(column, row),
        title: `${name}: the request succeeds without ${row}`,
        area,
        ref: `${where}; ${COLUMN_RFC[column]}`,
        level: "MUST",
        profiles: ALL,
        positive: true,
        ...(setup.features === undefined ? {} : { features: setup.features }),
        cells,
        async run(ctx) {
          const fields = await setup.prepare(ctx);
          ctx.check(fields[row] === undefined, `Internal: the ${name} request carries ${row}`);
          expectTokens(ctx, await ctx.token(fields), `${name} without ${row}`);
        },
      };
    }
    const missing = MISSING[row];
    return {
      id: cellId(column, row),
      title: `${name}: a request without ${row} is refused (${missing.codes.join(" or ")})`,
      area,
      ref: `${where}; ${missing.ref}`,
      level: "MUST",
      // Plain RFC 6749 lets a server apply a default scope (§3.3): a required scope is the spec's rule.
      profiles: row === "scope" ? SPEC : ALL,
      needs: [COLUMN_CONTROL[column]],
      ...(setup.features === undefined ? {} : { features: setup.features }),
      cells,
      async run(ctx) {
        const fields = await setup.prepare(ctx);
        ctx.check(fields[row] !== undefined, `Internal: the ${name} request lacks ${row}`);
        const reply = await ctx.token({ ...fields, [row]: undefined });
        expectError(ctx, reply, missing.codes, `${name} without ${row}`);
      },
    };
  });
}
