/**
 * When this code last changed the bytes it renders from a given dataset, in any of the five documents
 * (reviews, insights, both feeds, the OpenAPI description). No document is dated earlier (the
 * follower's Last-Modified): after an upgrade that renders differently, a client holding the old
 * bytes must not be told by If-Modified-Since that the dataset's older date still holds.
 * libs/domain/test/rendering-changed-at.test.ts fails when the rendered bytes change until this moves
 * to the time of that change. A new BASE_URL changes bytes too, but under other URLs.
 */
export const RENDERING_CHANGED_AT = new Date('2026-11-27T21:50:00Z');
