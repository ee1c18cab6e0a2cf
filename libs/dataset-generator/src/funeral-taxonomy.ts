import type { AspectId, Taxonomy } from '@reviews/domain';
import { INSIGHTS_VERSION } from '@reviews/domain/taxonomy';

/** Funeral-home topics and problems: the per-vertical half of the taxonomy (aspects are fixed by the domain). */

export const TOPICS = [
  { id: 'family-support', label: 'Support for the family' },
  { id: 'grief-aftercare', label: 'Grief support and aftercare' },
  { id: 'cost-and-value', label: 'Cost and value' },
  { id: 'documents-and-certificates', label: 'Death certificates and documents' },
  { id: 'chapel-and-facilities', label: 'Chapel and facilities' },
  { id: 'viewing-and-presentation', label: 'Viewing and presentation' },
  { id: 'planning-and-arrangements', label: 'Planning and arrangements' },
  { id: 'responsiveness', label: 'Responsiveness' },
  { id: 'ceremony-experience', label: 'Ceremony experience' },
  { id: 'cremation', label: 'Cremation' },
  { id: 'burial-and-cemetery', label: 'Burial and cemetery' },
  { id: 'out-of-area-transfers', label: 'Out-of-area transfers' },
] as const;
export type TopicId = (typeof TOPICS)[number]['id'];

export const PROBLEMS = [
  { id: 'unexpected-fees', label: 'Unexpected fees on the final bill' },
  { id: 'pushy-upselling', label: 'Pushy upselling' },
  { id: 'certificate-delays', label: 'Death certificate delays' },
  { id: 'document-errors', label: 'Errors in documents or printed materials' },
  { id: 'unreturned-calls', label: 'Unreturned calls' },
  { id: 'conflicting-information', label: 'Conflicting information' },
  { id: 'late-start', label: 'Late start or late arrival' },
  { id: 'ashes-delay', label: 'Delay returning ashes' },
  { id: 'rushed-arrangements', label: 'Rushed arrangement meeting' },
  { id: 'dismissive-staff', label: 'Dismissive staff' },
  { id: 'presentation-issues', label: 'Appearance at the viewing' },
  { id: 'limited-parking-and-space', label: 'Limited parking and space' },
] as const;
export type ProblemId = (typeof PROBLEMS)[number]['id'];

/** Which topic a remark about an aspect belongs to. */
export const ASPECT_TOPIC: Record<AspectId, TopicId> = {
  compassion: 'family-support',
  communication: 'responsiveness',
  professionalism: 'ceremony-experience',
  pricing: 'cost-and-value',
  arrangements: 'planning-and-arrangements',
  attention_to_detail: 'ceremony-experience',
  presentation: 'viewing-and-presentation',
  timeliness: 'responsiveness',
  facility: 'chapel-and-facilities',
  paperwork: 'documents-and-certificates',
  aftercare: 'grief-aftercare',
};

/** Which topic choosing a service belongs to (by service id). */
export const SERVICE_TOPIC: Readonly<Record<string, TopicId>> = {
  'traditional-funeral': 'ceremony-experience',
  'direct-cremation': 'cremation',
  'cremation-and-memorial': 'cremation',
  'memorial-service': 'ceremony-experience',
  burial: 'burial-and-cemetery',
  'green-burial': 'burial-and-cemetery',
  'embalming-and-viewing': 'viewing-and-presentation',
  repatriation: 'out-of-area-transfers',
  'pre-planning': 'planning-and-arrangements',
};

export const FUNERAL_TAXONOMY: Taxonomy = {
  version: INSIGHTS_VERSION,
  topics: TOPICS.map(({ id, label }) => ({ id, label })),
  problems: PROBLEMS.map(({ id, label }) => ({ id, label })),
};
