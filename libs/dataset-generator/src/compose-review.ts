import type { PerReviewAnalysis, Sentiment } from '@reviews/domain';
import { SERVICES, SERVICE_AREAS, STAFF, type FuneralService, type StaffDuty, type StaffMember } from './funeral-home.js';
import { ASPECT_TOPIC, SERVICE_TOPIC } from './funeral-taxonomy.js';
import { CLOSINGS, NEGATIVE_REMARKS, NEUTRAL_REMARKS, OPENINGS, POSITIVE_REMARKS, RELATIONS, WHEN, type Remark } from './phrasebook.js';
import type { Random } from './random.js';

export type Rating = 1 | 2 | 3 | 4 | 5;

/** A review's text together with what an analysis model would report about it. */
export interface WrittenReview {
  text: string;
  analysis: PerReviewAnalysis;
  /** A self-contained positive sentence of the text, fit for a pull quote. */
  highlight: string | null;
}

const STAFF_BY_DUTY = new Map<StaffDuty, (readonly [StaffMember, number])[]>();
for (const member of STAFF) {
  const list = STAFF_BY_DUTY.get(member.duty) ?? [];
  list.push([member, member.weight]);
  STAFF_BY_DUTY.set(member.duty, list);
}
const AT_NEED_SERVICES = SERVICES.filter((service) => service.atNeed).map((service) => [service, service.weight] as const);

/** The score an analysis model gives a review of this rating, and its polarity. */
function sentimentFor(rating: Rating, random: Random): { sentiment: Sentiment; score: number } {
  const between = (low: number, high: number): number => Math.round((low + (high - low) * random.next()) * 100) / 100;
  switch (rating) {
    case 5:
      return { sentiment: 'positive', score: between(0.75, 1) };
    case 4:
      return { sentiment: 'positive', score: between(0.35, 0.7) };
    case 3:
      return { sentiment: 'neutral', score: between(-0.2, 0.2) };
    case 2:
      return { sentiment: 'negative', score: between(-0.65, -0.35) };
    case 1:
      return { sentiment: 'negative', score: between(-1, -0.7) };
  }
}

/** How many remarks of each polarity a review with this rating makes. */
function remarkPlan(rating: Rating, random: Random): { positive: number; neutral: number; negative: number } {
  switch (rating) {
    case 5:
      return { positive: random.weighted([[1, 15], [2, 45], [3, 30], [4, 10]]), neutral: 0, negative: 0 };
    case 4:
      return { positive: random.weighted([[1, 30], [2, 50], [3, 20]]), neutral: random.chance(0.5) ? 1 : 0, negative: random.chance(0.15) ? 1 : 0 };
    case 3:
      return { positive: 1, neutral: random.chance(0.6) ? 1 : 0, negative: 1 };
    case 2:
      return { positive: random.chance(0.4) ? 1 : 0, neutral: random.chance(0.3) ? 1 : 0, negative: random.int(1, 2) };
    case 1:
      return { positive: 0, neutral: 0, negative: random.weighted([[1, 25], [2, 50], [3, 25]]) };
  }
}

function closingMood(rating: Rating): keyof typeof CLOSINGS {
  if (rating >= 4) return 'praise';
  return rating === 3 ? 'mixed' : 'complaint';
}

/** Analysis of a review that has a rating and no text: polarity only, nothing mentioned. */
export function ratingOnlyAnalysis(rating: Rating, random: Random): PerReviewAnalysis {
  return { ...sentimentFor(rating, random), aspects: [], technicians: [], services: [], problems: [], service_areas: [], topics: [] };
}

/**
 * Writes one review for `rating` from the phrasebook and records, while filling each slot, exactly
 * which staff, services, towns, aspects and problems the text mentions.
 */
export function writeReview(rating: Rating, random: Random): WrittenReview {
  const cast = (duty: StaffDuty): StaffMember => random.weighted(STAFF_BY_DUTY.get(duty) ?? []);
  const people: Record<StaffDuty, StaffMember> = { director: cast('director'), embalmer: cast('embalmer'), counsellor: cast('counsellor') };
  const chosen: FuneralService = random.weighted(AT_NEED_SERVICES);
  const relation = random.pick(RELATIONS);
  const area = random.pick(SERVICE_AREAS);

  const technicians = new Set<string>();
  const services = new Set<string>();
  let areaMentioned = false;

  const fill = (template: string, staffDuty: StaffDuty | undefined): string =>
    template.replace(/\{(\w+)\}/g, (_match, slot: string) => {
      switch (slot) {
        case 'staff': {
          const member = people[staffDuty ?? 'director'];
          technicians.add(member.name);
          return random.pick([member.name, ...member.aliases]);
        }
        case 'service':
          services.add(chosen.id);
          return chosen.mention;
        case 'area':
          areaMentioned = true;
          return area;
        case 'relation':
          return relation;
        case 'when':
          return random.pick(WHEN);
        default:
          throw new Error(`unknown template slot {${slot}}`);
      }
    });

  const plan = remarkPlan(rating, random);
  const usedAspects = new Set<string>();
  const remarks: Remark[] = [];
  const take = (pool: readonly Remark[], count: number): void => {
    for (let taken = 0, attempts = 0; taken < count && attempts < 30; attempts++) {
      const remark = random.pick(pool);
      if (usedAspects.has(remark.aspect) || (remark.only !== undefined && !remark.only.includes(chosen.id))) continue;
      usedAspects.add(remark.aspect);
      remarks.push(remark);
      taken++;
    }
  };
  take(POSITIVE_REMARKS, plan.positive);
  take(NEUTRAL_REMARKS, plan.neutral);
  take(NEGATIVE_REMARKS, plan.negative);
  // Mixed reviews read in any order; glowing ones lead with praise, complaints with the complaint.
  if (rating === 3) {
    for (let i = remarks.length - 1; i > 0; i--) {
      const j = random.int(0, i);
      [remarks[i], remarks[j]] = [remarks[j] as Remark, remarks[i] as Remark];
    }
  }
  if (rating <= 2) remarks.reverse();

  const sentences: string[] = [];
  if (random.chance(0.9)) sentences.push(fill(random.pick(OPENINGS), undefined));

  const analysis: PerReviewAnalysis = { ...sentimentFor(rating, random), aspects: [], technicians: [], services: [], problems: [], service_areas: [], topics: [] };
  const problems = new Set<string>();
  let highlight: string | null = null;
  for (const remark of remarks) {
    const marked = fill(remark.text, remark.staff);
    const open = marked.indexOf('[');
    const close = marked.indexOf(']', open);
    const phrase = marked.slice(open + 1, close);
    const sentence = marked.slice(0, open) + phrase + marked.slice(close + 1);
    sentences.push(sentence);
    analysis.aspects.push({ id: remark.aspect, sentiment: remark.sentiment, phrase });
    if (remark.service !== undefined) services.add(remark.service);
    if (remark.problem !== undefined) problems.add(remark.problem);
    if (highlight === null && rating === 5 && remark.sentiment === 'positive') highlight = sentence;
  }

  if (random.chance(0.6)) sentences.push(fill(random.pick(CLOSINGS[closingMood(rating)]), undefined));
  if (sentences.length === 0) sentences.push(fill(random.pick(OPENINGS), undefined));

  const topics = new Set<string>(analysis.aspects.map((aspect) => ASPECT_TOPIC[aspect.id]));
  for (const id of services) {
    const topic = SERVICE_TOPIC[id];
    if (topic !== undefined) topics.add(topic);
  }
  analysis.technicians = [...technicians];
  analysis.services = [...services];
  analysis.problems = [...problems];
  analysis.service_areas = areaMentioned ? [area] : [];
  analysis.topics = [...topics];
  return { text: sentences.join(' '), analysis, highlight };
}
