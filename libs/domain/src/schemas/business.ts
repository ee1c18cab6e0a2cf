import { z } from 'zod';
import { HttpUrl, Slug, TimeOfDay, VisibleText } from './primitives.js';

export const Address = z.strictObject({
  street_address: z.string().min(1),
  locality: z.string().min(1),
  region: z.string().min(1),
  postal_code: z.string().min(1),
  country: z.string().length(2).meta({ description: 'ISO 3166-1 alpha-2 country code.' }),
});

export const OpeningHours = z.strictObject({
  days: z.string().min(1).meta({ examples: ['Mo-Fr'] }),
  opens: TimeOfDay,
  closes: TimeOfDay,
  note: z.string().nullable(),
});

export const ServiceRef = z.strictObject({
  id: Slug.meta({ examples: ['direct-cremation'] }),
  label: z.string().min(1).meta({ examples: ['Direct cremation'] }),
});

export const Technician = z
  .strictObject({
    name: z.string().min(1),
    role: z.string().min(1),
    aliases: z.array(z.string().min(1)),
  })
  .meta({ description: 'A named member of staff (funeral director, embalmer, counsellor...). The interface keeps the name "technician".' });

export const Profile = z.strictObject({ source: z.string().min(1), url: HttpUrl });

/** Longer than any business's name; each feed repeats it in every entry with a reply (4.4 MB of name made 48 MB feeds). */
const MAX_BUSINESS_NAME_LENGTH = 200;

export const Business = z.strictObject({
  id: Slug,
  name: VisibleText.max(MAX_BUSINESS_NAME_LENGTH),
  description: z.string(),
  url: HttpUrl,
  phone: z.string().min(1),
  address: Address,
  hours: z.array(OpeningHours),
  service_areas: z.array(z.string().min(1)),
  services: z.array(ServiceRef).min(1),
  technicians: z.array(Technician),
  profiles: z.array(Profile),
});
export type Business = z.infer<typeof Business>;
export type Technician = z.infer<typeof Technician>;
export type ServiceRef = z.infer<typeof ServiceRef>;
