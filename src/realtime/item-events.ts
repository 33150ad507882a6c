/** Pure: the event types the platform defines for list item hooks. */
export const ITEM_EVENT = { created: 1, modified: 2, createdOrModified: 3, deleted: 4 } as const;
