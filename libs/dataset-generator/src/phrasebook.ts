import type { AspectId, Sentiment } from '@reviews/domain';
import type { StaffDuty } from './funeral-home.js';
import type { ProblemId } from './funeral-taxonomy.js';

/**
 * Sentence templates reviews are written from. Slots: {staff} (a staff member with the given duty,
 * by name or alias), {area} (a town served), {relation} (the person who died), {service} (the
 * service chosen), {when}. In a remark, the phrase the analysis quotes for the aspect is in [brackets].
 * Templates never name staff, services or towns outside their slots, so the analysis of a review is
 * exactly what its slots and remarks put in.
 */
export interface Remark {
  aspect: AspectId;
  sentiment: Sentiment;
  text: string;
  staff?: StaffDuty;
  /** Id of a service the sentence names literally. */
  service?: string;
  problem?: ProblemId;
  /** The remark only makes sense for these services (ashes need a cremation, a casket a burial...). */
  only?: readonly string[];
}

const CREMATION = ['direct-cremation', 'cremation-and-memorial'];
const CASKET = ['traditional-funeral', 'burial', 'embalming-and-viewing'];
const CEMETERY = ['traditional-funeral', 'burial', 'green-burial'];
const VIEWING = ['traditional-funeral', 'embalming-and-viewing'];
const CEREMONY = ['traditional-funeral', 'cremation-and-memorial', 'memorial-service', 'burial', 'green-burial', 'embalming-and-viewing'];

const positive = (aspect: AspectId, text: string, extra: Partial<Remark> = {}): Remark => ({ aspect, sentiment: 'positive', text, ...extra });
const neutral = (aspect: AspectId, text: string, extra: Partial<Remark> = {}): Remark => ({ aspect, sentiment: 'neutral', text, ...extra });
const negative = (aspect: AspectId, problem: ProblemId, text: string, extra: Partial<Remark> = {}): Remark => ({ aspect, sentiment: 'negative', text, problem, ...extra });

export const POSITIVE_REMARKS: readonly Remark[] = [
  positive('compassion', '{staff} was [incredibly compassionate] from the very first phone call.', { staff: 'director' }),
  positive('compassion', '{staff} [treated us like family] from start to finish.', { staff: 'director' }),
  positive('compassion', 'Everyone there [showed genuine kindness] during the worst week of our lives.'),
  positive('compassion', '{staff} [sat with us and listened] while we talked about my {relation}.', { staff: 'director' }),
  positive('compassion', 'We never felt rushed, and [their compassion was obvious] in every conversation.'),
  positive('communication', '{staff} [kept us informed at every step] and answered every question.', { staff: 'director' }),
  positive('communication', '[Every call was returned within the hour], even late at night.'),
  positive('communication', '{staff} [explained everything clearly] so we never felt lost.', { staff: 'director' }),
  positive('communication', 'Most of us live out of state, and [the email updates were so helpful].'),
  positive('professionalism', 'The whole team was [professional and respectful] throughout.'),
  positive('professionalism', '{staff} [handled everything with quiet professionalism].', { staff: 'director' }),
  positive('professionalism', '[The staff were calm and organized] on the day itself.'),
  positive('pricing', 'The pricing was [fair and fully transparent], with no surprises on the final bill.'),
  positive('pricing', '{staff} [never pushed us toward anything expensive].', { staff: 'director' }),
  positive('pricing', '[They gave us an itemized price list] up front and stuck to it.'),
  positive('pricing', 'Honestly [the cost was lower than we feared] for everything they did.'),
  positive('arrangements', '{staff} [guided us through the arrangements] one decision at a time.', { staff: 'director' }),
  positive('arrangements', '[The arrangement meeting was unhurried] and we left with a clear plan.'),
  positive('arrangements', '{staff} [helped us personalize the ceremony] with photos and music.', { staff: 'director' }),
  positive('arrangements', 'My {relation} had done pre-planning with {staff} years ago, and [having it all arranged] made everything easier.', { staff: 'counsellor', service: 'pre-planning' }),
  positive('arrangements', 'We also started pre-planning with {staff} afterwards, and [the process was simple and gentle].', { staff: 'counsellor', service: 'pre-planning' }),
  positive('attention_to_detail', '[Every small detail was remembered], down to the flowers my {relation} loved.'),
  positive('attention_to_detail', '{staff} [caught a mistake in the obituary] before it went to print.', { staff: 'director' }),
  positive('attention_to_detail', '[The printed folders were beautiful] and without a single error.'),
  positive('presentation', '{staff} [did a beautiful job] and my {relation} looked peaceful.', { staff: 'embalmer', only: VIEWING }),
  positive('presentation', '{staff} [took such care with the hair and makeup] that we could finally say goodbye.', { staff: 'embalmer', only: VIEWING }),
  positive('presentation', '[The viewing room was arranged beautifully] with the photos we brought.', { only: VIEWING }),
  positive('timeliness', '{staff} [arrived within an hour] of our call, in the middle of the night.', { staff: 'director' }),
  positive('timeliness', '[Everything started right on time] and ran smoothly.', { only: CEREMONY }),
  positive('timeliness', '[The ashes were returned quickly], sooner than we were told.', { only: CREMATION }),
  positive('timeliness', '{staff} [came out to our home the same day], all the way to {area}.', { staff: 'director' }),
  positive('facility', '[The chapel is peaceful and spotless] and parking was easy.'),
  positive('facility', '[The building is warm and welcoming], not at all gloomy.'),
  positive('facility', '[The reception room was perfect] for our family gathering afterwards.'),
  positive('paperwork', '{staff} [took care of all the paperwork], including the death certificates.', { staff: 'director' }),
  positive('paperwork', '[The death certificates arrived quickly], which helped with the bank and insurance.'),
  positive('paperwork', '[They handled the veterans benefits forms] for us without being asked.'),
  positive('aftercare', '[They checked in on us weeks later], which meant a great deal.'),
  positive('aftercare', '{staff} [sent us grief support resources] in the weeks that followed.', { staff: 'counsellor' }),
  positive('aftercare', '[The annual remembrance evening was a lovely touch].'),
];

export const NEUTRAL_REMARKS: readonly Remark[] = [
  neutral('pricing', '[Prices were about what we expected] for the area.'),
  neutral('facility', '[The building is a little dated] but clean.'),
  neutral('paperwork', '[The paperwork took a bit longer than we hoped].'),
  neutral('timeliness', '[Things moved at a reasonable pace].'),
  neutral('communication', '[Most updates came by email] rather than by phone.'),
  neutral('arrangements', '[The arrangement meeting was fairly standard].'),
  neutral('professionalism', '[The staff were polite] if a bit formal.'),
  neutral('presentation', '[The viewing was fine], nothing more.', { only: VIEWING }),
];

export const NEGATIVE_REMARKS: readonly Remark[] = [
  negative('pricing', 'unexpected-fees', '[The final bill was much higher than the quote] we were given.'),
  negative('pricing', 'unexpected-fees', '[We were charged for items we never asked for].'),
  negative('pricing', 'pushy-upselling', '[It felt like we were being upsold] at a time when we were grieving.'),
  negative('pricing', 'pushy-upselling', '{staff} [kept pushing the more expensive caskets].', { staff: 'director', only: CASKET }),
  negative('paperwork', 'certificate-delays', '[The death certificates took over five weeks], which held up everything with the bank.'),
  negative('paperwork', 'certificate-delays', '[We are still waiting on certified copies] of the death certificate.'),
  negative('paperwork', 'document-errors', '[The name was misspelled on the death certificate] and it took weeks to fix.'),
  negative('timeliness', 'late-start', '[The ceremony started forty minutes late] and nobody explained why.', { only: CEREMONY }),
  negative('timeliness', 'ashes-delay', '[It took three weeks to get the ashes back].', { only: CREMATION }),
  negative('timeliness', 'late-start', '[The hearse arrived late] to the cemetery.', { only: CEMETERY }),
  negative('communication', 'unreturned-calls', '[Nobody returned our calls] for two days.'),
  negative('communication', 'unreturned-calls', '{staff} [never called back when promised].', { staff: 'director' }),
  negative('communication', 'conflicting-information', '[We got conflicting information] from different people on the team.'),
  negative('professionalism', 'dismissive-staff', '[One staff member was dismissive] when we asked questions.'),
  negative('compassion', 'dismissive-staff', '[It felt like just another transaction] to them.'),
  negative('arrangements', 'rushed-arrangements', '[The arrangement meeting felt rushed] and we forgot to ask important things.'),
  negative('attention_to_detail', 'document-errors', '[The obituary had several errors] even after we sent corrections.'),
  negative('attention_to_detail', 'document-errors', '[The wrong photo was printed] on the folders.'),
  negative('presentation', 'presentation-issues', '[My {relation} did not look like themselves] at the viewing.', { only: VIEWING }),
  negative('facility', 'limited-parking-and-space', '[Parking was a nightmare] for the visitation.'),
  negative('facility', 'limited-parking-and-space', '[The chapel was too small] for the number of guests.'),
  negative('aftercare', 'unreturned-calls', '[Nobody followed up] afterwards, not even about the ashes.', { only: CREMATION }),
];

/** First sentences: who died, which service, sometimes where the family lives. */
export const OPENINGS: readonly string[] = [
  'My {relation} passed away {when} and we used Willow Creek for {service}.',
  'We arranged {service} for our {relation} through Willow Creek.',
  'Willow Creek handled {service} for my {relation}.',
  'Our family in {area} turned to Willow Creek when my {relation} died {when}.',
  'We live in {area} and needed {service} for my {relation} on short notice.',
  'We came to Willow Creek to arrange {service} for my {relation}.',
  'After my {relation} died {when}, we went with Willow Creek for {service}.',
  'My {relation} lived in {area} for fifty years, and we chose {service} through Willow Creek.',
];

export const CLOSINGS: Readonly<Record<'praise' | 'mixed' | 'complaint', readonly string[]>> = {
  praise: [
    'I would recommend Willow Creek to anyone in {area}.',
    'Thank you for everything.',
    'We are so grateful.',
    'Highly recommend.',
    'I cannot thank them enough.',
    'If you are in {area} or nearby, call them.',
  ],
  mixed: ['Overall an okay experience.', 'Not perfect, but they got us through it.', 'Mixed feelings overall.'],
  complaint: ['I would not use them again.', 'Very disappointed.', 'Families deserve better than this.', 'Look elsewhere if you live near {area}.'],
};

export const RELATIONS: readonly string[] = ['mother', 'father', 'husband', 'wife', 'grandmother', 'grandfather', 'brother', 'sister', 'aunt', 'uncle', 'partner', 'mom', 'dad'];
export const WHEN: readonly string[] = ['last spring', 'last winter', 'in March', 'in the autumn', 'after a long illness', 'unexpectedly', 'in hospice care', 'very suddenly'];

/** Owner replies; {first} is the reviewer's first name. */
export const REPLIES: Readonly<Record<'thanks' | 'apology', readonly string[]>> = {
  thanks: [
    'Thank you for your kind words, {first}. It was an honour to serve your family.',
    '{first}, thank you for trusting us at such a difficult time. We are here whenever you need us.',
    'We are so grateful you took the time to write this. Our whole team sends their love.',
    'Thank you, {first}. Caring for your family meant a great deal to all of us.',
  ],
  apology: [
    '{first}, we are sorry to hear this. Please call me directly at (541) 555-0142 so we can make it right. Margaret Ellison',
    'We are sorry we fell short. We have shared your comments with our team and would welcome the chance to talk.',
    'Thank you for telling us, {first}. We have reviewed what happened and changed how we handle this.',
  ],
};
