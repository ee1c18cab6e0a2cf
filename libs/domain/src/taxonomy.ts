/**
 * The funeral-home aspect taxonomy is fixed and versioned: a publisher cannot invent aspects,
 * and `INSIGHTS_VERSION` changes whenever this list does.
 */
export const INSIGHTS_VERSION = 1;

export const ASPECTS = [
  { id: 'compassion', label: 'Compassion' },
  { id: 'communication', label: 'Communication' },
  { id: 'professionalism', label: 'Professionalism' },
  { id: 'pricing', label: 'Pricing' },
  { id: 'arrangements', label: 'Arrangements' },
  { id: 'attention_to_detail', label: 'Attention to detail' },
  { id: 'presentation', label: 'Presentation' },
  { id: 'timeliness', label: 'Timeliness' },
  { id: 'facility', label: 'Facility' },
  { id: 'paperwork', label: 'Paperwork' },
  { id: 'aftercare', label: 'Aftercare' },
] as const;

export type AspectId = (typeof ASPECTS)[number]['id'];
export const ASPECT_IDS = ASPECTS.map((aspect) => aspect.id) as [AspectId, ...AspectId[]];
