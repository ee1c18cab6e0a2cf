import type { Review } from '@reviews/domain';
import { REPLIES } from './phrasebook.js';
import type { Random } from './random.js';

/** Who wrote a review and where: names, avatars, source sites, permalinks and the owner's replies. */

const FIRST_NAMES = [
  'Linda', 'James', 'Patricia', 'Robert', 'Jennifer', 'Michael', 'Susan', 'William', 'Karen', 'David', 'Nancy', 'Richard',
  'Lisa', 'Joseph', 'Betty', 'Charles', 'Sandra', 'Christopher', 'Ashley', 'Anthony', 'Dorothy', 'Mark', 'Kimberly', 'Steven',
  'Emily', 'Paul', 'Donna', 'Andrew', 'Michelle', 'Joshua', 'Carol', 'Kenneth', 'Amanda', 'Kevin', 'Melissa', 'Brian',
  'Deborah', 'George', 'Stephanie', 'Edward', 'Rebecca', 'Ronald', 'Sharon', 'Timothy', 'Laura', 'Jason', 'Cynthia', 'Jeffrey',
  'Rosa', 'Luis', 'Mei', 'Hiroshi', 'Fatima', 'Omar', 'Ingrid', 'Sven', 'Aaliyah', 'Marcus', 'Nadia', 'Tyrone',
];
const LAST_NAMES = [
  'Anderson', 'Bennett', 'Carver', 'Delgado', 'Eriksen', 'Fitzgerald', 'Garcia', 'Hughes', 'Iverson', 'Jensen', 'Kowalski',
  'Lindqvist', 'Morales', 'Nguyen', 'Olsen', 'Patel', 'Quinn', 'Ramirez', 'Schmidt', 'Tanaka', 'Underwood', 'Vasquez',
  'Walsh', 'Yamamoto', 'Zimmerman', 'Brooks', 'Coleman', 'Dawson', 'Foster', 'Grant', 'Harper', 'Kim', 'Lawson', 'Mitchell',
  'Novak', 'Ortiz', 'Pierce', 'Russo', 'Sullivan', 'Turner', 'Webb', 'Young',
];

export interface Reviewer {
  author: string;
  /** How the owner addresses them in a reply, or null when the display name gives no first name. */
  firstName: string | null;
}

export function pickReviewer(random: Random): Reviewer {
  const first = random.pick(FIRST_NAMES);
  const last = random.pick(LAST_NAMES);
  switch (random.weighted([['full', 60], ['initial', 30], ['family', 6], ['lower', 4]] as const)) {
    case 'full':
      return { author: `${first} ${last}`, firstName: first };
    case 'initial':
      return { author: `${first} ${last.charAt(0)}.`, firstName: first };
    case 'family':
      return { author: `The ${last} Family`, firstName: null };
    case 'lower':
      return { author: `${first.toLowerCase()}${last.toLowerCase().slice(0, 3)}`, firstName: null };
  }
}

export interface SourceSite {
  source: string;
  avatarRate: number;
  permalink: (reviewId: string) => string;
}

const SOURCES: readonly (readonly [SourceSite, number])[] = [
  [{ source: 'google', avatarRate: 0.7, permalink: (id) => `https://google.example/maps/place/willow-creek-funeral-home/reviews/${id.toLowerCase()}` }, 70],
  [{ source: 'facebook', avatarRate: 0.85, permalink: (id) => `https://facebook.example/willowcreekfuneral/reviews/${id.toLowerCase()}` }, 20],
  [{ source: 'yelp', avatarRate: 0.6, permalink: (id) => `https://yelp.example/biz/willow-creek-funeral-home-harlow-springs?hrid=${id.toLowerCase()}` }, 10],
];

export function pickSource(random: Random): SourceSite {
  return random.weighted(SOURCES);
}

export function avatarUrl(site: SourceSite, random: Random): string | null {
  if (!random.chance(site.avatarRate)) return null;
  let token = '';
  for (let i = 0; i < 12; i++) token += random.int(0, 15).toString(16);
  return `https://avatars.${site.source}.example/u/${token}.jpg`;
}

const DAY_MS = 86_400_000;

/** Owners answer complaints far more often than praise; a reply comes the same day or within two weeks. */
export function ownerReply(rating: number, reviewDay: number, lastDay: number, reviewer: Reviewer, random: Random): Review['owner_reply'] {
  const replyRate = rating >= 5 ? 0.2 : rating === 4 ? 0.25 : rating === 3 ? 0.5 : 0.7;
  if (!random.chance(replyRate)) return null;
  const templates = REPLIES[rating >= 4 ? 'thanks' : 'apology'].filter((text) => reviewer.firstName !== null || !text.includes('{first}'));
  const text = random.pick(templates).replace('{first}', reviewer.firstName ?? '');
  const day = Math.min(lastDay, reviewDay + random.weighted([[0, 30], [1, 30], [2, 15], [4, 10], [7, 10], [14, 5]]));
  return { text, date: new Date(day * DAY_MS).toISOString().slice(0, 10) };
}
