// The request object: the POSTed form is read once, with the media type and repeats checked.
import { describe, expect, test } from "vitest";
import { errorOf, fixture, ISSUER, SECRETS } from "../helpers.ts";

const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });

describe("the posted form", () => {
  test.each(["/token", "/revoke", "/introspect"])("%s: another media type is invalid_request with a description", async (path) => {
    const { server } = await fixture();
    const response = await server.fetch(new Request(`${ISSUER}${path}`, {
      method: "POST", headers: { "content-type": "application/json", ...basic("web", SECRETS.web) }, body: "{}",
    }));
    const error = await errorOf(response);
    expect(error).toMatchObject({ status: 400, error: "invalid_request" });
    expect(error.description).toMatch(/\S/);
  });
});
