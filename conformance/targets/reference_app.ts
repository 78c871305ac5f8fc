/**
 * The reference server for in-process runs (`--module`), at the base_url of `reference.json`:
 *
 * ```sh
 * npx tsx conformance/cli.ts --target conformance/targets/reference.json --module conformance/targets/reference_app.ts
 * ```
 *
 * @module
 */
import { createReferenceApp, type ReferenceApp } from "../../lib/reference/app.ts";

/** The demo-seeded reference app; its issuer matches reference.json's base_url. */
const app: ReferenceApp = await createReferenceApp({ issuer: "http://127.0.0.1:8080", passwordIterations: 1000 });
export default app;
