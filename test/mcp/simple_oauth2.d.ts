/** The part of simple-oauth2 5's API that the tests use (the package ships no types). */
declare module "simple-oauth2" {
  interface ModuleOptions {
    client: { id: string; secret: string };
    auth: { tokenHost: string; tokenPath?: string; revokePath?: string };
    options?: { authorizationMethod?: "header" | "body" };
  }
  interface AccessToken {
    token: Record<string, unknown>;
    revoke(tokenType: "access_token" | "refresh_token"): Promise<void>;
    revokeAll(): Promise<void>;
  }
  export class ClientCredentials {
    constructor(options: ModuleOptions);
    getToken(params: { scope?: string | string[] }): Promise<AccessToken>;
    createToken(token: Record<string, unknown>): AccessToken;
  }
}
