import type { FaqEntry, PerReviewAnalysis, Review } from '@reviews/domain';
import { ASPECTS } from '@reviews/domain/taxonomy';
import { FUNERAL_HOME, HOME_TOWN, STAFF } from './funeral-home.js';
import { PROBLEMS } from './funeral-taxonomy.js';

/**
 * The editorial half of the analysis (FAQ, summary, pull quote), written from counts over the
 * generated reviews so that every claim is backed by the reviews it cites.
 */

interface Tally {
  positive: number;
  negative: number;
  total: number;
}

interface Stats {
  reviewCount: number;
  ratingSum: number;
  aspects: Map<string, Tally>;
  technicians: Map<string, number>;
  problems: Map<string, number>;
  areas: Map<string, number>;
}

function countUp(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

function gatherStats(reviews: readonly Review[], perReview: Readonly<Record<string, PerReviewAnalysis>>): Stats {
  const stats: Stats = { reviewCount: reviews.length, ratingSum: 0, aspects: new Map(), technicians: new Map(), problems: new Map(), areas: new Map() };
  for (const review of reviews) {
    stats.ratingSum += review.rating;
    const analysis = perReview[review.id];
    if (analysis === undefined) continue;
    for (const aspect of analysis.aspects) {
      const tally = stats.aspects.get(aspect.id) ?? { positive: 0, negative: 0, total: 0 };
      tally.total++;
      if (aspect.sentiment === 'positive') tally.positive++;
      if (aspect.sentiment === 'negative') tally.negative++;
      stats.aspects.set(aspect.id, tally);
    }
    for (const name of analysis.technicians) countUp(stats.technicians, name);
    for (const id of analysis.problems) countUp(stats.problems, id);
    for (const area of analysis.service_areas) countUp(stats.areas, area);
  }
  return stats;
}

/** Keys by descending count; ties keep first-seen order, so the result is deterministic. */
function ranked(map: ReadonlyMap<string, number>, limit: number): string[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([key]) => key);
}

function listing(items: readonly string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items.at(-1) ?? ''}`;
}

/** How reviews that discuss an aspect lean, in words. */
function verdict(tally: Tally | undefined, praise: string, complaint: string): string {
  const { positive, negative, total } = tally ?? { positive: 0, negative: 0, total: 0 };
  if (positive === 0) return negative > 0 ? `Not always. Reviews that discuss it mention ${complaint}.` : 'Reviews that discuss it are neutral about it.';
  const share = positive / total;
  const lead = share >= 0.75 ? 'Yes. Most families describe' : share >= 0.5 ? 'Mostly. Many families describe' : 'Reviews are mixed. Some families describe';
  const caveat = negative === 0 ? '' : ` ${share >= 0.75 ? 'A few' : 'Others'} mention ${complaint}.`;
  return `${lead} ${praise}.${caveat}`;
}

interface FaqTopic {
  question: string;
  cites: (analysis: PerReviewAnalysis) => boolean;
  answer: (stats: Stats) => string;
}

const hasAspect = (id: string) => (analysis: PerReviewAnalysis) => analysis.aspects.some((aspect) => aspect.id === id);
const hasService = (id: string) => (analysis: PerReviewAnalysis) => analysis.services.includes(id);
const roleOf = new Map(STAFF.map((member) => [member.name, member.role]));
const counsellor = STAFF.find((member) => member.duty === 'counsellor')?.name ?? 'the arrangement counsellor';

const FAQ_TOPICS: readonly FaqTopic[] = [
  {
    question: 'Who will we work with at Willow Creek?',
    cites: (analysis) => analysis.technicians.length > 0,
    answer: (stats) =>
      `Reviewers most often name ${listing(ranked(stats.technicians, 3).map((name) => `${name} (${roleOf.get(name) ?? 'staff'})`))}; families usually work with one funeral director from the first call to the ceremony.`,
  },
  {
    question: 'Does Willow Creek offer direct cremation?',
    cites: hasService('direct-cremation'),
    answer: () => 'Yes. Families who chose a direct cremation describe a simple, dignified process handled by the same funeral directors who arrange full funerals.',
  },
  {
    question: 'Can we plan a funeral in advance?',
    cites: hasService('pre-planning'),
    answer: () => `Yes. Reviewers who pre-planned with ${counsellor} say that having everything arranged ahead of time spared their families hard decisions later.`,
  },
  {
    question: 'Are their prices transparent?',
    cites: hasAspect('pricing'),
    answer: (stats) => verdict(stats.aspects.get('pricing'), 'fair, itemized pricing with no pressure', 'a final bill above the quote or feeling upsold'),
  },
  {
    question: 'Do they respond quickly?',
    cites: hasAspect('timeliness'),
    answer: (stats) => verdict(stats.aspects.get('timeliness'), 'a director arriving within hours of the first call and ceremonies that start on time', 'late starts or waiting weeks for ashes'),
  },
  {
    question: 'Do they help with death certificates and paperwork?',
    cites: hasAspect('paperwork'),
    answer: (stats) => verdict(stats.aspects.get('paperwork'), 'the staff filing the forms and ordering the death certificates for them', 'certificates taking weeks or errors that needed fixing'),
  },
  {
    question: 'Which towns do they serve?',
    cites: (analysis) => analysis.service_areas.length > 0,
    answer: (stats) => `Reviews come from families in ${listing(ranked(stats.areas, 8))}. The funeral home is in ${HOME_TOWN}, and directors meet families at home across the area.`,
  },
  {
    question: 'Is there support for the family after the funeral?',
    cites: hasAspect('aftercare'),
    answer: (stats) => verdict(stats.aspects.get('aftercare'), 'follow-up calls, grief resources and an annual remembrance evening', 'that nobody followed up'),
  },
  {
    question: 'Do they offer green burial?',
    cites: hasService('green-burial'),
    answer: () => 'Yes. Several families chose a green burial through Willow Creek.',
  },
];

const FAQ_SIZE = 8;
const SOURCES_PER_ANSWER = 3;

function writeFaq(reviews: readonly Review[], perReview: Readonly<Record<string, PerReviewAnalysis>>, stats: Stats): FaqEntry[] {
  const faq: FaqEntry[] = [];
  for (const topic of FAQ_TOPICS) {
    if (faq.length === FAQ_SIZE) break;
    const sources: string[] = [];
    for (const review of reviews) {
      const analysis = perReview[review.id];
      if (analysis !== undefined && topic.cites(analysis)) sources.push(review.id);
      if (sources.length === SOURCES_PER_ANSWER) break;
    }
    if (sources.length > 0) faq.push({ question: topic.question, answer: topic.answer(stats), source_review_ids: sources });
  }
  return faq;
}

function writeSummary(stats: Stats): string | null {
  if (stats.reviewCount === 0) return null;
  const average = (stats.ratingSum / stats.reviewCount).toFixed(1);
  const plural = stats.reviewCount === 1 ? 'review' : 'reviews';
  const sentences = [`${FUNERAL_HOME.name} has ${stats.reviewCount} ${plural}, with an average rating of ${average} out of 5.`];
  const praised = ranked(new Map([...stats.aspects].map(([id, tally]) => [id, tally.positive] as const).filter(([, positive]) => positive > 0)), 3);
  const labels = new Map<string, string>(ASPECTS.map((aspect) => [aspect.id, aspect.label.toLowerCase()]));
  if (praised.length > 0) sentences.push(`Families most often praise the ${listing(praised.map((id) => labels.get(id) ?? id))}.`);
  const named = ranked(stats.technicians, 2);
  if (named.length > 0) sentences.push(`${listing(named)} ${named.length === 1 ? 'is' : 'are'} the staff reviewers name most often.`);
  const problemLabels = new Map<string, string>(PROBLEMS.map((problem) => [problem.id, problem.label.toLowerCase()]));
  const complaints = ranked(stats.problems, 2);
  if (complaints.length > 0) sentences.push(`The complaints that do come up are mostly about ${listing(complaints.map((id) => problemLabels.get(id) ?? id))}.`);
  return sentences.join(' ');
}

export interface Editorial {
  faq: FaqEntry[];
  summary: string | null;
  pull_quote: string | null;
}

/** `reviews` newest first; `highlights` maps review ids to quotable sentences of five-star reviews. */
export function writeEditorial(reviews: readonly Review[], perReview: Readonly<Record<string, PerReviewAnalysis>>, highlights: ReadonlyMap<string, string>): Editorial {
  const stats = gatherStats(reviews, perReview);
  let pullQuote: string | null = null;
  for (const review of reviews) {
    pullQuote = highlights.get(review.id) ?? null;
    if (pullQuote !== null) break;
  }
  return { faq: writeFaq(reviews, perReview, stats), summary: writeSummary(stats), pull_quote: pullQuote };
}
