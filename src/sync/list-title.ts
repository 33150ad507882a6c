/**
 * The list's title on the platform, for the mirror table's comment. Asked
 * for next to the field metadata; a failure here never fails a run (the
 * title already in the registry is kept).
 */
import type { ListConfig } from '../config.js';
import type { Logger } from '../logger.js';
import type { PlatformClient } from '../platform/client.js';
import { coerceError } from '../errors.js';

export async function listTitle(
  client: PlatformClient,
  list: ListConfig,
  logger: Logger,
  signal?: AbortSignal,
): Promise<string | undefined> {
  try {
    const details = await client.getList(list.appID, list.listID, signal);
    return typeof details?.Title === 'string' && details.Title.trim() !== '' ? details.Title.trim() : undefined;
  } catch (err) {
    logger.debug(
      { list: list.name, err: coerceError(err).message },
      'could not read the list title; the table comment keeps the one it has',
    );
    return undefined;
  }
}
