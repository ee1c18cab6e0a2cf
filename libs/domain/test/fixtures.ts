import type { DatasetInput, PerReviewAnalysis, Review, Sentiment } from '@reviews/domain';
import { ASPECT_IDS } from '@reviews/domain';

/** Small seeded PRNG (mulberry32): fixtures are identical on every run and machine. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export const TECHNICIANS = [
  { name: 'Margaret Ellis', role: 'Funeral director', aliases: ['Maggie', 'Mrs Ellis'] },
  { name: 'Daniel Okafor', role: 'Embalmer', aliases: ['Dan'] },
  { name: 'Rosa Delgado', role: 'Grief counsellor', aliases: [] },
];
export const SERVICES = [
  { id: 'direct-cremation', label: 'Direct cremation' },
  { id: 'traditional-funeral', label: 'Traditional funeral' },
  { id: 'memorial-service', label: 'Memorial service' },
];
export const SERVICE_AREAS = ['Springfield', 'Shelbyville'];

const SENTENCES = [
  'Maggie was so KIND to our family.',
  'The chapel looked beautiful.',
  'Pricing was clear, no surprises.',
  'Dan handled everything with care.',
  'Paperwork took longer than promised.',
  'We felt rushed at the viewing.',
  'Thank you for the cremation arrangements.',
  'Café coffee in the lounge was a nice touch.',
];

const PHRASES = ['very kind', 'clear pricing', 'beautiful chapel', 'took too long'];

/**
 * A valid DatasetInput with `reviews` reviews over 2024-01..2025-06. Dates repeat (so id breaks
 * ties), some texts are null, every 7th review has no analysis, and the first review of the list
 * has an owner reply.
 */
export function buildDataset({ reviews: reviewCount = 24, seed = 7 }: { reviews?: number; seed?: number } = {}): DatasetInput {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const ulid = () => Array.from({ length: 26 }, (_, i) => (i === 0 ? pick(CROCKFORD.slice(0, 8).split('')) : pick(CROCKFORD.split('')))).join('');

  const reviews: Review[] = [];
  const perReview: Record<string, PerReviewAnalysis> = {};
  for (let i = 0; i < reviewCount; i++) {
    const month = 1 + Math.floor(random() * 18);
    const date = `${month > 12 ? 2025 : 2024}-${String(((month - 1) % 12) + 1).padStart(2, '0')}-${String(1 + Math.floor(random() * 4) * 7).padStart(2, '0')}`;
    const rating = 1 + Math.floor(random() * 5);
    const text = i % 5 === 4 ? null : [pick(SENTENCES), pick(SENTENCES)].join(' ');
    const review: Review = {
      id: ulid(),
      author: `Author ${i}`,
      author_avatar_url: null,
      rating,
      date,
      text,
      source: 'google',
      source_url: `https://maps.example.com/review/${i}`,
      owner_reply: i === 0 ? { text: 'Thank you.', date } : null,
      verified: true,
    };
    reviews.push(review);
    if (i % 7 === 6) continue;
    const sentiment: Sentiment = rating >= 4 ? 'positive' : rating === 3 ? 'neutral' : 'negative';
    perReview[review.id] = {
      sentiment,
      score: sentiment === 'positive' ? 0.8 : sentiment === 'neutral' ? 0 : -0.6,
      aspects: [...new Set([pick(ASPECT_IDS), pick(ASPECT_IDS)])].map((id) => ({ id, sentiment: pick(['positive', 'neutral', 'negative'] as const), phrase: random() < 0.8 ? pick(PHRASES) : null })),
      technicians: random() < 0.6 ? [pick(TECHNICIANS).name] : [],
      services: random() < 0.6 ? [pick(SERVICES).id] : [],
      problems: rating <= 2 ? ['long-wait'] : [],
      service_areas: random() < 0.5 ? [pick([...SERVICE_AREAS, 'Capital City'])] : [],
      topics: random() < 0.5 ? ['veterans'] : [],
    };
  }
  const [first, second] = reviews;
  return {
    generated_at: '2025-07-01T12:00:00Z',
    business: {
      id: 'evergreen-funeral-home',
      name: 'Evergreen Funeral Home & Crematory',
      description: 'Family-owned funeral home and crematory.',
      url: 'https://evergreen.example.com',
      phone: '+1 555 0100',
      address: { street_address: '1 Elm Street', locality: 'Springfield', region: 'IL', postal_code: '62701', country: 'US' },
      hours: [{ days: 'Mo-Fr', opens: '09:00', closes: '17:00', note: null }],
      service_areas: SERVICE_AREAS,
      services: SERVICES,
      technicians: TECHNICIANS,
      profiles: [{ source: 'google', url: 'https://maps.example.com/evergreen' }],
    },
    reviews,
    analysis: {
      model: 'test-model',
      generated_at: '2025-07-01T11:00:00Z',
      taxonomy: {
        version: 1,
        topics: [
          { id: 'veterans', label: 'Veterans honours' },
          { id: 'pets', label: 'Pet cremation' },
        ],
        problems: [{ id: 'long-wait', label: 'Long wait' }],
      },
      per_review: perReview,
      faq: first && second ? [{ question: 'Do they explain prices?', answer: 'Yes.', source_review_ids: [first.id, second.id] }] : [],
      summary: 'Families praise the staff.',
      pull_quote: null,
    },
  };
}

/** A valid ULID whose order follows `n` (for hand-written cases where id order matters). */
export function ulidOf(n: number): string {
  return `01J${String(n).padStart(23, '0')}`;
}

export function makeReview(n: number, date: string, rating: number, text: string | null = null): Review {
  return { id: ulidOf(n), author: `Reviewer ${n}`, author_avatar_url: null, rating, date, text, source: 'google', source_url: null, owner_reply: null, verified: true };
}

export function makeAnalysis(overrides: Partial<PerReviewAnalysis> = {}): PerReviewAnalysis {
  return { sentiment: 'positive', score: 0.5, aspects: [], technicians: [], services: [], problems: [], service_areas: [], topics: [], ...overrides };
}

/** The fixture business and taxonomy with exactly these reviews and analyses (no FAQ). */
export function datasetWith(reviews: Review[], perReview: Record<string, PerReviewAnalysis> = {}): DatasetInput {
  const base = buildDataset({ reviews: 0 });
  return { ...base, reviews, analysis: { ...base.analysis, per_review: perReview, faq: [] } };
}
