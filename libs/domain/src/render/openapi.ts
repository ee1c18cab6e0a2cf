import type { PublicUrls } from '../urls.js';

/** The OpenAPI 3.1.0 document, generated from the same zod schemas the service validates with. */
export declare function buildOpenApiDocument(urls: PublicUrls): Record<string, unknown>;
