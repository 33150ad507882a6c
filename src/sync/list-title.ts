/**
 * The list's title on the platform, for the mirror table's comment. Asked
 * for next to the field metadata, and only while the registry has none; a
 * failure here never fails a run (the title already in the registry is kept).
 *
 * A pull of many lists asks the titles once per application (`ListTitles`:
 * the application's list listing, one request for all its lists), and a list
 * that listing does not name (discovery is optional on the platform) asks its
 * own details. (many-lists: what a first pull of many small lists costs.)
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

/** Titles of many lists: one listing per application, asked on the first list that needs it; a list's own details otherwise. */
export class ListTitles {
  private readonly byApp = new Map<string, Promise<Map<string, string> | undefined>>();

  constructor(
    private readonly client: PlatformClient,
    private readonly logger: Logger,
  ) {}

  async titleOf(list: ListConfig, signal?: AbortSignal): Promise<string | undefined> {
    let listing = this.byApp.get(list.appID);
    if (!listing) {
      listing = this.client.listApplicationLists(list.appID, signal).then(
        // A listing entry without a title names the list by its ID: not a title.
        (refs) => new Map(refs.filter((r) => r.title.trim() !== '' && r.title !== r.listID).map((r) => [r.listID, r.title.trim()])),
        (err: unknown) => {
          this.logger.debug(
            { app: list.appID, err: coerceError(err).message },
            "could not list the application's lists; asking each list's title",
          );
          return undefined;
        },
      );
      this.byApp.set(list.appID, listing);
    }
    return (await listing)?.get(list.listID) ?? listTitle(this.client, list, this.logger, signal);
  }
}
