/**
 * A clock some minutes ahead of the real one, for a pull that runs "later": long enough for the
 * field metadata a list keeps (`lists[].fieldsMaxAgeMinutes`, 15 by default) to be asked again.
 */
export const PAST_FIELDS_AGE_MINUTES = 16;

export function minutesLater(minutes: number = PAST_FIELDS_AGE_MINUTES): () => Date {
  return () => new Date(Date.now() + minutes * 60_000);
}
