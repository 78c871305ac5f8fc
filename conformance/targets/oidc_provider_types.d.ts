/**
 * The few types of oidc-provider (which ships none) that the conformance target uses; structural, so the
 * launcher type-checks without a type package.
 */
declare module "oidc-provider" {
  interface Client {
    grantTypeAllowed(type: string): boolean;
  }
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown> & {
      issueRefreshToken?: (ctx: unknown, client: Client, source: unknown) => boolean | Promise<boolean>;
      findAccount?: (ctx: unknown, sub: string) => unknown;
    });
    callback(): (request: unknown, response: unknown) => void;
  }
}
