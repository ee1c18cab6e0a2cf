import type { Business, ServiceRef, Technician } from '@reviews/domain';

/**
 * The fictional funeral home every generated dataset describes. Staff, services and towns carry the
 * extra facts the review writer needs (how a service reads inside a sentence, which staff do what);
 * `FUNERAL_HOME` is the published `Business` built from them.
 */

export const HOME_TOWN = 'Harlow Springs';
export const HOME_PHONE = '+1 541-555-0142';

export type StaffDuty = 'director' | 'embalmer' | 'counsellor';

export interface StaffMember extends Technician {
  duty: StaffDuty;
  /** How often families deal with this person, relative to colleagues with the same duty. */
  weight: number;
}

export const STAFF: readonly StaffMember[] = [
  { name: 'Margaret Ellison', role: 'Funeral Director & Owner', aliases: ['Margaret', 'Maggie', 'Mrs. Ellison'], duty: 'director', weight: 4 },
  { name: 'Thomas Okafor', role: 'Funeral Director', aliases: ['Thomas', 'Tom', 'Mr. Okafor'], duty: 'director', weight: 3 },
  { name: 'Daniel Reyes', role: 'Funeral Director', aliases: ['Daniel', 'Dan', 'Mr. Reyes'], duty: 'director', weight: 2 },
  { name: 'Priya Natarajan', role: 'Funeral Director', aliases: ['Priya', 'Ms. Natarajan'], duty: 'director', weight: 2 },
  { name: 'Walter Brandt', role: 'Embalmer', aliases: ['Walter', 'Walt', 'Mr. Brandt'], duty: 'embalmer', weight: 1 },
  { name: 'Helen Whitfield', role: 'Arrangement Counsellor', aliases: ['Helen', 'Mrs. Whitfield'], duty: 'counsellor', weight: 1 },
];

export interface FuneralService extends ServiceRef {
  /** The service as it reads in a sentence; always contains the label, lower-cased. */
  mention: string;
  /** Arranged when someone has died (as opposed to planned ahead). */
  atNeed: boolean;
  /** How often families choose it. */
  weight: number;
}

export const SERVICES: readonly FuneralService[] = [
  { id: 'traditional-funeral', label: 'Traditional funeral', mention: 'a traditional funeral', atNeed: true, weight: 5 },
  { id: 'direct-cremation', label: 'Direct cremation', mention: 'a direct cremation', atNeed: true, weight: 5 },
  { id: 'cremation-and-memorial', label: 'Cremation and memorial', mention: 'a cremation and memorial', atNeed: true, weight: 3 },
  { id: 'memorial-service', label: 'Memorial service', mention: 'a memorial service', atNeed: true, weight: 3 },
  { id: 'burial', label: 'Burial', mention: 'a burial', atNeed: true, weight: 3 },
  { id: 'green-burial', label: 'Green burial', mention: 'a green burial', atNeed: true, weight: 1 },
  { id: 'embalming-and-viewing', label: 'Embalming and viewing', mention: 'an embalming and viewing', atNeed: true, weight: 2 },
  { id: 'repatriation', label: 'Repatriation', mention: 'the repatriation', atNeed: true, weight: 1 },
  { id: 'pre-planning', label: 'Pre-planning', mention: 'pre-planning', atNeed: false, weight: 0 },
];

export const SERVICE_AREAS: readonly string[] = [HOME_TOWN, 'Eastbrook', 'Marden', 'Stoneleigh', 'Fenwick Falls', 'Cedar Hollow', 'North Alder', 'Pine Ridge'];

export const FUNERAL_HOME: Business = {
  id: 'willow-creek-funeral-home',
  name: 'Willow Creek Funeral Home & Crematory',
  description:
    'Family-owned funeral home and crematory serving Harlow Springs and the surrounding valley since 1987: traditional funerals, cremation, memorial services, green burial, repatriation and pre-planning, with funeral directors on call day and night.',
  url: 'https://willowcreekfuneral.example',
  phone: HOME_PHONE,
  address: { street_address: '1420 Elmwood Avenue', locality: HOME_TOWN, region: 'OR', postal_code: '97321', country: 'US' },
  hours: [
    { days: 'Mo-Fr', opens: '08:00', closes: '18:00', note: null },
    { days: 'Sa', opens: '09:00', closes: '14:00', note: null },
    { days: 'Mo-Su', opens: '00:00', closes: '23:59', note: 'Funeral directors answer first calls day and night.' },
  ],
  service_areas: [...SERVICE_AREAS],
  services: SERVICES.map(({ id, label }) => ({ id, label })),
  technicians: STAFF.map(({ name, role, aliases }) => ({ name, role, aliases: [...aliases] })),
  profiles: [
    { source: 'google', url: 'https://google.example/maps/place/willow-creek-funeral-home' },
    { source: 'facebook', url: 'https://facebook.example/willowcreekfuneral' },
    { source: 'yelp', url: 'https://yelp.example/biz/willow-creek-funeral-home-harlow-springs' },
  ],
};
