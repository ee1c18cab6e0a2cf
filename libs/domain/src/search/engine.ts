import type { Business, Review, ServiceRef, Technician } from '../schemas/index.js';
import type { InsightsDocument, SearchResult, SinceResult } from '../schemas/documents.js';
import type { DatasetInput } from '../schemas/input.js';
import type { SearchParams } from '../schemas/search.js';

/** Read-side queries over one dataset version; indexes are built once in `createSearchEngine`. */
export interface SearchEngine {
  search(params: SearchParams): SearchResult;
  since(date: string): SinceResult;
  review(id: string): Review | undefined;
  /** Staff member by name or alias, case-insensitive. */
  technician(nameOrAlias: string): Technician | undefined;
  /** Service by id or label, case-insensitive. */
  service(idOrLabel: string): ServiceRef | undefined;
}

export declare function createSearchEngine(input: DatasetInput, reviewsNewestFirst: readonly Review[], business: Business, insights: InsightsDocument): SearchEngine;
