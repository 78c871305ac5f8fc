/**
 * Authorization server metadata (RFC 8414) at `/.well-known/oauth-authorization-server{issuer path}`. The
 * document itself is built once, from the core and the enabled features, when the server is created.
 *
 * @module
 */
import { defineEndpoint, type Endpoint } from "../core/endpoint.ts";

/** `GET /.well-known/oauth-authorization-server[issuer path]` (RFC 8414 §3). */
export const metadataEndpoint: Endpoint = defineEndpoint({
  name: "metadata",
  route: "/.well-known/oauth-authorization-server",
  // RFC 8414 §3: the well-known segment goes between the host and the issuer's path.
  wellKnown: true,
  page: false,
  cors: true,
  reads: ["metadata"],
  methods: {
    GET: (_, view) => ({
      status: 200,
      headers: [["content-type", "application/json;charset=UTF-8"], ["cache-control", "max-age=300"]],
      body: JSON.stringify(view.metadata),
    }),
  },
});
